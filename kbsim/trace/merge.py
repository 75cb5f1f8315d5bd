"""Merge several trace datasets into one, resolving run-id collisions deterministically.

Inputs are read in the order given. A run (its steps, sorted by task and step) that is identical to
one already taken under the same run id is dropped; a different run under a taken run id is renamed
`<run_id>-2` (then `-3`, ...: the first suffix not taken yet), in steps and kernels alike. Kernels
are deduplicated by (task_id, kernel_id), the first occurrence winning. The merged manifest keeps
hardware, proposer and policy where all inputs agree (else ``{"mixed": [...]}``), and records per
run its hardware, proposer, policy, source dataset and original run id under ``runs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kbsim.trace.layout import require_new_dataset
from kbsim.trace.reader import TraceData, load_trace
from kbsim.trace.schema import KERNELS_SCHEMA, SCHEMA_VERSION, STEPS_SCHEMA
from kbsim.trace.writer import TraceWriter

_PER_RUN_KEYS = ("hardware", "proposer", "policy")


def _run_steps(steps: pa.Table, run_id: str) -> pa.Table:
    run = steps.filter(pc.equal(steps.column("run_id"), run_id))
    return run.sort_by([("task_id", "ascending"), ("step", "ascending")]).combine_chunks()


def _renamed(column: pa.ChunkedArray, renames: dict[str, str]) -> pa.ChunkedArray:
    if not renames:
        return column
    old = pa.array(list(renames), pa.string())
    new = pa.array(list(renames.values()), pa.string())
    index = pc.index_in(column, value_set=old)
    return pc.if_else(pc.is_null(index), column, pc.take(new, pc.fill_null(index, 0)))


def _with_run_ids(table: pa.Table, renames: dict[str, str]) -> pa.Table:
    position = table.schema.get_field_index("run_id")
    return table.set_column(position, "run_id", _renamed(table.column("run_id"), renames))


def _first_per_kernel(kernels: pa.Table) -> pa.Table:
    """Keep the first row of each (task_id, kernel_id)."""
    indexed = kernels.append_column("_row", pa.array(range(kernels.num_rows), pa.int64()))
    firsts = indexed.group_by(["task_id", "kernel_id"], use_threads=False).aggregate(
        [("_row", "min")]
    )
    first_rows = firsts.column("_row_min")
    return kernels.take(pc.take(first_rows, pc.sort_indices(first_rows)))


def _combined(values: list[Any]) -> Any:
    unique: list[Any] = []
    for value in values:
        if value not in unique:
            unique.append(value)
    return unique[0] if len(unique) == 1 else {"mixed": unique}


def _merged_manifest(
    datas: list[TraceData], run_sources: list[tuple[str, int, str]]
) -> dict[str, Any]:
    """The merged manifest; `run_sources` is (new run id, input index, original run id)."""
    manifests = [data.manifests[0] for data in datas]
    starts = [m["start_time"] for m in manifests if m.get("start_time")]
    ends = [m.get("end_time") for m in manifests]
    runs: dict[str, Any] = {}
    for new_id, index, old_id in run_sources:
        manifest = manifests[index]
        details = dict(manifest.get("runs", {}).get(old_id, {}))
        for key in _PER_RUN_KEYS:
            details.setdefault(key, manifest.get(key))
        details["source"] = str(datas[index].paths[0])
        details["original_run_id"] = old_id
        runs[new_id] = details
    tasks: list[str] = []
    for manifest in manifests:
        tasks += [t for t in manifest.get("tasks", []) if t not in tasks]
    merged: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tasks": tasks,
        "run_ids": [new_id for new_id, _, _ in run_sources],
        "start_time": min(starts) if starts else None,
        "end_time": None if None in ends else max(ends),
        "runs": runs,
        "merged_from": [str(data.paths[0]) for data in datas],
    }
    for key in _PER_RUN_KEYS:
        merged[key] = _combined([manifest.get(key) for manifest in manifests])
    return merged


def merge_traces(inputs: Sequence[str | Path], out: str | Path) -> Path:
    """Merge the datasets `inputs` into a new dataset at `out`; returns `out`.

    Every input must be valid (TraceError otherwise); `out` must not hold a dataset yet.
    """
    out = Path(out)
    require_new_dataset(out)
    if not inputs:
        raise ValueError("merge needs at least one input dataset")
    datas = [load_trace(path) for path in inputs]
    taken_ids: set[str] = set()
    # original run id -> [(run id in the output, its steps under the original id)]
    seen_runs: dict[str, list[tuple[str, pa.Table]]] = {}
    run_sources: list[tuple[str, int, str]] = []
    steps_parts: list[pa.Table] = []
    kernels_parts: list[pa.Table] = []
    for index, data in enumerate(datas):
        renames: dict[str, str] = {}
        dropped: list[str] = []
        for run_id in data.run_ids:
            run = _run_steps(data.steps, run_id)
            same = [new for new, steps in seen_runs.get(run_id, []) if steps.equals(run)]
            if same:  # an identical run is already in: keep it once (its kernels still count)
                dropped.append(run_id)
                if same[0] != run_id:
                    renames[run_id] = same[0]
                continue
            new_id = run_id
            suffix = 2
            while new_id in taken_ids:
                new_id = f"{run_id}-{suffix}"
                suffix += 1
            if new_id != run_id:
                renames[run_id] = new_id
            taken_ids.add(new_id)
            seen_runs.setdefault(run_id, []).append((new_id, run))
            run_sources.append((new_id, index, run_id))
        steps = data.steps
        if dropped:
            keep = pc.invert(pc.is_in(steps.column("run_id"), value_set=pa.array(dropped)))
            steps = steps.filter(keep)
        steps_parts.append(_with_run_ids(steps, renames))
        kernels_parts.append(_with_run_ids(data.kernels, renames))
    steps_all = pa.concat_tables(steps_parts).cast(STEPS_SCHEMA)
    kernels_all = _first_per_kernel(pa.concat_tables(kernels_parts).cast(KERNELS_SCHEMA))
    manifest = _merged_manifest(datas, run_sources)
    writer = TraceWriter(out, manifest, flush_every=2**62)
    try:
        writer.append_kernels(kernels_all)
        writer.flush()
        writer.append_steps(steps_all)
    finally:
        writer.close(end_time=manifest["end_time"])
    return out
