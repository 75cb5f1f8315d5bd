"""`kernelband traces ...` (filled in by the foundation issue's trace store)."""

from __future__ import annotations

import click


@click.group()
def traces() -> None:
    """Inspect, validate and merge trace datasets.

    \b
    Example:
        kernelband traces validate traces/explore-h100
    """
