"""`GpuLock`: many candidates compile and check on one GPU at once; timing and profiling alone.

Compiling a Triton kernel is CPU work, and correctness checks only need the GPU to compute, not
to be quiet; timing and Nsight Compute need the device to themselves. So the live runner gives
its evaluator a readers-writer lock: ``shared`` for loading, compiling and checking, ``exclusive``
for timing (the worker asks for its turn between checking and timing) and for profiling. Writers
are preferred: once a timing waits, no new shared holder enters, so timing is never starved.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class GpuLock:
    """A writer-preferring readers-writer lock for one device (threads of one process)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_shared(self) -> None:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_shared(self) -> None:
        with self._cond:
            if self._readers <= 0:
                raise RuntimeError("release_shared without acquire_shared")
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    def acquire_exclusive(self) -> None:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True

    def release_exclusive(self) -> None:
        with self._cond:
            if not self._writer:
                raise RuntimeError("release_exclusive without acquire_exclusive")
            self._writer = False
            self._cond.notify_all()

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
