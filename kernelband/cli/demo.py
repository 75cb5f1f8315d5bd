"""`kernelband demo`: the README's main job (replay the shipped default data, write the report)."""

from __future__ import annotations

import click

from kernelband.cli._stub import not_implemented


@click.command()
@click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False))
def demo(out: str) -> None:
    """Replay the shipped default data with the paper's ablation grid and write a report.

    \b
    Example:
        kernelband demo --out demo-out
    """
    not_implemented("demo")
