"""`kernelband analyze` and `kernelband report`: thin wrappers over analysis.pipeline/report.

`analyze` is both a command (``kernelband analyze [INPUT] --out DIR``) and a group of named
analyses that need more than one input (``kernelband analyze sim2real ...``); each subcommand
lives in its own module, imported only when invoked.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

#: subcommand name -> (module, attribute)
_SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "sim2real": ("kernelband.cli.analyze_sim2real", "sim2real"),
    "head-to-head": ("kernelband.cli.analyze_head_to_head", "head_to_head"),
}


class _InputOrSubcommand(click.Group):
    """A group that, unless its first argument names a subcommand, runs as a plain command.

    ``analyze INPUT --out DIR`` parses as the command it always was (options after INPUT
    included); ``analyze sim2real ...`` hands everything after the name to that subcommand.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _SUBCOMMANDS:
            return None
        module, attr = _SUBCOMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attr)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in _SUBCOMMANDS:
            ctx.meta["kernelband.analyze.sub"] = (args[0], list(args[1:]))
            return []
        ctx.allow_interspersed_args, ctx.allow_extra_args = True, False
        return click.Command.parse_args(self, ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        sub = ctx.meta.pop("kernelband.analyze.sub", None)
        if sub is None:
            return click.Command.invoke(self, ctx)
        name, rest = sub
        command = self.get_command(ctx, name)
        assert command is not None
        # no parent context: its usage would insert [INPUT] before the subcommand's name
        with command.make_context(f"{ctx.command_path} {name}", rest,
                                  help_option_names=ctx.help_option_names) as sub_ctx:
            return command.invoke(sub_ctx)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return click.Command.collect_usage_pieces(self, ctx)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


_seed = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the bootstrap and k-means random streams.")
_boot = click.option("--boot", "n_boot", type=click.IntRange(min=10), default=1000,
                     show_default=True, help="Bootstrap resamples for confidence intervals.")


@click.group(cls=_InputOrSubcommand, invoke_without_command=True)
@click.argument("input_path", metavar="[INPUT]", required=False)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for the CSV and Markdown tables and PNG plots.")
@_seed
@_boot
@click.option("--experiment", type=click.Choice(["cluster-vs-pool"]), default=None,
              help="Run a built-in experiment on the synthetic environment instead of (or as "
                   "well as) analysing INPUT.")
def analyze(input_path: str | None, out_dir: str, seed: int, n_boot: int,
            experiment: str | None) -> None:
    """Write CSV/Markdown tables and PNG plots for a trace or replay results.

    INPUT is a trace dataset (manifest.json + steps/) or a directory of replay results; the
    kind is detected. Results give regret curves, slope fits and the v1 bound; traces give
    paper metrics, Lipschitz, covering and cluster-validity estimates. The sim2real
    subcommand compares replay on an exploration trace with a real policy run
    (kernelband analyze sim2real --help).

    \b
    Example:
        kernelband analyze out/replay --out out/analysis
        kernelband analyze traces/explore-h100 --out out/trace-analysis
        kernelband analyze --experiment cluster-vs-pool --out out/pool
        kernelband analyze sim2real --explore traces/explore-h100 \\
            --policy-trace traces/policy-v2-h100 --out out/sim2real
    """
    from analysis.inputs import InputError

    if input_path is None and experiment is None:
        _fail("give an INPUT directory or --experiment")
    try:
        if input_path is not None:
            from analysis.pipeline import run_analyze

            analysis = run_analyze(input_path, out_dir, seed=seed, n_boot=n_boot)
            click.echo(f"wrote {len(analysis.tables)} tables and {len(analysis.figures)} plots "
                       f"to {out_dir}")
            for note in analysis.notes:
                click.echo(f"note: {note}")
        if experiment == "cluster-vs-pool":
            from analysis.experiments import run_pool_experiment

            result = run_pool_experiment(Path(out_dir), seed=seed, n_boot=n_boot)
            for row in result.tables["pool_beta"].itertuples():
                click.echo(f"{row.policy}: beta = {row.beta:.3f} "
                           f"[{row.ci_low:.3f}, {row.ci_high:.3f}]")
    except (InputError, ValueError) as err:
        _fail(str(err))
    except ImportError as err:
        _fail(f"the replay engine is not available ({err})")


@click.command()
@click.argument("input_path", metavar="[INPUT]", required=False)
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write (one self-contained page).")
@_seed
@_boot
@click.option("--experiment", type=click.Choice(["cluster-vs-pool"]), default=None,
              help="Also run a built-in experiment on the synthetic environment and report it.")
def report(input_path: str | None, out_path: str, seed: int, n_boot: int,
           experiment: str | None) -> None:
    """Write one self-contained HTML report for a trace or replay results.

    Plots are embedded, so the file can be mailed or opened offline; each section says how to
    read it, and the run's hardware and parameters come first.

    \b
    Example:
        kernelband report out/replay --out report.html
        kernelband report traces/explore-h100 --out trace-report.html
        kernelband report --experiment cluster-vs-pool --out pool-report.html
    """
    from analysis.inputs import InputError
    from analysis.report import run_report

    if input_path is None and experiment is None:
        _fail("give an INPUT directory or --experiment")
    try:
        extra = None
        if experiment == "cluster-vs-pool":
            from analysis.experiments import run_pool_experiment

            extra = run_pool_experiment(None, seed=seed, n_boot=n_boot)
        path = run_report(input_path, out_path, seed=seed, n_boot=n_boot, extra=extra)
    except (InputError, ValueError) as err:
        _fail(str(err))
        return
    except ImportError as err:
        _fail(f"the replay engine is not available ({err})")
        return
    click.echo(f"wrote {path}")
