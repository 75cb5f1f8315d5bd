"""`kernelband live`: the live loop (filled in by the live-runner issue)."""

from __future__ import annotations

import click

from kernelband.cli._stub import not_implemented


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def live() -> None:
    """Run the live loop: policy -> proposer -> evaluator -> profiler -> update -> trace row.

    \b
    Example:
        kernelband live --tasks builtin --policy kernelband-v2 --proposer mutate --steps 40 --out traces/run1
    """
    not_implemented("live")
