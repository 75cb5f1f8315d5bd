"""`CandidateEvaluator`: what the live runner asks of an evaluator.

Satisfied by the local `live.evaluator.Evaluator` (warm sandboxed workers on this machine) and
by `live.backends.ray_pool.RayEvaluatorPool` (one actor per GPU of a Ray cluster).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from live.evaluator.result import EvalResult


@runtime_checkable
class CandidateEvaluator(Protocol):
    """Judges candidates of a task spec's tasks; one `EvalResult` for every outcome."""

    @property
    def device(self) -> str:
        """``cuda`` or ``cpu`` (resolved: never ``auto``)."""
        ...

    @property
    def device_info(self) -> dict[str, Any]:
        """What the device reported (its name, limits, versions), for the trace manifest."""
        ...

    @property
    def memory_plan_info(self) -> dict[str, Any] | None:
        """The GPU memory plan as plain data for the manifest; None without a plan."""
        ...

    @property
    def gpu_lock_info(self) -> dict[str, Any] | None:
        """The GPU lock's patience for the manifest (NOTE D81); None without a lock."""
        ...

    @property
    def session_memory(self) -> Callable[[list[str]], AbstractContextManager] | None:
        """What a profiling session on this evaluator's device reserves of its memory pool
        while it runs beside the checks in flight; None when there is nothing to share."""
        ...

    def evaluate(self, task_name: str, code: str, *, seed: int = 0,
                 baseline_code: str | None = None) -> EvalResult:
        """Judge `code` as a candidate for `task_name`."""
        ...

    def shape_notes(self, task_name: str) -> list[str]:
        """Notes on `task_name`'s shapes (gold-check verdicts, dropped shapes); may be empty."""
        ...

    def dropped_shapes(self, task_name: str) -> list[int]:
        """The perf-shape indices of `task_name` that are not run (the load-time gold check's
        and the memory plan's), for a profiler that runs the task's shapes itself."""
        ...

    def close(self) -> None:
        """Stop every worker."""
        ...
