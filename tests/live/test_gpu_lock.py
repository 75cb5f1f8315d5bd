"""The GPU lock: shared holders overlap, an exclusive holder is alone, writers are not starved,
and (NOTE D81) patient writers close the lock at a quiet point, a full batch or a deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from live.evaluator.gpu_lock import GpuLock, GpuLockState, timing_batch


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


@pytest.mark.parametrize("settings", [{}, {"batch": 4, "patience_s": 0.0},
                                      {"batch": 1, "patience_s": 60.0}],
                         ids=["default", "patience-0", "batch-1"])
def test_waiting_writer_blocks_new_readers(settings: dict) -> None:
    """Pure writer preference: the default, and what patience 0 or a batch of 1 give."""
    lock = GpuLock(**settings)
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


@pytest.mark.parametrize("settings", [{}, {"batch": 2, "patience_s": 0.005}],
                         ids=["writer-preference", "patient"])
def test_exclusive_is_alone_under_contention(settings: dict) -> None:
    lock = GpuLock(**settings)
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
    assert not any(t.is_alive() for t in threads)  # nobody starved
    assert violations == []
    assert lock.state == (0, False)


def test_unbalanced_release_is_an_error() -> None:
    lock = GpuLock()
    with pytest.raises(RuntimeError):
        lock.release_shared()
    with pytest.raises(RuntimeError):
        lock.release_exclusive()


# -- patient writers (NOTE D81) ---------------------------------------------------------------

def _until(predicate: Callable[[], bool], timeout_s: float = 2.0) -> bool:
    """Poll `predicate` until it holds (True) or `timeout_s` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


class Holder:
    """A thread that takes one side of `lock`, notes its name in `log` once inside, and holds
    it until `leave` is set (at once when `stay=False`)."""

    def __init__(self, lock: GpuLock, side: str, name: str, log: list[str], *,
                 stay: bool = True) -> None:
        self.entered = threading.Event()
        self.leave = threading.Event()
        if not stay:
            self.leave.set()
        self._lock, self._side, self._name, self._log = lock, side, name, log
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with self._lock.exclusive() if self._side == "x" else self._lock.shared():
            self._log.append(self._name)
            self.entered.set()
            self.leave.wait(5)

    def done(self) -> bool:
        self.leave.set()
        self.thread.join(2)
        return not self.thread.is_alive()


IDLE = GpuLockState(readers=0, writer=False, writers_waiting=0, closed=False, oldest_wait_s=0.0)


def test_readers_keep_entering_while_a_writer_is_pending() -> None:
    lock = GpuLock(batch=3, patience_s=60.0)
    log: list[str] = []
    a = Holder(lock, "s", "a", log)
    assert a.entered.wait(1)
    w = Holder(lock, "x", "w", log, stay=False)
    assert _until(lambda: lock.snapshot().writers_waiting == 1)
    b = Holder(lock, "s", "b", log)
    assert b.entered.wait(1)  # the pending writer lets a new check in
    snap = lock.snapshot()
    assert (snap.readers, snap.writer, snap.closed) == (2, False, False)
    assert not w.entered.is_set()
    assert a.done() and b.done()
    assert w.entered.wait(1)  # the quiet point serves it, long before its 60 s
    assert w.done()
    assert log == ["a", "b", "w"]
    assert lock.snapshot() == IDLE


def test_the_lock_closes_when_a_batch_of_writers_is_pending() -> None:
    lock = GpuLock(batch=2, patience_s=60.0)
    log: list[str] = []
    a = Holder(lock, "s", "a", log)
    assert a.entered.wait(1)
    w1 = Holder(lock, "x", "w1", log, stay=False)
    assert _until(lambda: lock.snapshot().writers_waiting == 1)
    assert not lock.snapshot().closed
    w2 = Holder(lock, "x", "w2", log, stay=False)
    assert _until(lambda: lock.snapshot().closed)
    assert lock.snapshot().writers_waiting == 2
    c = Holder(lock, "s", "c", log, stay=False)
    assert not c.entered.wait(0.05)  # closed: the new check waits
    assert not w1.entered.is_set() and not w2.entered.is_set()  # a is still draining
    assert a.done()
    assert c.entered.wait(1) and w1.done() and w2.done() and c.done()
    assert log[0] == "a" and sorted(log[1:3]) == ["w1", "w2"] and log[3] == "c"
    assert lock.snapshot() == IDLE


def test_the_lock_closes_at_the_patience_deadline_while_readers_hold() -> None:
    """The oldest writer wakes at its deadline by itself (no reader leaves meanwhile)."""
    lock = GpuLock(batch=10, patience_s=0.25)
    log: list[str] = []
    a = Holder(lock, "s", "a", log)
    assert a.entered.wait(1)
    asked = time.monotonic()
    w = Holder(lock, "x", "w", log, stay=False)
    b = Holder(lock, "s", "b", log)
    assert b.entered.wait(1)  # still pending: a check may start
    assert _until(lambda: lock.snapshot().closed)
    snap = lock.snapshot()
    assert time.monotonic() - asked >= 0.25 and snap.oldest_wait_s >= 0.25
    assert (snap.readers, snap.writer, snap.writers_waiting) == (2, False, 1)
    c = Holder(lock, "s", "c", log, stay=False)
    assert not c.entered.wait(0.05)
    assert a.done() and not w.entered.wait(0.05)  # drains the checks in flight: b is inside
    assert b.done() and w.done() and c.done()
    assert log == ["a", "b", "w", "c"]
    assert lock.snapshot() == IDLE


def test_a_quiet_point_serves_a_writer_at_once() -> None:
    lock = GpuLock(batch=10, patience_s=60.0)
    started = time.monotonic()
    with lock.exclusive():
        assert lock.snapshot() == GpuLockState(0, True, 0, True, 0.0)
    assert time.monotonic() - started < 0.5
    assert lock.snapshot() == IDLE
    with lock.shared():  # readers enter again after the writer
        assert lock.state == (1, False)


def test_every_writer_queued_at_a_close_is_served_before_any_new_reader() -> None:
    lock = GpuLock(batch=2, patience_s=60.0)
    log: list[str] = []
    a = Holder(lock, "s", "a", log)
    assert a.entered.wait(1)
    writers = [Holder(lock, "x", "w1", log, stay=False), Holder(lock, "x", "w2", log,
                                                                 stay=False)]
    assert _until(lambda: lock.snapshot().closed)
    r = Holder(lock, "s", "r", log, stay=False)
    assert not r.entered.wait(0.05)
    writers.append(Holder(lock, "x", "w3", log, stay=False))  # arrives while closed
    assert _until(lambda: lock.snapshot().writers_waiting == 3)
    assert a.done()
    assert all(w.done() for w in writers) and r.done()
    assert log[0] == "a" and sorted(log[1:4]) == ["w1", "w2", "w3"] and log[4] == "r"
    assert lock.snapshot() == IDLE


def test_a_writer_interrupted_while_waiting_does_not_shut_readers_out() -> None:
    lock = GpuLock()
    lock.acquire_shared()

    def interrupted(timeout: float | None = None) -> bool:
        raise KeyboardInterrupt

    lock._cond.wait = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        lock.acquire_exclusive()
    del lock._cond.wait
    assert lock.snapshot() == GpuLockState(1, False, 0, False, 0.0)
    lock.acquire_shared()  # not closed: a new reader enters
    lock.release_shared()
    lock.release_shared()


@pytest.mark.parametrize(("settings", "message"), [
    ({"batch": 0, "patience_s": 1.0}, "batch must be >= 1"),
    ({"batch": 2, "patience_s": -1.0}, "patience_s must be >= 0"),
    ({"batch": 2, "patience_s": float("nan")}, "patience_s must be >= 0"),
])
def test_bad_patience_settings_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GpuLock(**settings)


def test_the_timing_batch_is_half_the_workers_and_at_least_two() -> None:
    assert [timing_batch(w) for w in (1, 2, 3, 4, 5, 12, 24)] == [2, 2, 2, 2, 2, 6, 12]


def test_the_evaluator_sets_its_lock_s_patience() -> None:
    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    lock = GpuLock()
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=20), gpu_lock=lock,
                   memory_plan=False) as ev:  # defaults: half the workers (at least 2), 15 s
        assert lock.describe() == {"timing_batch": 2, "timing_patience_s": 15.0}
        assert ev.gpu_lock_info == {"timing_batch": 2, "timing_patience_s": 15.0, "workers": 1,
                                    "step_aside": True}


def test_a_live_run_records_its_timing_patience_in_the_manifest(tmp_path) -> None:
    from live.proposers import make_proposer
    from live.runner import RunConfig
    from live.runner.runner import LiveRunner

    with pytest.raises(ValueError, match="timing_patience_s must be >= 0"):
        RunConfig(out=str(tmp_path / "bad"), timing_patience_s=-1.0)
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", steps=1, device="cpu",
                       profile="off", timing_patience_s=4.0, eval_workers=1)
    runner = LiveRunner(config, make_proposer("mutate"), show_progress=False, device_lock=True)
    try:
        manifest = runner._manifest()
    finally:
        runner.evaluator.close()
    assert manifest["config"]["timing_patience_s"] == 4.0
    assert manifest["gpu_lock"] == {"timing_batch": 2, "timing_patience_s": 4.0, "workers": 1,
                                    "step_aside": True}


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


def spinning(code: str, call: int, seconds: float = 6.0) -> str:
    """`vadd` candidate `code` whose `call`-th call spins on torch calls for `seconds`."""
    slow = code.replace("def vadd(x, y, out):\n",
                        "_calls = [0]\n\n\ndef vadd(x, y, out):\n    import time\n"
                        f"    import torch\n    _calls[0] += 1\n    if _calls[0] == {call}:\n"
                        "        began = time.perf_counter()\n"
                        f"        while time.perf_counter() - began < {seconds}:\n"
                        "            torch.add(x, 0)\n            time.sleep(0.005)\n")
    assert slow != code
    return slow


def assert_exclusive_alone(events: list[str]) -> None:
    """Replay a `RecordingLock` log: an exclusive hold never overlaps anything else."""
    readers, writer = 0, False
    for event in events:
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


@pytest.mark.slow
def test_evaluator_with_gpu_lock_times_alone_and_judges_as_before() -> None:
    """Two workers, four concurrent candidates: each compiles outside the lock, checks under
    the shared side and times under the exclusive side; failures release the lock."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    folder = Path(__file__).parent / "fixtures" / "candidates"
    good = (folder / "vadd_good.py").read_text()
    wrong = (folder / "vadd_wrong.py").read_text()
    lock = RecordingLock()
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=2, timeout_s=20,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   gpu_lock=lock) as ev:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda args: ev.evaluate("vadd", args[0], seed=args[1]),
                                    [(good, 0), (wrong, 0), (good, 1), (wrong, 1)]))
    assert [r.status for r in results] == ["ok", "incorrect", "ok", "incorrect"]
    assert all(r.ms and r.ms > 0 for r in results if r.status == "ok")
    assert lock.state == (0, False)
    # replay the log: an exclusive hold never overlaps anything else
    assert_exclusive_alone(lock.events)
    assert lock.events.count("+x") == 2  # the two correct candidates were timed
    for r in results:  # waits are part of the overhead, split by what was waited for
        if r.status == "ok":
            assert r.pool_wait_s < 1e-3 and r.shared_wait_s >= 0 and r.timing_wait_s >= 0
            assert (r.pool_wait_s + r.shared_wait_s + r.yield_wait_s + r.timing_wait_s
                    <= r.worker_overhead_s)
    # compiling holds nothing; the correct ones checked under the shared side, one turn per
    # shape (D95), and a wrong one that fails its first, compiling check never asks for it
    assert lock.events.count("+s") >= 2 and lock.events.count("+s") == lock.events.count("-s")


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

    from live.evaluator.messages import EvaluateRequest
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

    request = EvaluateRequest(task_spec=SPEC, task_name="vadd", seed=7, n_seeds=2,
                              code=(HERE / "vadd_good.py").read_text(), exclusive_timing=True)
    response = runner.evaluate(request, tmp_path, on_compiled=lambda: events.append("compiled"),
                               await_turn=await_turn)
    assert response.status == "ok", response
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
    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=20),
                   gpu_lock=GpuLock()) as ev:
        assert ev.device_info.get("quick_autotune") is True
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=20)) as ev:
        assert "quick_autotune" not in ev.device_info



def test_a_check_lets_the_lock_go_while_it_makes_each_shape_s_inputs() -> None:
    """D95: after compiling, a candidate's check holds the shared side only while it runs a
    shape (the inputs of the next one are made with the lock let go), then times alone; the
    waits to come back are reported apart (yield_wait_s), and the judgement is unchanged."""
    from pathlib import Path

    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    folder = Path(__file__).parent / "fixtures" / "candidates"
    lock = RecordingLock()
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=20,
                                   compile_timeout_s=60, memory_limit_mb=8192), gpu_lock=lock,
                   memory_plan=False) as ev:
        good = ev.evaluate("vadd", (folder / "vadd_good.py").read_text(), seed=0)
        wrong = ev.evaluate("vadd", (folder / "vadd_wrong.py").read_text(), seed=0)
    assert good.status == "ok", good.error
    assert wrong.status == "incorrect"
    first = lock.events[:lock.events.index("-x") + 1]
    assert first[-2:] == ["+x", "-x"]
    shared_turns = first.count("+s")
    assert shared_turns >= 3 and first.count("-s") == shared_turns  # one turn per shape
    assert first[:-2] == ["+s", "-s"] * shared_turns  # never holding across a shape's inputs
    assert lock.state == (0, False)
    for result in (good, wrong):
        assert result.yield_wait_s is not None and result.yield_wait_s >= 0.0
        assert result.setup_s is not None and result.setup_s >= 0.0
    assert good.prep_s is not None and good.prep_s >= 0.0
    # the longest shape held the shared side for part of the check; no test code of its own
    assert good.longest_shape_s is not None and 0.0 < good.longest_shape_s <= good.check_s
    assert good.source_check_s is None


def test_a_check_s_time_limit_spans_its_shapes_though_it_lets_the_lock_go() -> None:
    """D95: a check that lets the lock go between shapes still has one time limit for all of
    them (each shape under the limit, their sum over it: a timeout), as before."""
    from pathlib import Path

    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    good = (Path(__file__).parent / "fixtures" / "candidates" / "vadd_good.py").read_text()
    # slow in its first six calls (the compiling check and five more shapes), fast when timed
    slow = good.replace("def vadd(x, y, out):\n",
                        "_calls = [0]\n\n\ndef vadd(x, y, out):\n    import time\n"
                        "    _calls[0] += 1\n    if _calls[0] <= 6:\n        time.sleep(0.6)\n")
    assert slow != good
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=2.0,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   gpu_lock=RecordingLock(), memory_plan=False) as ev:
        result = ev.evaluate("vadd", slow, seed=0)
    # five shapes after the compiling one, 0.6 s each: 3 s of checking against a 2 s limit
    assert result.status == "timeout", (result.status, result.error)
    assert "run exceeded 2 s" in str(result.error)
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=4.0,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   gpu_lock=RecordingLock(), memory_plan=False) as ev:
        assert ev.evaluate("vadd", slow, seed=0).status == "ok"  # within a 4 s limit


def test_the_lock_raises_its_step_aside_signal_while_closed_on_readers() -> None:
    """D97: the signal goes up when the lock closes with shared holders inside, and down when
    it opens again; a close at a quiet point (no reader inside) leaves it down."""
    from live.evaluator.gpu_lock import StepAsideSignal

    signal = StepAsideSignal()
    try:
        lock = GpuLock(batch=1, patience_s=60.0)
        lock.attach_signal(signal)
        assert lock.step_aside and not signal.raised
        lock.acquire_shared()
        log: list[str] = []
        writer = Holder(lock, "x", "w", log)
        assert _until(lambda: signal.raised)  # closed for the writer, a reader inside
        lock.release_shared()  # the reader steps aside
        assert writer.entered.wait(2)
        assert writer.done()
        assert _until(lambda: not signal.raised)  # open again
        assert signal.raised_count == 1
        with lock.exclusive():  # a quiet point: no reader to ask
            assert not signal.raised
        assert signal.raised_count == 1
    finally:
        signal.close()
    assert not Path(signal.path).exists()


def test_a_long_check_steps_aside_for_a_timing_mid_shape() -> None:
    """D97: a check in the middle of a 6 s shape lets the shared side go at its next torch
    call once another candidate's timing waits, and comes back after it: the timing waits
    milliseconds, not for the shape, and still never overlaps a check."""
    from concurrent.futures import ThreadPoolExecutor

    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    folder = Path(__file__).parent / "fixtures" / "candidates"
    good = (folder / "vadd_good.py").read_text()
    # its second call (the first shape checked under the lock) spins on torch calls for 6 s
    slow = spinning(good, call=2)
    assert slow != good
    lock = RecordingLock()
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=2, timeout_s=60,
                                   compile_timeout_s=60, memory_limit_mb=8192,
                                   timing_patience_s=0.0, timing_batch=1), gpu_lock=lock,
                   memory_plan=False) as ev:
        with ThreadPoolExecutor(2) as pool:
            long_check = pool.submit(lambda: ev.evaluate("vadd", slow, seed=0))
            # inside its long shape: the shared side's third turn (the first check's, the one
            # before the shapes, then the spinning shape's), held to the spin's end. Any earlier
            # and the timing could fall between two turns, where there is nothing to step
            # aside from
            assert _until(lambda: lock.events.count("+s") >= 3, timeout_s=60.0)
            began = time.perf_counter()
            quick = pool.submit(lambda: ev.evaluate("vadd", good, seed=1)).result()
            quick_s = time.perf_counter() - began
            stepped = long_check.result()
    assert quick.status == "ok" and stepped.status == "ok", (quick.error, stepped.error)
    assert quick_s < 5.0  # done while the long shape still ran
    assert quick.timing_wait_s is not None and quick.timing_wait_s < 1.5
    assert stepped.step_asides is not None and stepped.step_asides >= 1
    assert quick.step_asides == 0
    # the time it stood aside is the timing's, not the check's
    assert stepped.yield_wait_s is not None and stepped.yield_wait_s > 0.0
    assert_exclusive_alone(lock.events)
    assert lock.state == (0, False)


def test_step_aside_lets_go_at_a_safe_point_and_around_compilations() -> None:
    """D97, the worker's side: with the signal down a torch call goes on; with it up the check
    waits for its GPU work, lets the shared side go and asks for it again; a Triton
    compilation runs with the shared side let go, taken again after it or at the next safe
    point if the compiler raised; nothing happens while the check is off the lock anyway."""
    import torch

    from live.evaluator.gpu_lock import StepAsideSignal
    from live.evaluator.step_aside import StepAside

    signal = StepAsideSignal()
    turns: list[str] = []

    def await_turn(kind: str) -> bool:
        turns.append(kind)
        if kind == "shared":  # granted once the timings are served and the lock opens again
            signal.set(False)
        return True

    try:
        with StepAside(signal.path, await_turn, lambda: turns.append("sync")) as aside:
            torch.add(torch.ones(2), 1)
            assert turns == [] and aside.steps == 0
            signal.set(True)
            torch.add(torch.ones(2), 1)  # a safe point: step aside
            assert turns == ["sync", "release", "shared"] and aside.steps == 1
            turns.clear()
            aside._before_compile()  # Triton's jit_cache_hook: compile off the lock
            assert turns == ["sync", "release"]
            aside._after_compile()
            assert turns == ["sync", "release", "shared"] and aside.compiles_off_lock == 1
            turns.clear()
            aside._before_compile()  # the compiler raised: no post-compile hook ...
            torch.zeros(1)  # ... the next torch call takes the shared side again first
            assert turns == ["sync", "release", "shared"] and aside.compiles_off_lock == 2
            turns.clear()
            aside.holding = False  # making a shape's inputs off the lock (D95)
            signal.set(True)
            torch.zeros(1)
            aside._before_compile()
            assert turns == []
        signal.set(True)
        torch.zeros(1)  # outside the check: no safe point
        assert turns == []
    finally:
        signal.close()


def test_step_aside_notes_a_parent_that_went_away() -> None:
    import torch

    from live.evaluator.gpu_lock import StepAsideSignal
    from live.evaluator.step_aside import StepAside, gone

    signal = StepAsideSignal()
    try:
        with StepAside(signal.path, lambda kind: False, lambda: None) as aside:
            signal.set(True)
            with pytest.raises(Exception) as raised:
                torch.zeros(1)
            assert gone(raised.value) and aside.lost
    finally:
        signal.close()


def test_the_lock_records_each_close() -> None:
    """Each close is recorded with its reason, the readers inside, how long they took to
    drain and how many writers it served (the runner writes them to gpu-lock.jsonl)."""
    lock = GpuLock(batch=1, patience_s=60.0)
    with lock.exclusive():  # a quiet point
        pass
    lock.acquire_shared()
    log: list[str] = []
    writer = Holder(lock, "x", "w", log, stay=False)
    time.sleep(0.2)
    lock.release_shared()
    assert writer.entered.wait(2) and writer.done()
    assert _until(lambda: len(lock.closes()) == 2)
    quiet, batch = lock.closes()
    assert quiet["reason"] == "quiet" and quiet["readers"] == 0 and quiet["served"] == 1
    assert batch["reason"] == "batch" and batch["readers"] == 1 and batch["served"] == 1
    assert 0.15 <= float(batch["drain_s"]) <= float(batch["closed_s"])


def test_the_first_check_runs_under_the_shared_side_and_steps_aside() -> None:
    """D97: the first check (TritonBench-G's is a whole perf shape) takes the shared side at its
    first torch call instead of running beside timings; a timing asked for meanwhile waits
    only until it steps aside."""
    from concurrent.futures import ThreadPoolExecutor

    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    folder = Path(__file__).parent / "fixtures" / "candidates"
    good = (folder / "vadd_good.py").read_text()
    # its first call (the first check, before any other turn) spins on torch calls for 6 s
    slow = spinning(good, call=1)
    lock = RecordingLock()
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=2, timeout_s=60,
                                   compile_timeout_s=60, memory_limit_mb=8192,
                                   timing_patience_s=0.0, timing_batch=1), gpu_lock=lock,
                   memory_plan=False) as ev:
        with ThreadPoolExecutor(2) as pool:
            long_check = pool.submit(lambda: ev.evaluate("vadd", slow, seed=0))
            assert _until(lambda: "+s" in lock.events, timeout_s=60.0)  # its first check
            quick = pool.submit(lambda: ev.evaluate("vadd", good, seed=1)).result()
            stepped = long_check.result()
    assert quick.status == "ok" and stepped.status == "ok", (quick.error, stepped.error)
    assert stepped.step_asides is not None and stepped.step_asides >= 1
    assert quick.timing_wait_s is not None and quick.timing_wait_s < 1.5
    # the spin is the first check's, so it is in compile_s, less the wait while aside
    assert stepped.compile_s is not None and stepped.compile_s >= 5.0
    assert_exclusive_alone(lock.events)
    assert lock.state == (0, False)
