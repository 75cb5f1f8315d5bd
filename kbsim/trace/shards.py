"""Merge copies of ONE run that each advanced different tasks (``kernelband live --shard K/N``,
``kernelband traces profile --shard K/N``) into the trace one process would have recorded.

The copies start from a common point (the same run copied, or nothing) and each adds rows of
its own share of the tasks, so a row found in several copies must be the same row:

- steps: the union keyed by (run_id, task_id, step); two copies that hold different rows under
  one key are refused, naming the key;
- kernels: the union keyed by (task_id, kernel_id); where copies differ on a kernel, the row of
  the better rank (correct, then profiled; as the readers keep, `checks.apply_kernel_upgrades`)
  wins if it only adds to the other: a profile (the profile columns alone differ) or a
  correct evaluation of a kernel recorded incorrect (NOTE D90). Any other difference is refused;
- side files (``*.jsonl``: evaluations, GPU lock closes, signature reveals, profile batches):
  the lines every copy starts with once, then each copy's lines after them, in input order,
  a line already taken not repeated;
- the manifest: the first copy's, its lists (tasks, run ids, profiling passes) the union of the
  copies' in order, its ``compile_ms`` the union of theirs, the latest end time (none while a
  copy has none), and a ``shard_merges`` entry for this merge;
- ``best/``: each task's best kernel file from the copy with the most steps of that task.

Written by `TraceWriter` as one part file per table (atomic, like `traces merge`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from kbsim.trace.layout import (
    atomic_write_bytes,
    require_new_dataset,
    utc_now_iso,
)
from kbsim.trace.reader import TraceData, load_trace
from kbsim.trace.schema import KERNELS_SCHEMA, STEPS_SCHEMA
from kbsim.trace.writer import TraceWriter

#: the kernel columns `kernelband traces profile` (and a live run's profiling) fills in
PROFILE_COLUMNS = ("hw_sig", "profile9", "profiled", "profiler")
#: manifest config fields that say which run a copy is (the fields a resumed run may not
#: change, `live.runner.resume`, and the run id)
RUN_FIELDS = ("run_id", "tasks", "policy", "seed", "device", "profile")
#: manifest maps the pieces of a run add keys to (per task)
_MAP_KEYS = ("compile_ms",)


class ShardConflict(ValueError):
    """Two copies hold different rows under one key."""


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN (a row compared with its copy)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [name for name in a if not _same(a[name], b.get(name))]


def _union_steps(datas: list[TraceData]) -> list[dict[str, Any]]:
    taken: dict[tuple[str, str, int], dict[str, Any]] = {}
    for data in datas:
        for row in data.steps.to_pylist():
            key = (row["run_id"], row["task_id"], row["step"])
            known = taken.get(key)
            if known is None:
                taken[key] = row
            elif not _same(known, row):
                columns = ", ".join(_differing(known, row))
                raise ShardConflict(
                    f"step run_id={key[0]!r} task_id={key[1]!r} step={key[2]} differs between "
                    f"the copies ({columns}); they are not shares of one run")
    return list(taken.values())


def _rank(row: dict[str, Any]) -> tuple[bool, bool]:
    return bool(row["correct"]), bool(row["profiled"])


def _upgrade(known: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
    """The row that wins of two rows of one kernel, or None if neither only adds to the
    other (see the module docstring)."""
    if _rank(known) == _rank(row):
        return None
    low, high = sorted((known, row), key=_rank)
    if not low["correct"] and high["correct"]:
        return high  # NOTE (D90): evaluated again and found correct
    differing = set(_differing(low, high))
    return high if differing <= set(PROFILE_COLUMNS) else None


def _union_kernels(datas: list[TraceData]) -> list[dict[str, Any]]:
    taken: dict[tuple[str, str], dict[str, Any]] = {}
    for data in datas:
        for row in data.kernels.to_pylist():
            key = (row["task_id"], row["kernel_id"])
            known = taken.get(key)
            if known is None:
                taken[key] = row
            elif not _same(known, row):
                winner = _upgrade(known, row)
                if winner is None:
                    differing = _differing(known, row)
                    columns = ", ".join([c for c in differing if c not in PROFILE_COLUMNS]
                                        or differing)
                    raise ShardConflict(
                        f"kernel task_id={key[0]!r} kernel_id={key[1]!r} differs between the "
                        f"copies ({columns}), beyond a profile; they are not shares of one run")
                taken[key] = winner
    return list(taken.values())


def _check_one_run(datas: list[TraceData]) -> None:
    first = datas[0]
    config = first.manifests[0].get("config") or {}
    for data in datas[1:]:
        other = data.manifests[0].get("config") or {}
        changed = [k for k in RUN_FIELDS if not _same(config.get(k), other.get(k))]
        if set(data.run_ids) != set(first.run_ids) or changed:
            what = (f"config {', '.join(changed)}" if changed
                    else f"run ids {sorted(first.run_ids)} and {sorted(data.run_ids)}")
            raise ValueError(f"{data.paths[0]} is not a copy of the run in {first.paths[0]} "
                             f"(they differ in {what})")


def _merged_manifest(manifests: list[dict[str, Any]], n_steps: int) -> dict[str, Any]:
    merged = dict(manifests[0])
    for manifest in manifests[1:]:
        for key, value in manifest.items():
            if key not in merged:
                merged[key] = value
            elif isinstance(value, list) and isinstance(merged[key], list):
                items = list(merged[key])
                items += [v for v in value if not any(_same(v, w) for w in items)]
                merged[key] = items
            elif key in _MAP_KEYS and isinstance(value, dict) and isinstance(merged[key], dict):
                merged[key] = {**value, **merged[key]}
    ends = [m.get("end_time") for m in manifests]
    merged["end_time"] = None if None in ends else max(ends)
    merged["shard_merges"] = [*(merged.get("shard_merges") or []),
                              {"date": utc_now_iso(), "copies": len(manifests),
                               "steps": n_steps}]
    return merged


def merge_side_lines(texts: Sequence[str]) -> str:
    """One side file (``*.jsonl``) from its copies: the lines they all start with once, then
    each copy's lines after them in order, a line already taken not repeated."""
    copies = [text.splitlines(keepends=True) for text in texts]
    prefix = 0
    while all(prefix < len(c) for c in copies) and len({c[prefix] for c in copies}) == 1:
        prefix += 1
    lines = list(copies[0][:prefix])
    seen = set(lines)
    for copy in copies:
        for line in copy[prefix:]:
            if line not in seen:
                seen.add(line)
                lines.append(line if line.endswith("\n") else line + "\n")
    return "".join(lines)


def _copy_best(inputs: list[Path], datas: list[TraceData], out: Path) -> None:
    """Each task's best kernel file (``best/TASK.py``) from the copy with the most steps of
    that task (the first such copy on a tie)."""
    chosen: dict[str, tuple[int, Path]] = {}
    for path, data in zip(inputs, datas, strict=True):
        best = path / "best"
        if not best.is_dir():
            continue
        counts: dict[str, int] = {}
        for task in data.steps.column("task_id").to_pylist():
            counts[task] = counts.get(task, 0) + 1
        for file in sorted(best.glob("*.py")):
            steps = counts.get(file.stem.replace("__", "/"), 0)
            if file.name not in chosen or steps > chosen[file.name][0]:
                chosen[file.name] = (steps, file)
    if chosen:
        (out / "best").mkdir(exist_ok=True)
    for name, (_, file) in chosen.items():
        atomic_write_bytes(out / "best" / name, file.read_bytes())


def merge_shards(inputs: Sequence[str | Path], out: str | Path) -> Path:
    """Merge the copies `inputs` of one run into a new dataset at `out` (see the module
    docstring); returns `out`. ValueError (one sentence) if they are not copies of one run or
    disagree on a row; `out` must not hold a dataset yet."""
    out = Path(out)
    require_new_dataset(out)
    if not inputs:
        raise ValueError("merge-shards needs at least one copy of a run")
    paths = [Path(p) for p in inputs]
    datas = [load_trace(path) for path in paths]
    _check_one_run(datas)
    steps = _union_steps(datas)
    kernels = _union_kernels(datas)
    manifest = _merged_manifest([data.manifests[0] for data in datas], len(steps))
    writer = TraceWriter(out, manifest, flush_every=2**62)
    try:
        writer.append_kernels(pa.Table.from_pylist(kernels, schema=KERNELS_SCHEMA))
        writer.flush()
        writer.append_steps(pa.Table.from_pylist(steps, schema=STEPS_SCHEMA))
    finally:
        writer.close(end_time=manifest["end_time"])
    names = sorted({f.name for path in paths for f in path.glob("*.jsonl")})
    for name in names:
        texts = [(path / name).read_text() for path in paths if (path / name).is_file()]
        atomic_write_bytes(out / name, merge_side_lines(texts).encode())
    _copy_best(paths, datas, out)
    return out
