"""Every command and subcommand has real help text with an example (sqlite-utils habit)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kernelband.cli import _COMMANDS, main


def _all_commands() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        paths.append((name,))
        if isinstance(cmd, click.Group):
            for sub in cmd.list_commands(ctx):
                paths.append((name, sub))
    return paths


def test_top_level_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in _COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("path", _all_commands(), ids=lambda p: " ".join(p))
def test_every_command_has_help_with_example(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output, f"`kernelband {' '.join(path)} --help` shows no example"
