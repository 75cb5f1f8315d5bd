"""`kernelband analyze sim2real`: a thin wrapper over analysis.sim2real."""

from __future__ import annotations

import sys

import click


@click.command()
@click.option("--explore", "explore_dir", required=True,
              type=click.Path(file_okay=False, exists=True),
              help="Exploration trace (a logging policy such as explore) to replay on.")
@click.option("--policy-trace", "policy_dir", required=True,
              type=click.Path(file_okay=False, exists=True),
              help="Real policy run to compare with; its manifest's policy spec is replayed.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for sim2real.csv/.json/.md, the per-step curves and the plot.")
@click.option("--seeds", type=click.IntRange(min=1), default=100, show_default=True,
              help="Replay seeds per (environment, task).")
@click.option("--env", "envs", type=click.Choice(["tape", "fitted"]), multiple=True,
              help="Replay environment(s); repeat for both [default: tape and fitted].")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Horizon T [default: the policy trace's longest task].")
@click.option("--reveal", default=None,
              help="When the replayed v2 sees Nsight Compute signatures: delays (the policy "
                   "run's recorded ones; default for a --profile reps run), lag:N or at-once "
                   "(default otherwise).")
def sim2real(explore_dir: str, policy_dir: str, out_dir: str, seeds: int,
             envs: tuple[str, ...], steps: int | None, reveal: str | None) -> None:
    """Compare replay's predicted best-speedup curve with a real policy run, per task.

    Replays the policy trace's policy (manifest policy.spec, e.g. kernelband-v2) on the
    exploration trace for N seeds over T steps and writes, per task and environment, the
    predicted median and 10-90 % band against the real curve: the final-step ratio
    predicted / real, the mean absolute log gap over steps, the fraction of steps where the
    real curve lies in the band, and their geometric mean over tasks. Tasks found in only one
    trace are listed. sim2real.md is a table ready for docs/benchmarks.md.

    \b
    Example:
        kernelband analyze sim2real --explore traces/explore-h100 \\
            --policy-trace traces/policy-v2-h100 --out out/sim2real
        kernelband analyze sim2real --explore traces/explore-h100 \\
            --policy-trace traces/policy-v2-h100 --env tape --seeds 20 --out out/s2r-tape
    """
    from analysis.sim2real import ENVS, run_sim2real, write_sim2real

    try:
        result = run_sim2real(explore_dir, policy_dir, seeds=seeds, envs=list(envs or ENVS),
                              steps=steps, reveal=reveal)
        write_sim2real(result, out_dir)
    except ValueError as err:  # the trace reader's TraceError is a ValueError too
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    summary = result.table[result.table["task_id"] == "geomean"]
    click.echo(f"replayed {result.policy} ({result.seeds} seeds, T = {result.steps}) on "
               f"{len(set(result.curves['task_id']))} task(s); wrote {out_dir}/sim2real.*")
    for row in summary.itertuples(index=False):
        click.echo(f"{row.env}: geomean predicted/real at the last step {row.final_ratio:.3f}, "
                   f"mean |log gap| {row.mean_abs_log_gap:.3f}, real in band "
                   f"{100 * row.in_band_frac:.0f} % of steps")
    for note in result.notes:
        click.echo(f"note: {note}")
