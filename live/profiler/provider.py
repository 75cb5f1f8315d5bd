"""What the policy sees of a kernel's hardware signature, and when (the live side).

The policy asks for its cluster representatives' signatures at the start of a step
(`live.runner.episode.Episode.wanted_signatures`). A `SignatureProvider` answers at once, without
stalling the loop:

- ``roofline`` (``--profile roofline``, and the fallback when Nsight Compute is missing or refuses):
  the roofline signature of `live.hardware` from the kernel's measured runtime, known as soon as
  the kernel was evaluated; the policy sees it the first time it asks.
- ``reps`` (Nsight Compute, the default; NOTE (D62)): a representative first asked for at step
  ``t`` of its task is queued for profiling, and the policy sees its roofline signature (None
  where the GPU or the task has no roofline figures) at steps ``t .. t + lag - 1`` and its Nsight
  Compute signature from step ``t + lag`` on. Only if the profile is not back by then does the
  task wait for it (and the batch holding it starts at once). With ``lag = 0`` this is the old
  behaviour: ask, wait, see. The rule depends on step counts only, never on how fast the
  profiler was, so replay can model it exactly (docs/profiling-and-memory.md says what replay
  must do).
- ``off`` / ``all``: ``off`` reveals nothing; ``all`` is handled by the runner (every kernel
  profiled at evaluation) and reveals the recorded signature when asked, as before.

Profiling runs on one background thread in batches: a batch starts when ``batch_size`` kernels
wait, when the oldest has waited ``deadline_s``, or at once when a task waits for one of them. A
batch is one Nsight Compute session whatever its tasks (``NcuProfiler.profile_items``: the target
program builds one task's inputs at a time), holding the device alone once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from live.hardware import GpuPeaks, lookup_gpu, roofline_signature

log = logging.getLogger(__name__)

Signature = tuple[Sequence[float] | None, Sequence[float] | None]  # (hw, profile9)


@dataclass(frozen=True)
class SignatureTiming:
    """When the Nsight Compute signature replaces the roofline one, and how batches form."""

    lag_steps: int = 4
    batch_size: int = 8
    deadline_s: float = 15.0

    def __post_init__(self) -> None:
        if self.lag_steps < 0 or self.batch_size < 1 or self.deadline_s < 0:
            raise ValueError(f"bad signature timing {self}")


def roofline_of_result(task: Any, shapes: Sequence[dict[str, int]] | None,
                       shape_ms: Sequence[float] | None,
                       peaks: GpuPeaks | None) -> tuple[float, float, float] | None:
    """The roofline signature of an evaluated kernel, on the perf shape Nsight Compute profiles
    (the middle one) when it was timed, else the middle of the shapes timed."""
    if peaks is None or not shapes or not shape_ms or len(shapes) != len(shape_ms):
        return None
    perf = [dict(s) for s in getattr(task, "perf_shapes", ())]
    wanted = perf[max(0, (len(perf) - 1) // 2)] if perf else None
    timed = [dict(s) for s in shapes]
    index = timed.index(wanted) if wanted in timed else (len(timed) - 1) // 2
    return roofline_signature(task, timed[index], float(shape_ms[index]), peaks)


class SignatureProvider:
    """See the module docstring.

    Args:
        mode: ``reps`` | ``roofline`` | ``all`` | ``off``.
        tasks: task objects by name (for their bytes and FLOPs).
        gpu_name: the torch device name (peaks from `live.hardware.GPU_PEAKS`); None or unknown:
            no roofline signatures.
        profiler: an ``NcuProfiler``-like object (``available``, ``unavailable_reason``,
            ``profile``, optionally ``profile_many``); None: roofline only.
        device_alone: a context manager factory that gives the device to one caller (the GPU
            lock's exclusive side).
        on_profiled: ``on_profiled(task_name, kernel_id, result)`` for every profiled kernel
            (the runner records it in the trace), called on the profiling thread.
        timing: `SignatureTiming`.
    """

    def __init__(self, mode: str, tasks: dict[str, Any], *, gpu_name: str | None = None,
                 profiler: Any = None,
                 device_alone: Callable[[], AbstractContextManager] | None = None,
                 on_profiled: Callable[[str, str, Any], None] | None = None,
                 timing: SignatureTiming | None = None,
                 peaks: GpuPeaks | None = None) -> None:
        if mode not in ("reps", "roofline", "all", "off"):
            raise ValueError(f"unknown profile mode {mode!r}")
        self.requested_mode = mode
        self.mode = mode
        self.tasks = tasks
        self.peaks = peaks or (lookup_gpu(gpu_name) if gpu_name else None)
        self.profiler = profiler
        self.device_alone = device_alone or nullcontext
        self.on_profiled = on_profiled
        self.timing = timing or SignatureTiming()
        self.fallback_reason: str | None = None
        self._roofline: dict[tuple[str, str], tuple[float, float, float] | None] = {}
        self._codes: dict[tuple[str, str], str] = {}
        self._asked: dict[tuple[str, str], int] = {}
        self._results: dict[tuple[str, str], Signature] = {}
        self._queue: list[tuple[float, str, str]] = []  # (queued at, task, kernel id)
        self._urgent = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.batches: list[dict[str, Any]] = []  # one entry per batch: kernels, seconds
        self.waits_s: list[float] = []  # time tasks waited for a profile past the lag
        if mode in ("reps", "all") and (profiler is None or not profiler.available):
            reason = getattr(profiler, "unavailable_reason", None) or "no profiler"
            self._fall_back(reason)

    # -- what the runner calls --------------------------------------------------------------

    def observe(self, task_name: str, kernel_id: str, code: str,
                shapes: Sequence[dict[str, int]] | None,
                shape_ms: Sequence[float] | None) -> tuple[float, float, float] | None:
        """A correct kernel was evaluated: keep its roofline signature (and code, to profile it
        later); returns the roofline signature (None without peaks or byte counts)."""
        task = self.tasks.get(task_name)
        sig = roofline_of_result(task, shapes, shape_ms, self.peaks) if task else None
        with self._cond:
            self._roofline[(task_name, kernel_id)] = sig
            self._codes[(task_name, kernel_id)] = code
        return sig

    def roofline(self, task_name: str, kernel_id: str) -> tuple[float, float, float] | None:
        with self._cond:
            return self._roofline.get((task_name, kernel_id))

    def reveal(self, task_name: str, step: int, kernels: Sequence[Any]) -> list[Signature]:
        """The signatures the policy sees at `step` for `kernels` (objects with ``kernel_id``,
        ``code``, and ``hw`` / ``prof9`` where already known, e.g. from a resumed trace)."""
        if self.mode == "off":
            return [(None, None) for _ in kernels]
        if self.mode == "all":
            return [(k.hw, k.prof9) for k in kernels]
        if self.mode == "roofline":
            return [(self.roofline(task_name, k.kernel_id), None) for k in kernels]
        return [self._reveal_reps(task_name, step, k) for k in kernels]

    def close(self) -> None:
        """Stop the profiling thread: the batch in flight finishes (and is reported through
        `on_profiled`), requests not yet in a batch are dropped. Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=600)
            self._thread = None

    def describe(self) -> dict[str, Any]:
        """Plain data for the manifest: the mode used, the timing, why it fell back."""
        return {"requested": self.requested_mode, "mode": self.mode,
                "lag_steps": self.timing.lag_steps, "batch_size": self.timing.batch_size,
                "deadline_s": self.timing.deadline_s, "fallback": self.fallback_reason,
                "gpu_peaks": self.peaks.key if self.peaks else None}

    # -- reps -------------------------------------------------------------------------------

    def _reveal_reps(self, task_name: str, step: int, kernel: Any) -> Signature:
        key = (task_name, kernel.kernel_id)
        if kernel.hw is not None and key not in self._asked:
            return kernel.hw, kernel.prof9  # known before it was asked for (a resumed trace)
        with self._cond:
            self._codes.setdefault(key, kernel.code)
            asked = self._asked.setdefault(key, step)
            if asked == step and key not in self._results and not any(
                    q[1:] == key for q in self._queue):
                self._queue.append((time.monotonic(), task_name, kernel.kernel_id))
                self._ensure_thread()
                self._cond.notify_all()
            if step < asked + self.timing.lag_steps:
                return self._roofline.get(key), None
            waited = time.perf_counter()
            while key not in self._results and self.mode == "reps" and not self._closed:
                self._urgent = True
                self._cond.notify_all()
                self._cond.wait(timeout=1.0)
            if time.perf_counter() - waited > 1e-3:
                self.waits_s.append(time.perf_counter() - waited)
            got = self._results.get(key)
        if got is None or got[0] is None:  # not profiled (fell back, or this kernel failed)
            return self.roofline(task_name, kernel.kernel_id), None
        return got

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="kb-profiler", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._due():
                    timeout = None
                    if self._queue:
                        timeout = max(0.01, self._queue[0][0] + self.timing.deadline_s
                                      - time.monotonic())
                    self._cond.wait(timeout=timeout)
                if self._closed:
                    return
                batch, self._queue = self._queue, []
                self._urgent = False
            self._run_batch(batch)

    def _due(self) -> bool:
        if not self._queue:
            return False
        if self._urgent or len(self._queue) >= self.timing.batch_size:
            return True
        return time.monotonic() - self._queue[0][0] >= self.timing.deadline_s

    def _run_batch(self, batch: list[tuple[float, str, str]]) -> None:
        started = time.perf_counter()
        keys = [(task_name, kid) for _, task_name, kid in batch]
        with self._cond:
            items = [(task_name, self._codes[(task_name, kid)]) for task_name, kid in keys]
        results = self._profile(items) if self.mode == "reps" else [None] * len(items)
        with self._cond:
            for key, result in zip(keys, results, strict=True):
                profiled = result is not None and result.profiled and result.hw_sig
                self._results[key] = (
                    (list(result.hw_sig), list(result.profile9) if result.profile9 else None)
                    if profiled else (None, None))
            self._cond.notify_all()
        for (task_name, kid), result in zip(keys, results, strict=True):
            if result is not None and result.profiled and self.on_profiled is not None:
                self.on_profiled(task_name, kid, result)
        self.batches.append({"kernels": len(batch), "tasks": len({k[0] for k in keys}),
                             "seconds": time.perf_counter() - started})

    def _profile(self, items: list[tuple[str, str]]) -> list[Any]:
        """One batch: one Nsight Compute session for every task in it where the profiler can
        (``profile_items``), else one per task; the device held alone throughout."""
        profiler = self.profiler
        try:
            with self.device_alone():
                if hasattr(profiler, "profile_items"):
                    results = list(profiler.profile_items(items))
                else:
                    results = []
                    by_task: dict[str, list[int]] = {}
                    for i, (task_name, _) in enumerate(items):
                        by_task.setdefault(task_name, []).append(i)
                    got: dict[int, Any] = {}
                    for task_name, where in by_task.items():
                        codes = [items[i][1] for i in where]
                        many = getattr(profiler, "profile_many", None)
                        outs = (list(many(task_name, codes)) if many is not None and len(codes) > 1
                                else [profiler.profile(task_name, c) for c in codes])
                        got.update(zip(where, outs, strict=True))
                    results = [got[i] for i in range(len(items))]
        except Exception as exc:  # noqa: BLE001 - the profiler's fault must not end the run
            log.warning("profiling a batch of %d kernels failed: %s", len(items), exc)
            results = [None] * len(items)
        if not profiler.available:
            self._fall_back(profiler.unavailable_reason or "the profiler stopped")
        return results

    def _fall_back(self, reason: str) -> None:
        with self._cond:  # said before any waiting task wakes to the new mode
            if self.fallback_reason is not None:
                return
            self.fallback_reason = reason
            note = "" if self.peaks else ", but this GPU has no roofline peaks: no signatures"
            log.warning("Nsight Compute unavailable (%s): the policy uses roofline signatures "
                        "(live/hardware.py) instead%s", reason, note)
            self.mode = "roofline"
            self._cond.notify_all()
