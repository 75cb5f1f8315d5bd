"""`kernelband traces info|validate|compact|merge|merge-shards|head|profile`: thin wrappers over
kbsim.trace (profile: over live.profiler.backfill).

Every failure on bad input is one line on stderr and exit status 1, never a traceback (set
KERNELBAND_DEBUG=1 to see one).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

_DEFAULT_HEAD_COLUMNS = "run_id,task_id,step,strategy,parent_id,child_id,status,parent_ms,child_ms,speedup_vs_ref,reward"


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def _clean_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn any exception into one line on stderr and exit 1 (bad data is the usual cause)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from kbsim.trace.reader import TraceError

        try:
            return command(*args, **kwargs)
        except TraceError as err:
            for problem in err.problems:
                click.echo(f"invalid: {problem}", err=True)
            sys.exit(1)
        except (ValueError, OSError) as err:
            if os.environ.get("KERNELBAND_DEBUG"):
                raise
            _fail(str(err))
        except Exception as err:  # noqa: BLE001  -- the CLI promises no tracebacks
            if os.environ.get("KERNELBAND_DEBUG"):
                raise
            _fail(f"unexpected {type(err).__name__}: {err} (KERNELBAND_DEBUG=1 shows a traceback)")

    return wrapper


_DATASETS = click.argument(
    "datasets", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False)
)
#: the new dataset a command writes (`merge`, `merge-shards`)
_NEW_DATASET = click.option("--out", required=True,
                            type=click.Path(path_type=Path, file_okay=False),
                            help="New dataset directory to write.")


@click.group()
def traces() -> None:
    """Inspect, validate and merge trace datasets.

    A dataset is a directory with manifest.json, steps/*.parquet and kernels/*.parquet
    (schema v1, see traces/SCHEMA.md).

    \b
    Example:
        kernelband traces validate traces/explore-h100
        kernelband traces info traces/explore-h100 traces/explore-a100
    """


def _format_speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


@traces.command()
@_DATASETS
@_clean_errors
def info(datasets: tuple[Path, ...]) -> None:
    """Per task: attempts, status counts, best speedup vs reference, runs and hardware.

    Reads only the columns it needs; several datasets are summarised together.

    \b
    Example:
        kernelband traces info traces/explore-h100
    """
    from kbsim.trace.summary import summarize_trace, summary_table

    summary = summarize_trace(list(datasets))
    click.echo(
        f"{summary.n_datasets} dataset(s), {summary.n_runs} run(s), {len(summary.tasks)} task(s), "
        f"{summary.n_steps:,} steps, {summary.n_kernels:,} kernels"
    )
    table = summary_table(summary)
    header = table.column_names
    rows = [
        [
            _format_speedup(value) if name == "best_speedup" else str(value)
            for name, value in zip(header, row, strict=True)
        ]
        for row in zip(*(table.column(n).to_pylist() for n in header), strict=True)
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    text_columns = {"task_id", "hardware"}

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.ljust(w) if name in text_columns else cell.rjust(w)
            for name, cell, w in zip(header, cells, widths, strict=True)
        ).rstrip()

    click.echo(line(header))
    for row in rows:
        click.echo(line(row))


@traces.command()
@_DATASETS
@_clean_errors
def validate(datasets: tuple[Path, ...]) -> None:
    """Check datasets against schema v1; exit 1 with one sentence per problem if any.

    Checks the manifest, every part file's columns and types, statuses, runtimes of ok
    attempts, rewards, duplicate steps and kernels, run ids and child kernels.

    \b
    Example:
        kernelband traces validate traces/explore-h100
    """
    from kbsim.trace.reader import load_trace

    data = load_trace(list(datasets))
    click.echo(f"valid: {data.steps.num_rows} steps, {data.kernels.num_rows} kernels")


@traces.command()
@_DATASETS
@_clean_errors
def compact(datasets: tuple[Path, ...]) -> None:
    """Merge each dataset's part files into one per table, in place (crash-safe).

    A long live run writes a part file per flush, hundreds of them; one file per table reads
    faster and stores smaller. Rows are kept, and so is the manifest's end time (a run in
    progress can still be resumed). Not while a run writes to the dataset.

    \b
    Example:
        kernelband traces compact traces/my-run
    """
    from kbsim.trace.reader import load_trace
    from kbsim.trace.writer import compact_dataset

    for path in datasets:
        before, after = compact_dataset(path)
        data = load_trace(path)  # the merged parts read back and validate
        click.echo(f"{path}: {before} part files -> {after} ({data.steps.num_rows} steps, "
                   f"{data.kernels.num_rows} kernels)")


@traces.command()
@_DATASETS
@_NEW_DATASET
@_clean_errors
def merge(datasets: tuple[Path, ...], out: Path) -> None:
    """Merge datasets into a new one; colliding run ids are renamed (run -> run-2).

    Identical runs found in several inputs are kept once; kernels are deduplicated by
    (task_id, kernel_id).

    \b
    Example:
        kernelband traces merge traces/explore-h100 traces/explore-a100 --out traces/explore-all
    """
    from kbsim.trace.merge import merge_traces
    from kbsim.trace.reader import load_trace

    merge_traces(list(datasets), out)
    data = load_trace(out)
    runs = data.manifests[0].get("runs", {})
    click.echo(
        f"merged {len(datasets)} dataset(s) into {out}: {data.steps.num_rows} steps, "
        f"{data.kernels.num_rows} kernels, {len(data.run_ids)} run(s)"
    )
    for run_id, details in runs.items():
        if details.get("original_run_id") != run_id:
            click.echo(
                f"renamed run {details['original_run_id']!r} of {details['source']} to {run_id!r}"
            )


@traces.command("merge-shards")
@_DATASETS
@_NEW_DATASET
@_clean_errors
def merge_shards(datasets: tuple[Path, ...], out: Path) -> None:
    """Merge copies of ONE run that each advanced a share of its tasks into one trace.

    The copies (of `kernelband live --shard K/N` or `kernelband traces profile --shard K/N`,
    each on a copy of the same run) must agree on every row they share: steps are the union
    by (run_id, task_id, step), kernels by (task_id, kernel_id), a profiled row winning over
    the same row unprofiled; a row that differs otherwise is refused, naming its key. The
    side files (evaluations.jsonl, gpu-lock.jsonl, ...) keep the lines the copies share
    once, then each copy's own; the manifest is the first copy's, its lists unioned.

    \b
    Example:
        kernelband live --out run-s0 --resume --shard 0/2 ...   # on GPU 0, a copy of run
        kernelband live --out run-s1 --resume --shard 1/2 ...   # on GPU 1, another copy
        kernelband traces merge-shards run-s0 run-s1 --out run-merged
    """
    from kbsim.trace.reader import load_trace
    from kbsim.trace.shards import merge_shards as merge

    merge(list(datasets), out)
    data = load_trace(out)
    click.echo(f"merged {len(datasets)} copies into {out}: {data.steps.num_rows} steps, "
               f"{data.kernels.num_rows} kernels")


@traces.command()
@click.argument("dataset", type=click.Path(path_type=Path, file_okay=False))
@click.option("-n", "--rows", "n_rows", default=10, show_default=True, help="Rows to show.")
@click.option("--kernels", is_flag=True, help="Show the kernels table instead of steps.")
@click.option(
    "-c",
    "--columns",
    default=None,
    help="Comma-separated columns to show (default: a readable subset; 'all' for every one).",
)
@_clean_errors
def head(dataset: Path, n_rows: int, kernels: bool, columns: str | None) -> None:
    """Show the first rows of a dataset's steps (or kernels) table.

    \b
    Example:
        kernelband traces head traces/explore-h100 -n 5
        kernelband traces head traces/explore-h100 --kernels -c task_id,kernel_id,ms,correct
    """
    from kbsim.trace.reader import load_trace
    from kbsim.trace.schema import KERNELS_SCHEMA, STEPS_SCHEMA

    schema = KERNELS_SCHEMA if kernels else STEPS_SCHEMA
    if columns is None:
        columns = (
            "task_id,kernel_id,parent_id,correct,ms,timing_backend"
            if kernels
            else (_DEFAULT_HEAD_COLUMNS)
        )
    names = schema.names if columns == "all" else [c.strip() for c in columns.split(",")]
    unknown = [name for name in names if name not in schema.names]
    if unknown:
        _fail(f"unknown column {unknown[0]!r}; columns are: {', '.join(schema.names)}")
    if kernels:
        data = load_trace(dataset, steps_columns=["task_id"], kernels_columns=names)
        table = data.kernels
    else:
        data = load_trace(dataset, steps_columns=names, kernels_columns=["task_id"])
        table = data.steps
    frame = table.slice(0, max(n_rows, 0)).to_pandas()
    click.echo(frame.to_string(index=False, max_colwidth=40))


@traces.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--batch-size", type=click.IntRange(1, 256), default=24, show_default=True,
              help="Kernels per Nsight Compute session.")
@click.option("--tasks", default=None, help="Only these tasks (comma-separated).")
@click.option("--shard", default=None, metavar="K/N",
              help="Only share K of N of the trace's tasks (the manifest's, sorted by name, "
              "every N-th from the K-th: the rule of `kernelband live --shard`), one process "
              "per GPU on copies of the trace; merge them with `traces merge-shards`.")
@click.option("--max-wall", "max_wall_s", type=float, default=None,
              help="Start no batch after this many seconds, nor one that its operator's "
              "earlier batches say would end after them; run again to continue.")
@click.option("--sessions", type=click.IntRange(1, 16), default=1, show_default=True,
              help="Nsight Compute sessions at once; their measured calls take turns, so "
              "start-up and compiling overlap (each holds one task's inputs on the GPU).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@_clean_errors
def profile(dataset: Path, batch_size: int, tasks: str | None, shard: str | None,
            max_wall_s: float | None, sessions: int, quiet: bool) -> None:
    """Profile (Nsight Compute, on this machine's GPU) every correct kernel without a profile.

    Kernels are profiled in batches, one ncu session per batch, round robin over tasks; each
    profile is recorded in the trace as its batch finishes, so a killed pass loses at most one
    batch and running the command again continues. Needs a CUDA GPU, ncu, and the trace's tasks.

    \b
    Example:
        kernelband traces profile traces/explore-h200 --batch-size 32 --max-wall 500
        kernelband traces profile traces/explore-h200 --sessions 3   # 3 sessions at once
        kernelband traces profile copy-s1 --shard 1/2   # on GPU 1; copy-s0 --shard 0/2 on GPU 0
    """
    from tqdm import tqdm

    from live.profiler import NcuProfiler
    from live.profiler.backfill import backfill_profiles

    wanted = [t.strip() for t in tasks.split(",")] if tasks else None
    if shard is not None:
        from kbsim.trace.reader import TraceError, read_manifest
        from live.runner.shard import shard_names

        if wanted is not None:
            _fail("give --tasks or --shard, not both")
        manifest, problems = read_manifest(dataset)
        if manifest is None or problems:
            raise TraceError(problems)
        wanted = shard_names(manifest.get("tasks") or [], shard)
        if not wanted:
            click.echo(f"share {shard} of {dataset}'s tasks is empty: nothing to profile")
            return
    bars: list[tqdm] = []
    seen: dict[str, int] = {}

    def on_start(total: int, already: int) -> None:
        click.echo(f"{total} correct kernels to profile ({already} already profiled)")
        bars.append(tqdm(total=total, unit="kernel", disable=quiet or not total,
                         file=sys.stderr))

    def on_batch(task: str, done: int, of: int) -> None:
        bars[0].update(done - seen.get(task, 0))
        seen[task] = done
        bars[0].set_postfix_str(task)

    report = backfill_profiles(
        dataset, lambda spec: NcuProfiler(spec, cache_dir=dataset / ".profile-cache"),
        tasks=wanted, batch_size=batch_size, max_wall_s=max_wall_s, sessions=sessions,
        on_start=on_start, on_batch=on_batch)
    for bar in bars:
        bar.close()
    if not (report.profiled or report.failed or report.left or report.stopped):
        return  # nothing was pending
    if report.stopped and report.stopped.startswith("profiler unavailable"):
        _fail(f"{dataset}: {report.stopped}")
    click.echo(f"profiled {report.profiled}, failed {report.failed}, left {report.left} "
               f"in {report.seconds:.0f} s" + (f" ({report.stopped})" if report.stopped else ""))
    if report.device_held_s:
        click.echo(f"  {report.sessions} session(s); the device measured for "
                   f"{report.device_held_s:.0f} s of them")
    for reason, count in sorted(report.errors.items(), key=lambda kv: -kv[1])[:5]:
        click.echo(f"  {count} x {reason}")
