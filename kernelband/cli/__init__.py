"""The `kernelband` command. Thin: every subcommand calls a library function.

Subcommands live in their own modules and are imported only when invoked, so `kernelband --help`
stays fast and never imports torch, triton or Ray.
"""

from __future__ import annotations

import importlib

import click

#: command name -> (module, attribute, one-line help shown by `kernelband --help`)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "demo": ("kernelband.cli.demo", "demo", "Replay the shipped default data and write a report."),
    "live": ("kernelband.cli.live", "live", "Run the live optimization loop on a GPU."),
    "replay": ("kernelband.cli.replay", "replay", "Replay bandit policies against traces."),
    "analyze": ("kernelband.cli.analyze", "analyze", "Tables and plots from traces or results."),
    "report": ("kernelband.cli.analyze", "report", "One self-contained HTML report."),
    "traces": ("kernelband.cli.traces", "traces", "Inspect, validate and merge trace datasets."),
    "tasks": ("kernelband.cli.tasks", "tasks", "List and check kernel optimization tasks."),
    "eval": ("kernelband.cli.tasks", "eval_candidate", "Evaluate one candidate kernel file."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        module, attr, _ = _COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attr)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except OSError as exc:  # disk full, permission denied: one sentence, exit 1
            where = f" ({exc.filename})" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, _COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kernelband")
def main() -> None:
    """kernelband: LLM-driven GPU kernel optimization steered by multi-armed bandits.

    Live mode runs the loop on a GPU and records every attempt to a Parquet trace; replay runs
    the same numba-compiled policies against traces; analyze and report turn either into tables,
    plots and an HTML page.

    \b
    Example:
        kernelband traces info traces/explore-h100
        kernelband replay --synthetic default --policy kernelband-v2 --seeds 100 --steps 40 --out out/
    """
