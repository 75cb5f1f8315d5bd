"""Placeholder body for subcommands a later issue fills in: exit 2, one line."""

from __future__ import annotations

import sys

import click


def not_implemented(name: str) -> None:
    click.echo(f"kernelband {name}: not implemented yet", err=True)
    sys.exit(2)
