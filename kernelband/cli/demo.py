"""`kernelband demo`: the README's main job (replay the default data, write the report)."""

from __future__ import annotations

import sys

import click


@click.command()
@click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the trace (if generated), replay results, tables and report.")
@click.option("--trace", default=None, type=click.Path(file_okay=False, exists=True),
              help="Trace to use instead of the shipped default.")
@click.option("--seeds", default=100, show_default=True, type=click.IntRange(1),
              help="Replay seeds per (policy, environment, task).")
@click.option("--progress/--no-progress", default=True, show_default=True)
def demo(out: str, trace: str | None, seeds: int, progress: bool) -> None:
    """Replay the paper's ablation grid on the default data and write OUT/report.html.

    The default data is the exploration trace shipped under traces/; until one is shipped, a
    logging-policy trace of the synthetic environment is generated on the fly. Replays run on
    the tape and fitted environments (preset paper-ablation, T = 20 and 40).

    \b
    Example:
        kernelband demo --out demo-out
        kernelband demo --trace traces/my-run --seeds 200 --out demo-mine
    """
    from analysis.demo import run_demo
    from kbsim.trace.reader import TraceError

    try:
        result = run_demo(out, trace=trace, seeds=seeds,
                          say=lambda m: click.echo(m, err=True), progress=progress)
    except (TraceError, ValueError) as exc:
        click.echo(f"kernelband demo: {exc}", err=True)
        sys.exit(1)
    timing = ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items())
    click.echo(f"report: {result.report}\ntables and plots: {result.analysis}/\n"
               f"replay results: {result.replay}/\n({timing})")
