"""`kernelband replay` (filled in by the kbsim issue)."""

from __future__ import annotations

import click

from kernelband.cli._stub import not_implemented


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def replay() -> None:
    """Replay bandit policies against a trace (tape, fitted) or a synthetic instance.

    \b
    Example:
        kernelband replay --trace traces/explore --policy kernelband-v2 --policy greedy --seeds 100 --steps 40 --env tape --out out/
    """
    not_implemented("replay")
