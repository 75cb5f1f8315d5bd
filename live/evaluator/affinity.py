"""`AffinityQueue`: free resources (worker processes, GPU actors) handed out to callers with a
preference for the one that last served the same task.

A worker keeps a task's big inputs on its GPU (`live.evaluator.run_candidate.InputCache`) and an
actor's workers do too, so sending a task's next candidate where its previous one ran avoids
rebuilding them. Without such a resource free, the caller gets the one free the longest.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Generic, TypeVar

T = TypeVar("T")


class AffinityQueue(Generic[T]):
    """Thread-safe queue of free items, each tagged with the task it last served."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: list[tuple[T, str | None]] = []

    def put(self, item: T, last_task: str | None = None) -> None:
        with self._cond:
            self._items.append((item, last_task))
            self._cond.notify()

    def get(self, prefer: str | None = None, timeout: float | None = None) -> T:
        """A free item, the one that last served `prefer` if free; waits for one, at most
        `timeout` seconds (then `queue.Empty`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise queue.Empty
                self._cond.wait(left)
            index = next((i for i, (_, task) in enumerate(self._items)
                          if prefer is not None and task == prefer), 0)
            return self._items.pop(index)[0]

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)
