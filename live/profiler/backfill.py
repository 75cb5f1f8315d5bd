"""Profile, after the fact, every correct kernel of a trace that has no profile yet.

``kernelband traces profile DIR`` runs this on a GPU: kernels are grouped by task and profiled in
batches (one Nsight Compute session per batch, live.profiler.batch); each profile is recorded as
the writer's profile upgrade as soon as its batch is done, so a killed pass loses at most one
batch and a second pass continues where the first stopped. The manifest's ``profile_backfill``
entry says how and when.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbsim.trace.layout import utc_now_iso
from kbsim.trace.reader import load_trace
from kbsim.trace.writer import TraceWriter


@dataclass
class BackfillReport:
    """What one pass did: kernels profiled, failed (with reasons), left for lack of time."""

    profiled: int = 0
    failed: int = 0
    left: int = 0
    already: int = 0
    seconds: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"profiled": self.profiled, "failed": self.failed, "left": self.left,
                "already_profiled": self.already, "seconds": round(self.seconds, 1),
                "errors": dict(self.errors), "stopped": self.stopped}


def pending_kernels(path: str | Path, tasks: list[str] | None = None
                    ) -> tuple[dict[str, list[dict[str, Any]]], int, list[dict[str, Any]]]:
    """Correct, unprofiled kernels by task; the count already profiled; every kernel row."""
    data = load_trace(path)
    rows = data.kernels.to_pylist()
    todo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    already = 0
    for row in rows:
        if not row["correct"] or (tasks and row["task_id"] not in tasks):
            continue
        if row["profiled"]:
            already += 1
        else:
            todo[row["task_id"]].append(row)
    return dict(todo), already, rows


def backfill_profiles(path: str | Path, profiler_for: Callable[[str], Any], *,
                      tasks: list[str] | None = None, batch_size: int = 24,
                      max_wall_s: float | None = None,
                      on_start: Callable[[int, int], None] | None = None,
                      on_batch: Callable[[str, int, int], None] | None = None) -> BackfillReport:
    """Profile the pending kernels of the trace at `path`.

    Args:
        profiler_for: task spec -> a profiler with ``available``, ``unavailable_reason`` and
            ``profile_many(task, codes, batch_size=)`` (live.profiler.NcuProfiler).
        tasks: only these tasks (default: all).
        max_wall_s: start no batch after this many seconds (the rest is counted as left).
        on_start: called once with (kernels to profile, kernels already profiled).
        on_batch: called with (task, kernels done in this task, kernels of this task).
    """
    started = time.monotonic()
    report = BackfillReport()
    todo, report.already, rows = pending_kernels(path, tasks)
    report.left = sum(len(v) for v in todo.values())
    if on_start is not None:
        on_start(report.left, report.already)
    if not report.left:
        return report
    data_tasks = sorted(todo)
    with TraceWriter(path, resume=True) as writer:
        spec = ",".join(writer.manifest.get("tasks") or data_tasks)
        config = writer.manifest.get("config") or {}
        if isinstance(config.get("tasks"), str) and config["tasks"]:
            spec = config["tasks"]
        profiler = profiler_for(spec)
        if not profiler.available:
            report.stopped = f"profiler unavailable: {profiler.unavailable_reason}"
            return report
        writer.remember_kernels(rows)
        # round robin over tasks, one batch each, so a pass cut short by --max-wall leaves
        # every task with some profiled kernels rather than the first tasks with all of theirs
        queue = [(task, start) for start in range(0, max(len(v) for v in todo.values()),
                                                  batch_size)
                 for task in data_tasks if start < len(todo[task])]
        for task, start in queue:
            if max_wall_s is not None and time.monotonic() - started >= max_wall_s:
                report.stopped = "wall-clock budget (--max-wall) reached"
                break
            pending = todo[task]
            chunk = pending[start:start + batch_size]
            results = profiler.profile_many(task, [r["code"] for r in chunk],
                                            batch_size=batch_size)
            for row, result in zip(chunk, results, strict=True):
                report.left -= 1
                if result.profiled and result.hw_sig is not None:
                    writer.update_kernel_profile(
                        task, row["kernel_id"], hw_sig=list(result.hw_sig),
                        profile9=list(result.profile9) if result.profile9 else None,
                        profiler=result.profiler or "ncu")
                    report.profiled += 1
                else:
                    report.failed += 1
                    reason = (result.error or "unknown").split(";")[0][:120]
                    report.errors[reason] = report.errors.get(reason, 0) + 1
            if on_batch is not None:
                on_batch(task, min(start + batch_size, len(pending)), len(pending))
        report.seconds = time.monotonic() - started
        passes = list(writer.manifest.get("profile_backfill") or [])
        passes.append({"date": utc_now_iso(), "batch_size": batch_size, **report.as_dict()})
        writer.manifest["profile_backfill"] = passes
    return report
