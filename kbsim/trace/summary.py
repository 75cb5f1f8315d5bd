"""Per-task summary of trace datasets (what `kernelband traces info` prints), computed fast.

Only the four step columns it needs are read; every part file's schema is still checked from its
footer, so a malformed dataset gives a TraceError rather than a wrong summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kbsim.trace.reader import Paths, load_trace
from kbsim.trace.schema import STATUSES

_COLUMNS = ["run_id", "task_id", "status", "speedup_vs_ref"]


@dataclass(frozen=True)
class TaskSummary:
    """One task's attempts across the loaded datasets."""

    task_id: str
    attempts: int
    status_counts: dict[str, int]
    #: best speedup vs the reference over `ok` attempts (None when no attempt succeeded)
    best_speedup: float | None
    run_ids: tuple[str, ...]
    #: GPU names of the runs (from the manifests' hardware)
    hardware: tuple[str, ...]


@dataclass(frozen=True)
class TraceSummary:
    """Totals and per-task summaries of one or more datasets."""

    n_datasets: int
    n_runs: int
    n_steps: int
    n_kernels: int
    tasks: tuple[TaskSummary, ...]


def gpu_name(hardware: Any) -> str:
    """A short name for a manifest's hardware entry."""
    if isinstance(hardware, dict):
        if "mixed" in hardware:
            return "mixed"
        for key in ("gpu_name", "gpu", "name"):
            if hardware.get(key):
                return str(hardware[key])
    return "unknown"


def _run_hardware(manifests: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for manifest in manifests:
        runs = manifest.get("runs", {})
        for run_id in manifest.get("run_ids", []):
            entry = runs.get(run_id, {}) if isinstance(runs, dict) else {}
            names[run_id] = gpu_name(entry.get("hardware", manifest.get("hardware")))
    return names


def summarize_trace(paths: Paths) -> TraceSummary:
    """Per task: attempts, status counts, best speedup vs reference, runs and hardware."""
    data = load_trace(paths, steps_columns=_COLUMNS, kernels_columns=["task_id", "kernel_id"])
    steps = data.steps
    counts = steps.group_by(["task_id", "status"], use_threads=True).aggregate(
        [("status", "count")]
    )
    ok = steps.filter(pc.equal(steps.column("status"), "ok"))
    best = ok.group_by("task_id").aggregate([("speedup_vs_ref", "max")])
    task_runs = steps.group_by(["task_id", "run_id"]).aggregate([])
    best_by_task = dict(
        zip(
            best.column("task_id").to_pylist(),
            best.column("speedup_vs_ref_max").to_pylist(),
            strict=True,
        )
    )
    status_by_task: dict[str, dict[str, int]] = {}
    for task_id, status, count in zip(
        counts.column("task_id").to_pylist(),
        counts.column("status").to_pylist(),
        counts.column("status_count").to_pylist(),
        strict=True,
    ):
        status_by_task.setdefault(task_id, {})[status] = count
    runs_by_task: dict[str, list[str]] = {}
    for task_id, run_id in zip(
        task_runs.column("task_id").to_pylist(),
        task_runs.column("run_id").to_pylist(),
        strict=True,
    ):
        runs_by_task.setdefault(task_id, []).append(run_id)
    hardware = _run_hardware(data.manifests)
    order = {status: i for i, status in enumerate(STATUSES)}
    tasks = []
    for task_id in sorted(status_by_task):
        by_status = status_by_task[task_id]
        run_ids = tuple(sorted(runs_by_task.get(task_id, [])))
        tasks.append(
            TaskSummary(
                task_id=task_id,
                attempts=sum(by_status.values()),
                status_counts=dict(sorted(by_status.items(), key=lambda kv: order.get(kv[0], 99))),
                best_speedup=best_by_task.get(task_id),
                run_ids=run_ids,
                hardware=tuple(sorted({hardware.get(r, "unknown") for r in run_ids})),
            )
        )
    return TraceSummary(
        n_datasets=len(data.paths),
        n_runs=len(data.run_ids),
        n_steps=steps.num_rows,
        # distinct kernels: a kernel profiled after its row was written has two rows
        n_kernels=data.kernels.group_by(["task_id", "kernel_id"]).aggregate([]).num_rows,
        tasks=tuple(tasks),
    )


def summary_table(summary: TraceSummary) -> pa.Table:
    """The per-task summary as an Arrow table (one column per status present)."""
    statuses = [s for s in STATUSES if any(s in t.status_counts for t in summary.tasks)]
    columns: dict[str, list[Any]] = {"task_id": [t.task_id for t in summary.tasks]}
    columns["attempts"] = [t.attempts for t in summary.tasks]
    for status in statuses:
        columns[status] = [t.status_counts.get(status, 0) for t in summary.tasks]
    columns["best_speedup"] = [t.best_speedup for t in summary.tasks]
    columns["runs"] = [len(t.run_ids) for t in summary.tasks]
    columns["hardware"] = [", ".join(t.hardware) for t in summary.tasks]
    return pa.table(columns)
