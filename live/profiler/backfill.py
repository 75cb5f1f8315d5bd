"""Profile, after the fact, every correct kernel of a trace that has no profile yet.

``kernelband traces profile DIR`` runs this on a GPU: kernels are grouped by task and profiled in
batches (one Nsight Compute session per batch, live.profiler.batch); each profile is recorded as
the writer's profile upgrade as soon as its batch is done, so a killed pass loses at most one
batch and a second pass continues where the first stopped. The manifest's ``profile_backfill``
entry says how and when.

NOTE (D96): ``sessions`` > 1 runs that many Nsight Compute sessions at once, each on its own
batch, and every profiler is given one shared device gate (`live.profiler.gate`): a session's
start-up, inputs and compiling overlap the others', while the measured calls of two sessions
never do, so each profile is taken on a quiet GPU as with one session. Each session holds one
task's inputs on the GPU, so N sessions need about N times the memory of one. The pass entry
records ``sessions`` and ``device_held_s`` (the seconds some session measured): the share of a
pass that start-up and compiling take is ``1 - device_held_s / seconds`` with one session.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
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
    sessions: int = 1
    #: seconds a session held the device to measure (the gate's turns, all sessions together)
    device_held_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"profiled": self.profiled, "failed": self.failed, "left": self.left,
                "already_profiled": self.already, "seconds": round(self.seconds, 1),
                "errors": dict(self.errors), "stopped": self.stopped,
                "sessions": self.sessions, "device_held_s": round(self.device_held_s, 1)}


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
                      max_wall_s: float | None = None, sessions: int = 1,
                      on_start: Callable[[int, int], None] | None = None,
                      on_batch: Callable[[str, int, int], None] | None = None) -> BackfillReport:
    """Profile the pending kernels of the trace at `path`.

    Args:
        profiler_for: task spec -> a profiler with ``available``, ``unavailable_reason`` and
            ``profile_many(task, codes, batch_size=)`` (live.profiler.NcuProfiler); called once
            per session. A profiler with a ``device_gate`` attribute is given the shared gate.
        tasks: only these tasks (default: all).
        max_wall_s: start no batch after this many seconds, nor one that its task's earlier
            batches say would end after them (the rest is counted as left).
        sessions: profiling sessions at once (NOTE D96; >= 1).
        on_start: called once with (kernels to profile, kernels already profiled).
        on_batch: called with (task, kernels done in this task, kernels of this task).
    """
    if sessions < 1:
        raise ValueError(f"sessions must be >= 1, got {sessions}")
    started = time.monotonic()
    report = BackfillReport(sessions=sessions)
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
        profilers = [profiler_for(spec)]
        if not profilers[0].available:
            report.stopped = f"profiler unavailable: {profilers[0].unavailable_reason}"
            return report
        profilers += [profiler_for(spec) for _ in range(sessions - 1)]
        device = threading.Lock()  # the measured calls of one session at a time
        for profiler in profilers:
            if hasattr(profiler, "device_gate"):
                profiler.device_gate = lambda: device
        idle: queue.SimpleQueue = queue.SimpleQueue()
        for profiler in profilers:
            idle.put(profiler)
        writer.remember_kernels(rows)
        # round robin over tasks, one batch each, so a pass cut short by --max-wall leaves
        # every task with some profiled kernels rather than the first tasks with all of theirs
        order = [(task, start) for start in range(0, max(len(v) for v in todo.values()),
                                                  batch_size)
                 for task in data_tasks if start < len(todo[task])]

        #: seconds per kernel of each task's slowest finished batch so far: a batch that would
        #: end after --max-wall is not started (one killed by the caller's time-out at the end of
        #: a piece is lost whole: its kernels are written only when it ends)
        per_kernel_s: dict[str, float] = {}

        def run(chunk: list[dict[str, Any]], task: str) -> list[Any]:
            profiler = idle.get()
            began = time.monotonic()
            try:
                results = profiler.profile_many(task, [r["code"] for r in chunk],
                                                batch_size=batch_size)
            finally:
                idle.put(profiler)
            took = (time.monotonic() - began) / max(1, len(chunk))
            per_kernel_s[task] = max(per_kernel_s.get(task, 0.0), took)
            return results

        def would_overrun(task: str, n: int) -> bool:
            """Whether a batch of `n` kernels of `task` started now would end after the
            budget: at its task's slowest rate so far, or the slowest of any task for a task
            with no finished batch yet (none: start it)."""
            assert max_wall_s is not None
            rate = per_kernel_s.get(task, max(per_kernel_s.values(), default=0.0))
            return time.monotonic() - started + n * rate > max_wall_s

        finished: dict[str, int] = {}

        def record(task: str, chunk: list[dict[str, Any]], results: list[Any]) -> None:
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
            finished[task] = finished.get(task, 0) + len(chunk)  # batches may end out of order
            if on_batch is not None:
                on_batch(task, finished[task], len(todo[task]))

        # one entry per object: a caller may hand out the same profiler for every session
        distinct = list({id(p): p for p in profilers}.values())
        held_before = sum(getattr(p, "held_s", 0.0) for p in distinct)
        running: dict[Future, tuple[str, list[dict[str, Any]]]] = {}

        def settle(futures: set[Future] | list[Future], *, reraise: bool = True) -> None:
            """Record the finished batches among `futures` (in submission order); then raise
            the first one's failure, if any (a profiler's own failure ends the pass)."""
            failures = []
            for future in [f for f in running if f in futures]:
                batch = running.pop(future)
                if future.cancelled():
                    continue
                if future.exception() is None:
                    record(*batch, future.result())
                else:
                    failures.append(future.exception())
            if failures and reraise:
                raise failures[0]

        # the trace is written from this thread only, as each batch comes back
        pool = ThreadPoolExecutor(max_workers=sessions, thread_name_prefix="kb-profile")
        try:
            for task, start in order:
                while len(running) >= sessions:
                    settle(wait(running, return_when=FIRST_COMPLETED).done)
                if max_wall_s is not None and time.monotonic() - started >= max_wall_s:
                    report.stopped = "wall-clock budget (--max-wall) reached"
                    break
                chunk = todo[task][start:start + batch_size]
                if max_wall_s is not None and would_overrun(task, len(chunk)):
                    # left for the next pass; a quicker task's batch may still fit
                    report.stopped = "wall-clock budget (--max-wall) reached"
                    continue
                running[pool.submit(run, chunk, task)] = (task, chunk)
            settle(wait(running).done)
        except BaseException:
            # interrupted (Ctrl-C, a timeout's SIGINT) or a profiler raised: end the sessions
            # in flight now rather than waiting out their batches; what finished is kept
            for profiler in distinct:
                cancel = getattr(profiler, "cancel", None)
                if cancel is not None:
                    cancel()
            pool.shutdown(wait=True, cancel_futures=True)
            settle([f for f in running if f.done()], reraise=False)
            raise
        pool.shutdown(wait=True)
        report.device_held_s = sum(getattr(p, "held_s", 0.0) for p in distinct) - held_before
        report.seconds = time.monotonic() - started
        passes = list(writer.manifest.get("profile_backfill") or [])
        passes.append({"date": utc_now_iso(), "batch_size": batch_size, **report.as_dict()})
        writer.manifest["profile_backfill"] = passes
    return report
