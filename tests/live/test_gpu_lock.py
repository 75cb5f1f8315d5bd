"""The GPU lock: shared holders overlap, an exclusive holder is alone, writers are not starved."""

from __future__ import annotations

import threading
import time

import pytest

from live.evaluator.gpu_lock import GpuLock


def test_shared_holders_overlap_and_exclusive_waits_for_them() -> None:
    lock = GpuLock()
    lock.acquire_shared()
    lock.acquire_shared()
    assert lock.state == (2, False)
    got = threading.Event()

    def writer() -> None:
        with lock.exclusive():
            got.set()

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.05)
    assert not got.is_set()
    lock.release_shared()
    time.sleep(0.05)
    assert not got.is_set()
    lock.release_shared()
    t.join(2)
    assert got.is_set()
    assert lock.state == (0, False)


def test_waiting_writer_blocks_new_readers() -> None:
    lock = GpuLock()
    lock.acquire_shared()
    order: list[str] = []

    def writer() -> None:
        with lock.exclusive():
            order.append("writer")

    def reader() -> None:
        with lock.shared():
            order.append("reader")

    w = threading.Thread(target=writer)
    w.start()
    time.sleep(0.05)  # the writer now waits for the first reader
    r = threading.Thread(target=reader)
    r.start()
    time.sleep(0.05)
    assert order == []  # the new reader queues behind the waiting writer
    lock.release_shared()
    w.join(2)
    r.join(2)
    assert order == ["writer", "reader"]


def test_exclusive_is_alone_under_contention() -> None:
    lock = GpuLock()
    inside = {"shared": 0, "exclusive": 0}
    violations: list[str] = []
    guard = threading.Lock()

    def enter(kind: str) -> None:
        with guard:
            inside[kind] += 1
            if inside["exclusive"] > 1 or (inside["exclusive"] and inside["shared"]):
                violations.append(str(inside))

    def leave(kind: str) -> None:
        with guard:
            inside[kind] -= 1

    def work(i: int) -> None:
        for j in range(50):
            kind = "exclusive" if (i + j) % 3 == 0 else "shared"
            with (lock.exclusive() if kind == "exclusive" else lock.shared()):
                enter(kind)
                time.sleep(0.0005)
                leave(kind)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert violations == []
    assert lock.state == (0, False)


def test_unbalanced_release_is_an_error() -> None:
    lock = GpuLock()
    with pytest.raises(RuntimeError):
        lock.release_shared()
    with pytest.raises(RuntimeError):
        lock.release_exclusive()


class RecordingLock(GpuLock):
    """A GpuLock that logs who holds what, to check the evaluator's protocol."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []
        self._log = threading.Lock()

    def _note(self, event: str) -> None:
        with self._log:
            self.events.append(event)

    def acquire_shared(self) -> None:
        super().acquire_shared()
        self._note("+s")

    def release_shared(self) -> None:
        self._note("-s")
        super().release_shared()

    def acquire_exclusive(self) -> None:
        super().acquire_exclusive()
        self._note("+x")

    def release_exclusive(self) -> None:
        self._note("-x")
        super().release_exclusive()


@pytest.mark.slow
def test_evaluator_with_gpu_lock_times_alone_and_judges_as_before() -> None:
    """Two workers, four concurrent candidates: each compiles outside the lock, checks under
    the shared side and times under the exclusive side; failures release the lock."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from live.evaluator import Evaluator
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    folder = Path(__file__).parent / "fixtures" / "candidates"
    good = (folder / "vadd_good.py").read_text()
    wrong = (folder / "vadd_wrong.py").read_text()
    lock = RecordingLock()
    with Evaluator(SPEC, device="cpu", workers=2, timeout_s=20, compile_timeout_s=60,
                   memory_limit_mb=8192, gpu_lock=lock) as ev:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda args: ev.evaluate("vadd", args[0], seed=args[1]),
                                    [(good, 0), (wrong, 0), (good, 1), (wrong, 1)]))
    assert [r.status for r in results] == ["ok", "incorrect", "ok", "incorrect"]
    assert all(r.ms and r.ms > 0 for r in results if r.status == "ok")
    assert lock.state == (0, False)
    # replay the log: an exclusive hold never overlaps anything else
    readers, writer = 0, False
    for event in lock.events:
        if event == "+s":
            assert not writer
            readers += 1
        elif event == "-s":
            readers -= 1
        elif event == "+x":
            assert readers == 0 and not writer
            writer = True
        else:
            writer = False
    assert lock.events.count("+x") == 2  # the two correct candidates were timed
    for r in results:  # waits are part of the overhead, split by what was waited for
        if r.status == "ok":
            assert r.pool_wait_s < 1e-3 and r.shared_wait_s >= 0 and r.timing_wait_s >= 0
            assert r.pool_wait_s + r.shared_wait_s + r.timing_wait_s <= r.worker_overhead_s
    # compiling holds nothing; the correct ones checked under the shared side (a wrong one that
    # fails its first, compiling check never asks for it)
    assert 2 <= lock.events.count("+s") <= 4


def test_idle_workers_prefer_the_one_that_last_served_the_task() -> None:
    from live.evaluator.affinity import AffinityQueue

    idle: AffinityQueue[object] = AffinityQueue()
    a, b, c = object(), object(), object()
    idle.put(a, "softmax")
    idle.put(b, "matmul")
    idle.put(c, None)
    assert idle.get(prefer="matmul") is b
    assert idle.get(prefer="attention") is a  # none served it: the longest idle
    assert idle.get(prefer="softmax") is c
    import queue

    with pytest.raises(queue.Empty):
        idle.get(timeout=0.05)  # nothing free


def test_timed_inputs_are_made_before_the_worker_asks_for_the_lock(tmp_path) -> None:
    """Making big inputs is CPU work (seconds on a GPU's perf shapes): done under the shared
    side it would hold every timing back (NOTE D61), so it happens before the first request."""
    import dataclasses

    from live.evaluator.run_candidate import CandidateRunner
    from live.evaluator.task_source import resolve_task
    from live.evaluator.worker import _device_info
    from tests.live.fixtures.candidates.tiny_tasks import HERE, SPEC

    events: list[str] = []
    task = resolve_task(SPEC, "vadd")

    def make_inputs(shape: dict, seed: int, device: str) -> tuple:
        events.append(f"make N={shape['N']} seed={seed}")
        return task.make_inputs(shape, seed, device)

    runner = CandidateRunner("cpu", _device_info("cpu"))
    runner._tasks[(SPEC, "vadd")] = dataclasses.replace(task, make_inputs=make_inputs)

    def await_turn(kind: str) -> bool:
        events.append(kind)
        return True

    request = {"op": "evaluate", "task_spec": SPEC, "task_name": "vadd", "seed": 7,
               "n_seeds": 2, "code": (HERE / "vadd_good.py").read_text(),
               "baseline_code": None, "timing": {}, "exclusive_timing": True}
    response = runner.evaluate(request, tmp_path, on_compiled=lambda: events.append("compiled"),
                               await_turn=await_turn)
    assert response["status"] == "ok", response
    timed = [f"make N={s['N']} seed=7" for s in task.cpu_shapes]  # CPU: timed on seed 7
    shared = events.index("shared")
    assert all(events.index(e) < shared for e in timed), events
    assert events.index("compiled") < shared < events.index("timing")
    # made once each: the checks and the timing reuse them from the worker's cache
    assert all(events.count(e) == 1 for e in timed), events


def test_input_cache_keep_false_and_ensure() -> None:
    import torch

    from live.evaluator.run_candidate import InputCache

    cache = InputCache(max_bytes=10_000)
    made: list[str] = []
    one = cache.get(("test", 1), lambda: made.append("t") or (torch.zeros(10),), keep=False)
    assert cache.held == 0 and one[0].numel() == 10  # made and handed out, not kept
    cache.ensure(("perf",), lambda: made.append("p") or (torch.ones(100),))
    cache.ensure(("perf",), lambda: made.append("p") or (torch.ones(100),))
    assert made == ["t", "p"] and cache.held == 400
    copy = cache.get(("perf",), lambda: made.append("p") or (torch.ones(100),))
    copy[0].zero_()  # a clone: the kept inputs stay pristine
    assert made == ["t", "p"] and torch.equal(cache.get(("perf",), tuple)[0], torch.ones(100))


def test_workers_that_check_beside_others_tune_quickly() -> None:
    """NOTE (D79): with a GPU lock (checks side by side) the evaluator's workers autotune with
    short benchmarks and say so in the device info (the manifest's hardware); alone, in full."""
    from live.evaluator import Evaluator
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    with Evaluator(SPEC, device="cpu", workers=1, timeout_s=20, gpu_lock=GpuLock()) as ev:
        assert ev.device_info.get("quick_autotune") is True
    with Evaluator(SPEC, device="cpu", workers=1, timeout_s=20) as ev:
        assert "quick_autotune" not in ev.device_info
