"""`GpuLock`: many candidates compile and check on one GPU at once; timing and profiling alone.

Compiling a Triton kernel is CPU work, and correctness checks only need the GPU to compute, not
to be quiet; timing and Nsight Compute need the device to themselves. So the live runner gives
its evaluator a readers-writer lock: ``shared`` for loading, compiling and checking, ``exclusive``
for timing (the worker asks for its turn between checking and timing) and for profiling.

NOTE (D81): writers are *patient*. A pure writer preference (no new shared holder once a timing
waits) made every 0.1 s timing drain every check in flight (seconds to tens of seconds each), and
with a timing asked for every few seconds the GPU spent most of its time draining (H200,
TritonBench-G: 0.2 evaluations/s, workers busy ~15 % of the time; 2026-11-23, git history). Here a
writer's request is first *pending*: shared holders may still enter. The lock *closes* to new
shared holders when any of these holds:

- no shared holder is inside (a quiet point: the writer is served at once);
- ``batch`` writers are pending;
- the oldest pending writer has waited ``patience_s`` seconds (so writers never starve).

Once closed it stays closed until no writer is pending or holding: the writers pending at the
close, and those that arrive while it is closed, are served one after another, so one drain
serves a batch of timings; then shared holders enter again. ``patience_s=0`` (or ``batch=1``)
closes at the first request: the old pure writer preference.

NOTE (D97): a close need not wait for the longest check in flight. A lock given a
`StepAsideSignal` raises it whenever it closes and lowers it when it opens again; the workers'
checks read it at every torch call and Triton launch (`live.evaluator.step_aside`) and, while it
is up, finish their own GPU work, let the shared side go and ask for it again, so a batch of
timings waits for the GPU work in flight, not for whole checks or shapes (a TritonBench-G
operator's own test code held it 15-50 s). Readers still never overlap a writer.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: NOTE (D81) the live evaluator's default patience, from the H200 TritonBench-G run of
#: 2026-11-23 (git history of docs/benchmarks.md): checks p50 2 s / p90 17 s, a timing 0.1 s, a
#: timing asked for every few seconds. 15 s is a little under one long (p90) check: a timing
#: waits at most that long before the lock closes, plus one drain (at worst the longest check
#: in flight), about 30 s with p90 checks, in the range of the 18-56 s median timing wait
#: measured under pure writer preference; meanwhile several timings are asked for, so one
#: drain serves them all instead of one drain per timing every few seconds.
TIMING_PATIENCE_S = 15.0


def timing_batch(workers: int) -> int:
    """Pending timings that close the lock at once, for `workers` evaluator workers: half of
    them (at least 2).

    A worker waiting to time holds nothing and does nothing. Once half the pool is parked so,
    a drain (the other half finishing the checks in flight, then all the timings, 0.1 s each)
    wastes less worker time than letting the parked half wait on for the patience deadline.
    At least 2, since 1 would be pure writer preference again (pools of 1-3 workers).
    """
    return max(2, workers // 2)


class StepAsideSignal:
    """One byte in a shared memory file that the lock raises while it is closed (NOTE D97).

    The evaluator's worker processes map the file read-only (`path`) and read the byte at their
    checks' safe points (`live.evaluator.step_aside.StepAside`): 1 asks them to let the shared
    side go, 0 lets them go on. A plain file rather than `multiprocessing.shared_memory`, whose
    resource tracker would unlink the segment when the first worker that attached exits.
    """

    def __init__(self, folder: str | Path | None = None) -> None:
        if folder is None and Path("/dev/shm").is_dir():
            folder = "/dev/shm"
        handle, name = tempfile.mkstemp(prefix="kb-step-aside-", dir=folder)
        os.write(handle, b"\x00")
        self.path = name
        self._map = mmap.mmap(handle, 1)
        os.close(handle)
        self.raised_count = 0

    def set(self, raised: bool) -> None:
        if self._map.closed:
            return
        if raised:
            self.raised_count += 1
        self._map[0] = 1 if raised else 0

    @property
    def raised(self) -> bool:
        return not self._map.closed and self._map[0] == 1

    def close(self) -> None:
        """Unmap and remove the file (workers that still map it read a closed signal as 0)."""
        if not self._map.closed:
            self._map.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


@dataclass(frozen=True)
class GpuLockState:
    """What the lock is doing, for tests and progress displays.

    Attributes:
        readers: shared holders inside.
        writer: the exclusive side is held.
        writers_waiting: exclusive requests not yet served (pending, or queued at a close).
        closed: new shared holders wait (a batch of writers is being served).
        oldest_wait_s: how long the oldest waiting writer has waited (0.0 with none).
    """

    readers: int
    writer: bool
    writers_waiting: int
    closed: bool
    oldest_wait_s: float


class GpuLock:
    """A readers-writer lock for one device (threads of one process) with patient writers.

    Args:
        batch: pending writers that close the lock to new readers (>= 1; 1: at once).
        patience_s: the longest a writer stays pending before the lock closes (>= 0; 0: at
            once, pure writer preference).
    """

    def __init__(self, *, batch: int = 1, patience_s: float = 0.0) -> None:
        self._cond = threading.Condition()
        self._signal: StepAsideSignal | None = None
        #: one record per close, oldest first (`closes`): why it closed, the readers inside,
        #: how long they took to drain and the lock stayed closed, the writers it served
        self._closes: list[dict[str, float | int | str]] = []
        self._close: dict[str, float | int | str] | None = None
        self._readers = 0
        self._writer = False
        self._closed = False
        # arrival times (time.monotonic) of the writers waiting, in arrival order
        self._waiting: list[float] = []
        self.batch = 1
        self.patience_s = 0.0
        self.set_patience(batch=batch, patience_s=patience_s)

    def set_patience(self, *, batch: int, patience_s: float) -> None:
        """Change when pending writers close the lock (see the module docstring); waiting
        threads re-check at once."""
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if not patience_s >= 0:  # also refuses NaN
            raise ValueError(f"patience_s must be >= 0, got {patience_s}")
        with self._cond:
            self.batch = int(batch)
            self.patience_s = float(patience_s)
            self._cond.notify_all()

    def attach_signal(self, signal: StepAsideSignal | None) -> None:
        """Raise `signal` while the lock is closed (NOTE D97); None detaches it."""
        with self._cond:
            self._signal = signal
            if signal is not None:
                signal.set(self._closed)

    @property
    def step_aside(self) -> bool:
        """Whether shared holders are asked to step aside while the lock is closed (D97)."""
        with self._cond:
            return self._signal is not None

    # -- the rule --------------------------------------------------------------------------

    def _deadline(self) -> float:
        """When the oldest pending writer's patience runs out (monotonic time)."""
        return self._waiting[0] + self.patience_s

    def _update_closed(self) -> None:
        """Close the lock if a writer waits and a quiet point, a full batch or the oldest
        writer's deadline says so (caller holds the condition)."""
        if self._closed or not self._waiting:
            return
        now = time.monotonic()
        reason = ("quiet" if self._readers == 0 else "batch" if len(self._waiting) >= self.batch
                  else "patience" if now >= self._deadline() else None)
        if reason is not None:
            self._closed = True
            self._close = {"at": now, "reason": reason, "readers": self._readers,
                           "writers": len(self._waiting), "served": 0}
            if self._signal is not None and self._readers:
                self._signal.set(True)  # the readers inside step aside (D97)

    def _reopen_if_done(self) -> None:
        """Let readers in again once no writer waits or holds (caller holds the condition)."""
        if self._closed and not self._waiting and not self._writer:
            self._closed = False
            if self._close is not None:
                self._close["closed_s"] = time.monotonic() - float(self._close["at"])
                self._closes.append(self._close)
                self._close = None
            if self._signal is not None:
                self._signal.set(False)
            self._cond.notify_all()

    # -- shared side ------------------------------------------------------------------------

    def acquire_shared(self) -> None:
        with self._cond:
            while True:
                self._update_closed()
                if not self._writer and not self._closed:
                    break
                self._cond.wait()
            self._readers += 1

    def release_shared(self) -> None:
        with self._cond:
            if self._readers <= 0:
                raise RuntimeError("release_shared without acquire_shared")
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()  # a quiet point: pending writers go now

    # -- exclusive side ---------------------------------------------------------------------

    def acquire_exclusive(self) -> None:
        with self._cond:
            arrived = time.monotonic()
            self._waiting.append(arrived)
            granted = False
            try:
                while True:
                    self._update_closed()
                    if self._closed and not self._writer and self._readers == 0:
                        break
                    # pending: wake at the oldest writer's deadline even if no reader leaves
                    timeout = (None if self._closed
                               else max(0.0, self._deadline() - time.monotonic()))
                    self._cond.wait(timeout)
                granted = True
            finally:
                self._waiting.remove(arrived)
                if granted:
                    self._writer = True
                    if self._close is not None:
                        if "drain_s" not in self._close:
                            self._close["drain_s"] = time.monotonic() - float(self._close["at"])
                        self._close["served"] = int(self._close["served"]) + 1
                else:  # interrupted while waiting: do not leave readers shut out
                    self._reopen_if_done()

    def release_exclusive(self) -> None:
        with self._cond:
            if not self._writer:
                raise RuntimeError("release_exclusive without acquire_exclusive")
            self._writer = False
            self._reopen_if_done()
            self._cond.notify_all()  # the next writer of the batch, or the readers

    # -- context managers and views ---------------------------------------------------------

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        self.acquire_shared()
        try:
            yield
        finally:
            self.release_shared()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        self.acquire_exclusive()
        try:
            yield
        finally:
            self.release_exclusive()

    @property
    def state(self) -> tuple[int, bool]:
        """(shared holders, exclusive held): for tests and progress displays."""
        with self._cond:
            return self._readers, self._writer

    def snapshot(self) -> GpuLockState:
        """The lock's whole state at one instant (`GpuLockState`), as the waiting threads left
        it: a pure view (the oldest writer itself closes the lock at its deadline)."""
        with self._cond:
            oldest = time.monotonic() - self._waiting[0] if self._waiting else 0.0
            return GpuLockState(self._readers, self._writer, len(self._waiting), self._closed,
                                oldest)

    def closes(self) -> list[dict[str, float | int | str]]:
        """Every finished close so far, oldest first: ``reason`` (quiet, batch, patience),
        ``readers`` and ``writers`` at the close, ``drain_s`` (until the first writer got in),
        ``served`` (writers) and ``closed_s`` (until readers could enter again); ``at`` is
        `time.monotonic()` at the close."""
        with self._cond:
            return [dict(c) for c in self._closes]

    def describe(self) -> dict[str, float | int]:
        """The patience settings as plain data (for a run's manifest)."""
        with self._cond:
            return {"timing_batch": self.batch, "timing_patience_s": self.patience_s}
