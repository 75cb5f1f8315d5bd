"""`kernelband demo`: the README's main job (replay the default data, write the report)."""

from __future__ import annotations

import sys

import click


@click.command()
@click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the trace (if generated), replay results, tables and report.")
@click.option("--trace", default=None, type=click.Path(file_okay=False, exists=True),
              help="Trace to use instead of the shipped default.")
@click.option("--policy-trace", default=None, type=click.Path(file_okay=False, exists=True),
              help="A live policy run to compare replay with (sim-to-real) [the shipped one, "
              "when the shipped exploration trace is used].")
@click.option("--seeds", default=100, show_default=True, type=click.IntRange(1),
              help="Replay seeds per (policy, environment, task).")
@click.option("--progress/--no-progress", default=True, show_default=True)
def demo(out: str, trace: str | None, policy_trace: str | None, seeds: int,
         progress: bool) -> None:
    """Replay the paper's ablation grid on the default data and write OUT/report.html.

    The default data are the datasets shipped under traces/ (recorded on an H200): the
    built-in tasks' exploration trace and TritonBench-G's (the paper's 50-operator subset);
    a logging-policy trace of the synthetic environment is generated on
    the fly if a checkout has none. Each is replayed on the tape and fitted environments
    (preset paper-ablation, T = 20 and 40), then each part of KernelBand v2 against full v2
    (preset components: masks, clustering, arm rule, parent rule; printed and right after the
    verdict in the report), with the sim-to-real check of each live policy run shipped beside
    it (KernelBand v2; greedy too for TritonBench-G), in one report; datasets after the first
    write their files to OUT/KEY/.

    \b
    Example:
        kernelband demo --out demo-out
        kernelband demo --trace traces/my-run --seeds 200 --out demo-mine
        kernelband demo --trace traces/my-explore --policy-trace traces/my-v2-run --out demo-mine
    """
    from analysis.demo import run_demo
    from kbsim.trace.reader import TraceError

    try:
        result = run_demo(out, trace=trace, policy_trace=policy_trace, seeds=seeds,
                          say=lambda m: click.echo(m, err=True), progress=progress)
    except (TraceError, ValueError) as exc:
        click.echo(f"kernelband demo: {exc}", err=True)
        sys.exit(1)
    if result.ranking:
        click.echo(result.ranking)
    if result.components:
        click.echo(f"\n{result.components}")
    timing = ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items())
    click.echo(f"report: {result.report}\ntables and plots: {result.analysis}/\n"
               f"replay results: {result.replay}/\n({timing})")
