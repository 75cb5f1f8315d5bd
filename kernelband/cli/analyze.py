"""`kernelband analyze` and `kernelband report` (filled in by the analysis issue)."""

from __future__ import annotations

import click

from kernelband.cli._stub import not_implemented


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def analyze() -> None:
    """Write CSV/Markdown tables and PNG plots for a trace or replay results.

    \b
    Example:
        kernelband analyze out/replay --out out/analysis
    """
    not_implemented("analyze")


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def report() -> None:
    """Write one self-contained HTML report for a trace or replay results.

    \b
    Example:
        kernelband report out/replay --out report.html
    """
    not_implemented("report")
