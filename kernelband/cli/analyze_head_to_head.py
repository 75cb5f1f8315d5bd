"""`kernelband analyze head-to-head`: a thin wrapper over analysis.head_to_head."""

from __future__ import annotations

import sys

import click


@click.command("head-to-head")
@click.argument("a_trace", type=click.Path(file_okay=False, exists=True))
@click.argument("b_trace", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for head_to_head.csv/.md, the per-task table and the plot.")
@click.option("--boot", "n_boot", type=click.IntRange(min=10), default=2000, show_default=True,
              help="Paired bootstrap resamples over tasks.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the bootstrap's random stream.")
def head_to_head(a_trace: str, b_trace: str, out_dir: str, n_boot: int, seed: int) -> None:
    """Compare two live policy runs on their common tasks: Correct %, Fast@1 % and geomean
    best speedup for each, and A minus B (A / B for the geomean) with a 95 % paired bootstrap
    interval over tasks (the same tasks resampled for both).

    Each trace must hold one policy (several seeds of a task count as one task). The per-task
    table and a plot of each task's best speedup, A against B, are written beside the summary.

    \b
    Example:
        kernelband analyze head-to-head traces/tb-v2-h200 traces/tb-greedy-h200 --out out/h2h
    """
    from analysis.head_to_head import run_head_to_head, write_head_to_head

    try:
        result = run_head_to_head(a_trace, b_trace, n_boot=n_boot, seed=seed)
        write_head_to_head(result, out_dir)
    except ValueError as err:  # the trace reader's TraceError is a ValueError too
        click.echo(f"error: {err}", err=True)
        sys.exit(1)
    click.echo(f"{result.a} (A) against {result.b} (B) on {len(result.per_task)} common "
               f"task(s); wrote {out_dir}/head_to_head.*")
    for row in result.summary.itertuples(index=False):
        click.echo(f"{row.metric}: A {row.a:.3f}, B {row.b:.3f}; {row.reads} {row.difference:.3f} "
                   f"[{row.ci_low:.3f}, {row.ci_high:.3f}]")
    for side, names in (("A", result.only_a), ("B", result.only_b)):
        if names:
            click.echo(f"note: only in {side}: {', '.join(names)}")
