"""`kernelband tasks ...` and `kernelband eval` (filled in by the kernel-lab issue)."""

from __future__ import annotations

import click

from kernelband.cli._stub import not_implemented


@click.group()
def tasks() -> None:
    """List and check kernel optimization tasks.

    \b
    Example:
        kernelband tasks list
    """


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def eval_candidate() -> None:
    """Evaluate one candidate kernel file against a task and print the full record.

    \b
    Example:
        kernelband eval my_softmax.py --task softmax
    """
    not_implemented("eval")
