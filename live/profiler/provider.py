"""What the policy sees of a kernel's hardware signature, and when (the live side).

The policy asks for its cluster representatives' signatures at the start of a step
(`live.runner.episode.Episode.wanted_signatures`). A `SignatureProvider` answers at once, without
stalling the loop:

- ``roofline`` (``--profile roofline``, and the fallback when Nsight Compute is missing or refuses):
  the roofline signature of `live.hardware` from the kernel's measured runtime, known as soon as
  the kernel was evaluated; the policy sees it the first time it asks.
- ``reps`` (Nsight Compute, the default; NOTE (D67)): a representative first asked for at step
  ``t`` of its task is queued for profiling; the policy sees its roofline signature (None where
  the GPU or the task has no roofline figures) until its Nsight Compute profile is back **and**
  ``lag`` steps have passed, and Nsight's from the first step after that; it never waits for a
  profile. Which step that was depends on the profiler's speed, so it is recorded: every first
  reveal goes to ``on_reveal(task, kernel_id, asked_step, shown_step)`` (the runner appends it to
  ``OUT/signature-reveals.jsonl``), which a replay of this run can follow exactly. With
  ``lag = 0`` the policy waits instead (the behaviour before issue 15: ask, wait, see).
- ``off`` / ``all``: ``off`` reveals nothing; ``all`` is handled by the runner (every kernel
  profiled at evaluation) and reveals the recorded signature when asked, as before.

Profiling runs on one background thread in batches: a batch starts when ``batch_size`` kernels
wait or the oldest has waited ``deadline_s`` (at once when a task waits, ``lag = 0``), but never
sooner after the last batch than the time it held the device alone times
``(1 - max_share) / max_share``: profiling holds the device alone for at most ``max_share`` of
the time (default a quarter). A batch is one Nsight Compute session whatever its tasks
(``NcuProfiler.profile_items``: the target program builds one task's inputs at a time). A
profiler made with a ``device_gate`` (`NcuProfiler`; the live runner's wiring gives it the
device ``device_alone`` holds) holds the device only while it measures, one turn per task of
the batch (`live.profiler.gate`): the session's start-up and compiling overlap evaluations.
Other profilers hold it for the whole session.
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

    lag_steps: int = 1
    batch_size: int = 4
    deadline_s: float = 15.0
    max_share: float = 0.25

    def __post_init__(self) -> None:
        if (self.lag_steps < 0 or self.batch_size < 1 or self.deadline_s < 0
                or not 0 < self.max_share <= 1):
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
        on_reveal: ``on_reveal(task_name, kernel_id, asked_step, shown_step)`` the first time a
            Nsight Compute signature is shown (``reps``).
    """

    def __init__(self, mode: str, tasks: dict[str, Any], *, gpu_name: str | None = None,
                 profiler: Any = None,
                 device_alone: Callable[[], AbstractContextManager] | None = None,
                 on_profiled: Callable[[str, str, Any], None] | None = None,
                 timing: SignatureTiming | None = None,
                 peaks: GpuPeaks | None = None,
                 on_reveal: Callable[[str, str, int, int], None] | None = None) -> None:
        if mode not in ("reps", "roofline", "all", "off"):
            raise ValueError(f"unknown profile mode {mode!r}")
        self.requested_mode = mode
        self.mode = mode
        self.tasks = tasks
        self.peaks = peaks or (lookup_gpu(gpu_name) if gpu_name else None)
        self.profiler = profiler
        self.device_alone = device_alone or nullcontext
        #: the profiler takes the device itself, only while it measures (an NcuProfiler made
        #: with a ``device_gate``, the same device as `device_alone`)
        self._gated = getattr(profiler, "device_gate", None) is not None
        self.on_profiled = on_profiled
        self.on_reveal = on_reveal
        self._shown: set[tuple[str, str]] = set()
        self._next_batch_at = 0.0  # monotonic time before which no batch starts (max_share)
        self.timing = timing or SignatureTiming()
        self.fallback_reason: str | None = None
        self._roofline: dict[tuple[str, str], tuple[float, float, float] | None] = {}
        self._codes: dict[tuple[str, str], str] = {}
        self._asked: dict[tuple[str, str], int] = {}
        self._results: dict[tuple[str, str], Signature] = {}
        self._queue: list[tuple[float, str, str]] = []  # (queued at, task, kernel id)
        self._urgent = False
        self._closed = False
        self._flush = False
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

    def remember(self, task_name: str, kernel_id: str, code: str,
                 roofline: Sequence[float] | None) -> None:
        """A kernel evaluated before a resumption (its row is in the trace): its code and
        roofline signature, as `observe` would have kept them."""
        key = (task_name, kernel_id)
        with self._cond:
            self._roofline.setdefault(key, tuple(roofline) if roofline is not None else None)
            self._codes.setdefault(key, code)

    def resume_asked(self, task_name: str, kernel_id: str, *, asked_step: int,
                     shown: bool, hw: Sequence[float] | None,
                     prof9: Sequence[float] | None) -> None:
        """What a resumed run's replay of its recorded steps tells of a representative asked
        for before the interruption (``reps``): the step it was first asked for, its Nsight
        Compute signature where the trace has it and whether it was already shown (then it
        is not recorded again); one the trace has no profile of is queued again."""
        key = (task_name, kernel_id)
        with self._cond:
            self._asked.setdefault(key, asked_step)
            if hw is not None:
                self._results[key] = (list(hw), list(prof9) if prof9 is not None else None)
            if shown:
                self._shown.add(key)
            elif (hw is None and self.mode == "reps" and key in self._codes
                  and key not in self._results and not any(q[1:] == key for q in self._queue)):
                self._queue.append((time.monotonic(), task_name, kernel_id))
                self._ensure_thread()
                self._cond.notify_all()

    def provisional(self, task_name: str, kernel_id: str) -> bool:
        """Whether what `reveal` shows of this kernel now is its roofline signature, to be
        replaced by Nsight Compute's (``reps``, not shown yet)."""
        with self._cond:
            return self.mode == "reps" and (task_name, kernel_id) not in self._shown

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

    def profile_now(self, task_name: str, code: str) -> Any:
        """One kernel's profile at once (``--profile all``): the device alone while the
        profiler measures (a gated profiler) or throughout."""
        assert self.profiler is not None
        with nullcontext() if self._gated else self.device_alone():
            return self.profiler.profile(task_name, code)

    def pending(self) -> int:
        """Representatives asked for and not profiled yet (queued)."""
        with self._cond:
            return len(self._queue)

    def close(self, flush: bool = False) -> None:
        """Stop the profiling thread. ``flush``: the batch in flight finishes and what is still
        queued is profiled now (no deadline, no share), so the trace holds every representative
        asked for (the normal end of a run); otherwise the session in flight is cancelled (its
        kernels stay unprofiled) and the queue is dropped (an interrupted run). Idempotent."""
        with self._cond:
            self._closed = True
            self._flush = flush
            self._cond.notify_all()
        cancel = getattr(self.profiler, "cancel", None)
        if not flush and cancel is not None and self._thread is not None:
            cancel()  # a session in flight would hold the end of the run for tens of seconds
        if self._thread is not None:
            self._thread.join(timeout=900 if flush else 60)
            self._thread = None

    def describe(self) -> dict[str, Any]:
        """Plain data for the manifest: the mode used, the timing, why it fell back."""
        return {"requested": self.requested_mode, "mode": self.mode,
                "lag_steps": self.timing.lag_steps, "batch_size": self.timing.batch_size,
                "deadline_s": self.timing.deadline_s, "max_share": self.timing.max_share,
                "fallback": self.fallback_reason,
                "gpu_peaks": self.peaks.key if self.peaks else None}

    # -- reps -------------------------------------------------------------------------------

    def _reveal_reps(self, task_name: str, step: int, kernel: Any) -> Signature:
        key = (task_name, kernel.kernel_id)
        if kernel.hw is not None and key not in self._asked:
            return kernel.hw, kernel.prof9  # known before it was asked for (a resumed trace)
        lag = self.timing.lag_steps
        with self._cond:
            self._codes.setdefault(key, kernel.code)
            asked = self._asked.setdefault(key, step)
            if asked == step and key not in self._results and not any(
                    q[1:] == key for q in self._queue):
                self._queue.append((time.monotonic(), task_name, kernel.kernel_id))
                self._ensure_thread()
                self._cond.notify_all()
            if lag == 0:  # the old behaviour: wait for the profile
                waited = time.perf_counter()
                while key not in self._results and self.mode == "reps" and not self._closed:
                    self._urgent = True
                    self._cond.notify_all()
                    self._cond.wait(timeout=1.0)
                if time.perf_counter() - waited > 1e-3:
                    self.waits_s.append(time.perf_counter() - waited)
            got = self._results.get(key) if step >= asked + lag else None
            first = got is not None and got[0] is not None and key not in self._shown
            if first:
                self._shown.add(key)
        if got is None or got[0] is None:  # not back yet, or not profiled
            return self.roofline(task_name, kernel.kernel_id), None
        if first and self.on_reveal is not None:
            self.on_reveal(task_name, kernel.kernel_id, asked, step)
        return got

    def _ensure_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="kb-profiler", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not (self._closed and not self._flush) and not self._due():
                    if self._closed and not self._queue:
                        break
                    timeout = None
                    if self._queue:
                        now = time.monotonic()
                        timeout = max(0.01, min(
                            max(self._queue[0][0] + self.timing.deadline_s, self._next_batch_at)
                            - now, 1.0))
                    self._cond.wait(timeout=timeout)
                if self._closed and not (self._flush and self._queue):
                    return
                batch = self._queue[:self.timing.batch_size]
                self._queue = self._queue[self.timing.batch_size:]
                self._urgent = False
            took = self._run_batch(batch)
            share = self.timing.max_share
            self._next_batch_at = time.monotonic() + took * (1 - share) / share

    def _due(self) -> bool:
        if not self._queue:
            return False
        if self._urgent or self._flush:  # a task waits (lag 0), or the run ends
            return True
        if time.monotonic() < self._next_batch_at:
            return False
        if len(self._queue) >= self.timing.batch_size:
            return True
        return time.monotonic() - self._queue[0][0] >= self.timing.deadline_s

    def _run_batch(self, batch: list[tuple[float, str, str]]) -> float:
        """Profile `batch`; returns the seconds it held the device alone."""
        started = time.perf_counter()
        held_before = float(getattr(self.profiler, "held_s", 0.0) or 0.0)
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
        seconds = time.perf_counter() - started
        held = (float(getattr(self.profiler, "held_s", 0.0) or 0.0) - held_before
                if self._gated else seconds)
        self.batches.append({"kernels": len(batch), "tasks": len({k[0] for k in keys}),
                             "seconds": seconds, "held_s": held,
                             "started": started, "ended": time.perf_counter()})
        return held

    def _profile(self, items: list[tuple[str, str]]) -> list[Any]:
        """One batch: one Nsight Compute session for every task in it where the profiler can
        (``profile_items``), else one per task; the device held alone while it measures (a
        gated profiler) or throughout."""
        profiler = self.profiler
        try:
            with nullcontext() if self._gated else self.device_alone():
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
