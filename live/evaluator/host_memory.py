"""Host-memory admission: start no new work in a worker while the machine's memory is low.

NOTE (D84): on an H200 host (128 GiB, 16 workers), TritonBench-G's operators make their
performance inputs on the CPU (up to 33 GB for one operator); a few of them at once ran the host
out of memory, and the system's out-of-memory killer took the largest worker: in the cold load
`chunk_retention`'s check (then retried for 101 s, the load's last 100 s), in the live run ten
evaluator workers over five calls, three of them recorded as the candidate's ``runtime_error``.
A worker's own limit (RSS watch) cannot stop that: the sum of 16 limits is far above the host.

So the parent admits work by the host's *available* memory (psutil's ``available``: free plus
reclaimable cache): while it is under ``reserve`` bytes, no new call or evaluation starts unless
nothing else is running (so work always progresses); the ones running keep the reserve to grow
into. Workers also drop the CPU inputs of their previous task when they switch tasks while the
host is short (``CandidateRunner``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

#: share of the host's memory kept free for the work already running (12.8 GiB of 128 GiB).
#: With 0.2 (25 GiB) a cold TritonBench-G load on an H200 held 24 checks back for 374 s in all
#: and its queue drained 78 s later than without admission (2026-11-24, git history), while the
#: host's available memory still fell to 4 GiB: the checks running grow on their own; the
#: reserve only has to keep new ones from piling onto a host that is nearly full
RESERVE_SHARE = 0.1
#: ... but never more than this (a 512 GiB host need not keep 100 GiB free)
RESERVE_MAX_BYTES = 32 * 2**30
#: how often a held-back start looks again
POLL_S = 0.25
#: environment override of the reserve, in GiB (0 turns admission off)
RESERVE_ENV = "KB_HOST_RESERVE_GIB"
#: the out-of-memory score adjustment of the youngest running call (the oldest gets 0); the
#: kernel adds ``adj / 1000`` of the host's memory to a process's size when it picks a victim
KILL_ORDER_SPAN = 1000


def available_bytes() -> int:
    """Memory the host can give without swapping (free plus reclaimable), in bytes."""
    import psutil

    return int(psutil.virtual_memory().available)


def total_bytes() -> int:
    """The host's physical memory, in bytes."""
    import psutil

    return int(psutil.virtual_memory().total)


def default_reserve_bytes() -> int:
    """``KB_HOST_RESERVE_GIB`` if set, else ``RESERVE_SHARE`` of the host, at most
    ``RESERVE_MAX_BYTES``."""
    override = os.environ.get(RESERVE_ENV)
    if override:
        try:
            gib = float(override)
        except ValueError:
            raise ValueError(f"{RESERVE_ENV} must be a number of GiB, got {override!r}") from None
        if not gib >= 0:
            raise ValueError(f"{RESERVE_ENV} must be >= 0, got {override!r}")
        return int(gib * 2**30)
    return min(int(RESERVE_SHARE * total_bytes()), RESERVE_MAX_BYTES)


class HostRoom:
    """Admission by available host memory, shared by the threads that start work.

    Args:
        reserve_bytes: starts wait while fewer bytes than this are available (0: never wait);
            None: `default_reserve_bytes()`.
        probe: returns the available bytes (tests pass their own).
        poll_s: how often a waiting start looks again.
    """

    def __init__(self, reserve_bytes: int | None = None, *,
                 probe: Callable[[], int] = available_bytes, poll_s: float = POLL_S) -> None:
        self.reserve_bytes = default_reserve_bytes() if reserve_bytes is None else reserve_bytes
        if self.reserve_bytes < 0:
            raise ValueError(f"reserve_bytes must be >= 0, got {reserve_bytes}")
        self.probe = probe
        self.poll_s = poll_s
        self._lock = threading.Lock()
        self.held_back = 0  # starts that had to wait
        self.waited_s = 0.0  # their waits, summed
        self.lowest_bytes: int | None = None  # the least available memory a start saw

    def room(self) -> bool:
        """Whether a start may go now by memory alone."""
        if self.reserve_bytes == 0:
            return True
        available = self.probe()
        with self._lock:
            if self.lowest_bytes is None or available < self.lowest_bytes:
                self.lowest_bytes = available
        return available >= self.reserve_bytes

    def wait(self, running: Callable[[], int], closed: Callable[[], bool] | None = None) -> float:
        """Block until there is room or `running()` (the other work in flight) is 0, or
        `closed()`; the seconds waited (0.0: it went at once)."""
        started = time.perf_counter()
        held = False
        while not self.room() and running() > 0 and not (closed is not None and closed()):
            held = True
            time.sleep(self.poll_s)
        if not held:
            return 0.0
        waited = time.perf_counter() - started
        self.note_wait(waited)
        return waited

    def note_wait(self, seconds: float) -> None:
        """Count one held-back start that waited `seconds`."""
        with self._lock:
            self.held_back += 1
            self.waited_s += seconds

    def info(self) -> dict[str, float | int | None]:
        """The reserve and what admission did, as plain data (manifests, load stats)."""
        with self._lock:
            return {"host_reserve_gib": round(self.reserve_bytes / 2**30, 2),
                    "host_held_back": self.held_back,
                    "host_waited_s": round(self.waited_s, 2),
                    "host_lowest_available_gib": (None if self.lowest_bytes is None
                                                  else round(self.lowest_bytes / 2**30, 2))}


def host_short(reserve_bytes: int | None = None) -> bool:
    """Whether the host has less memory available than the reserve (False if admission is
    off)."""
    reserve = default_reserve_bytes() if reserve_bytes is None else reserve_bytes
    return reserve > 0 and available_bytes() < reserve


def set_kill_order(pids_oldest_first: Sequence[int]) -> int:
    """Steer the system's out-of-memory killer to the youngest of these processes.

    NOTE (D93): admission (above) only decides what starts; the checks already running grow
    together, and on an H200 host 16 TritonBench-G checks building their inputs took the host
    from 124 to 0 GiB in 72-84 s. The kernel then kills the process with the largest memory
    share, which was ``chunk_retention``'s first-wave check (24 GiB of inputs, 140-190 s a check)
    78 s in: retried after that, its last run ended three of four cold loads (355-379 s). So
    each running call's worker gets an ``oom_score_adj`` by its age among those running: 0 for
    the oldest, `KILL_ORDER_SPAN` for the youngest, evenly between (one step of 16 is 67, as if
    the younger held 8.5 GiB more on 128 GiB). A process may raise its score and lower it back to
    0 without privileges, and the kernel adds it to the memory share, so the young calls that
    lose the least work die first, and a check killed so is retried (D92). Its children (a
    compiler) get the same. Processes that are gone or not ours are passed over; the number of
    processes set is returned (0 where ``/proc`` has no such file).
    """
    import psutil

    n = len(pids_oldest_first)
    if n == 0:
        return 0
    children: dict[int, list[int]] = {}  # one pass over the processes, not one per worker
    for proc in psutil.process_iter(["ppid"]):
        children.setdefault(proc.info["ppid"], []).append(proc.pid)
    done = 0
    for rank, pid in enumerate(pids_oldest_first):
        adj = 0 if n == 1 else round(KILL_ORDER_SPAN * rank / (n - 1))
        if not psutil.pid_exists(pid):
            continue
        family, todo = [], [pid]
        while todo:
            member = todo.pop()
            family.append(member)
            todo.extend(children.get(member, []))
        for member in family:
            try:
                Path(f"/proc/{member}/oom_score_adj").write_text(f"{adj}\n")
            except OSError:
                continue
            done += 1
    return done


class KillOrder:
    """The work running now, each with its worker's pid, kept in `set_kill_order`'s order.

    `started(key, pid)` and `ended(key)` rank every running worker again (D93); one update at a
    time, so that the last to write saw the latest set. Shared by the threads that run work.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[object, tuple[float, int]] = {}

    def started(self, key: object, pid: int) -> None:
        """`key`'s work began in process `pid`: it is now the youngest."""
        with self._lock:
            self._running[key] = (time.perf_counter(), pid)
            self._steer()

    def ended(self, key: object) -> None:
        """`key`'s work is over (a key not running is ignored)."""
        with self._lock:
            if self._running.pop(key, None) is not None:
                self._steer()

    def pids(self) -> list[int]:
        """The running work's processes, the oldest first."""
        with self._lock:
            return [pid for _, pid in sorted(self._running.values())]

    def _steer(self) -> None:  # lock held
        set_kill_order([pid for _, pid in sorted(self._running.values())])
