"""Host-memory admission (NOTE D84): no new work starts while the host is short of memory and
other work runs; work always progresses; the reserve comes from the host or the environment."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from live.evaluator.host_memory import RESERVE_ENV, HostRoom, default_reserve_bytes, total_bytes
from live.evaluator.isolated import Call, run_calls
from live.tasks.base import TaskHooks
from tests.live.fixtures.calls import failures

PLAIN = "live.tasks.tritonbench.script.run_plain_script"
GIB = 2**30


def _stamping_script(path: Path, marks: Path, name: str, sleep_s: float) -> str:
    path.write_text(
        "import pathlib, time\n"
        f"pathlib.Path({str(marks)!r}, {name + '_start'!r}).write_text(str(time.time()))\n"
        f"time.sleep({sleep_s})\n"
        f"pathlib.Path({str(marks)!r}, {name + '_end'!r}).write_text(str(time.time()))\n")
    return str(path)


def _spans(marks: Path, names: list[str]) -> list[tuple[float, float]]:
    return sorted((float((marks / f"{n}_start").read_text()),
                   float((marks / f"{n}_end").read_text())) for n in names)


@pytest.mark.parametrize("short", [True, False])
def test_calls_start_one_at_a_time_while_the_host_is_short(tmp_path: Path, short: bool) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    names = ["a", "b", "c"]
    calls = [Call(n, PLAIN, {"operator_path": _stamping_script(tmp_path / f"{n}.py", marks, n,
                                                                1.0)}, 60) for n in names]
    available = 4 * GIB if short else 64 * GIB
    room = HostRoom(8 * GIB, probe=lambda: available, poll_s=0.05)
    results = run_calls(calls, device="cpu", workers=3, host_room=room)
    assert all(r["status"] == "ok" for r in results.values()), failures(results)
    spans = _spans(marks, names)
    overlapping = any(later[0] < earlier[1]
                      for earlier, later in zip(spans, spans[1:], strict=False))
    if short:
        # the first call starts (nothing else runs), each other one waits for the one before
        assert not overlapping
        # a thread whose call ended may take the next one itself, without waiting; one that
        # was held back waited for at least one call to end
        waits = [r["host_wait_s"] for r in results.values() if "host_wait_s" in r]
        assert len(waits) <= 2 and all(wait > 0.5 for wait in waits)
        info = room.info()
        assert info["host_held_back"] == len(waits)
        assert info["host_waited_s"] == pytest.approx(sum(waits), abs=0.01)
        assert info["host_reserve_gib"] == 8.0 and info["host_lowest_available_gib"] == 4.0
    else:
        assert overlapping
        assert all("host_wait_s" not in r for r in results.values())
        assert room.info()["host_held_back"] == 0


def test_a_start_waits_until_memory_comes_back_or_nothing_runs() -> None:
    available = [1 * GIB]
    running = [2]
    room = HostRoom(2 * GIB, probe=lambda: available[0], poll_s=0.01)
    assert room.wait(lambda: 0) == 0.0  # nothing else runs: go, short or not

    def free_later() -> None:
        running[0] = 1  # one of the two ends: still short, still waiting
        threading.Event().wait(0.2)
        available[0] = 3 * GIB

    threading.Timer(0.1, free_later).start()
    assert room.wait(lambda: running[0]) >= 0.25
    assert room.info()["host_held_back"] == 1
    assert HostRoom(0, probe=lambda: 0).room()  # a reserve of 0: admission off
    closed = HostRoom(2 * GIB, probe=lambda: 0, poll_s=0.01)
    assert closed.wait(lambda: 1, closed=lambda: True) < 0.5  # a closing evaluator goes on


def test_the_reserve_is_a_share_of_the_host_or_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RESERVE_ENV, raising=False)
    assert 0 < default_reserve_bytes() <= min(total_bytes() // 8, 32 * GIB)
    monkeypatch.setenv(RESERVE_ENV, "1.5")
    assert default_reserve_bytes() == int(1.5 * GIB)
    monkeypatch.setenv(RESERVE_ENV, "lots")
    with pytest.raises(ValueError, match="must be a number of GiB"):
        default_reserve_bytes()
    with pytest.raises(ValueError, match="reserve_bytes must be >= 0"):
        HostRoom(-1)


def test_the_evaluator_starts_no_evaluation_beside_another_while_the_host_is_short() -> None:
    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    folder = Path(__file__).parent / "fixtures" / "candidates"
    good = (folder / "vadd_good.py").read_text()
    room = HostRoom(8 * GIB, probe=lambda: 1 * GIB, poll_s=0.02)
    spans: list[tuple[float, float]] = []

    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=2, timeout_s=20,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   host_room=room) as ev:
        def one(seed: int) -> str:
            import time

            result = ev.evaluate("vadd", good, seed=seed)
            end = time.perf_counter()
            spans.append((end - result.eval_latency_s, end))
            return result.status

        with ThreadPoolExecutor(2) as pool:
            statuses = list(pool.map(one, [0, 1]))
    assert statuses == ["ok", "ok"]
    assert room.info()["host_held_back"] == 1
    first, second = sorted(spans)
    assert second[0] >= first[1] - 0.05  # the second started after the first had ended


@pytest.mark.parametrize("short", [True, False])
def test_a_worker_drops_its_last_task_s_host_inputs_when_it_switches_while_short(
        monkeypatch: pytest.MonkeyPatch, short: bool) -> None:
    import live.evaluator.run_candidate as run_candidate
    from live.evaluator.worker import _device_info

    released: list[str] = []

    class FakeTask:
        def __init__(self, name: str) -> None:
            self.name = name
            self.hooks = TaskHooks(release=self.release)

        def release(self) -> None:
            released.append(self.name)

    monkeypatch.setattr(run_candidate, "resolve_task", lambda spec, name: FakeTask(name))
    monkeypatch.setattr(run_candidate, "host_short", lambda: short)
    runner = run_candidate.CandidateRunner("cpu", _device_info("cpu"))
    for name in ["a", "a", "b", "b", "a"]:
        assert runner._task("spec", name).name == name
    # only on a switch, only the task it leaves, only while the host is short
    assert released == (["a", "b"] if short else [])


def test_a_front_call_starts_before_the_calls_waiting(tmp_path: Path) -> None:
    """D92's queue: a follow-up marked `front` runs next, ahead of the calls already queued."""
    from dataclasses import replace

    marks = tmp_path / "marks"
    marks.mkdir()
    calls = [Call(n, PLAIN, {"operator_path": _stamping_script(tmp_path / f"{n}.py", marks, n,
                                                                0.0)}, 60) for n in "abc"]
    again = replace(calls[0], key="a-again", front=True)
    results = run_calls(calls, device="cpu", workers=1,
                        follow_up=lambda call, result: again if call.key == "a" else None)
    assert all(r["status"] == "ok" for r in results.values()), failures(results)
    # one worker: "a", then its follow-up (which stamps as "a" again), then "b" and "c"
    order = sorted(["a", "b", "c"], key=lambda n: float((marks / f"{n}_start").read_text()))
    assert order == ["a", "b", "c"] and "a-again" in results
    assert float((marks / "a_end").read_text()) < float((marks / "b_start").read_text())


needs_oom_adj = pytest.mark.skipif(not Path("/proc/self/oom_score_adj").exists(),
                                   reason="no /proc/<pid>/oom_score_adj (not Linux)")


@needs_oom_adj
def test_the_kill_order_goes_from_the_oldest_process_to_the_youngest_and_its_children() -> None:
    import subprocess
    import sys

    from live.evaluator.host_memory import KILL_ORDER_SPAN, set_kill_order

    def adj(pid: int) -> int:
        return int(Path(f"/proc/{pid}/oom_score_adj").read_text())

    parent_code = ("import subprocess, sys, time; "
                   "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                   "time.sleep(60)")
    procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
             subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
             subprocess.Popen([sys.executable, "-c", parent_code])]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        import psutil

        youngest = psutil.Process(procs[2].pid)
        for _ in range(200):  # its child starts
            if youngest.children():
                break
            threading.Event().wait(0.05)
        child = youngest.children()[0].pid
        done = set_kill_order([procs[0].pid, gone.pid, procs[1].pid, procs[2].pid])
        # four ranks (the process that is gone keeps its place), the child as its parent
        assert done == 4
        assert [adj(p.pid) for p in procs] == [0, round(KILL_ORDER_SPAN * 2 / 3),
                                               KILL_ORDER_SPAN]
        assert adj(child) == KILL_ORDER_SPAN
        set_kill_order([procs[2].pid])  # alone it is the oldest: back to 0
        assert adj(procs[2].pid) == 0 and adj(child) == 0
    finally:
        for proc in procs:
            for kid in psutil.Process(proc.pid).children(recursive=True):
                kid.kill()
            proc.kill()
            proc.wait()


def _adj_reading_script(path: Path, marks: Path, name: str, names: list[str]) -> str:
    """A script that waits for the others to run, records its oom_score_adj, and waits until
    each has recorded its own before it ends (so every reading sees all of them running)."""
    path.write_text(
        "import pathlib, time\n"
        f"marks = pathlib.Path({str(marks)!r})\n"
        f"names = {names!r}\n"
        "def wait_for(suffix):\n"
        "    deadline = time.time() + 60\n"
        "    while not all((marks / (n + suffix)).exists() for n in names):\n"
        "        assert time.time() < deadline\n"
        "        time.sleep(0.02)\n"
        f"(marks / {name + '_up'!r}).write_text('')\n"
        "wait_for('_up')\n"
        "time.sleep(0.3)\n"
        f"(marks / {name + '_adj'!r}).write_text(open('/proc/self/oom_score_adj').read())\n"
        "wait_for('_adj')\n")
    return str(path)


@needs_oom_adj
@pytest.mark.parametrize("admission", [True, False])
def test_running_calls_are_ranked_for_the_out_of_memory_killer_by_age(
        tmp_path: Path, admission: bool) -> None:
    """D93: with host admission, the oldest running call's worker gets 0, the youngest 1000."""
    marks = tmp_path / "marks"
    marks.mkdir()
    names = ["a", "b", "c"]
    calls = [Call(n, PLAIN, {"operator_path": _adj_reading_script(tmp_path / f"{n}.py", marks, n,
                                                                  names)}, 120) for n in names]
    room = HostRoom(0) if admission else None
    results = run_calls(calls, device="cpu", workers=3, host_room=room)
    assert all(r["status"] == "ok" for r in results.values()), failures(results)
    adjs = {n: int((marks / f"{n}_adj").read_text()) for n in names}
    if admission:
        assert sorted(adjs.values()) == [0, 500, 1000]
    else:
        own = int(Path("/proc/self/oom_score_adj").read_text())
        assert set(adjs.values()) == {own}  # inherited, untouched


@pytest.mark.parametrize("admission", [True, False])
def test_an_evaluation_whose_worker_the_system_kills_runs_again(admission: bool) -> None:
    """D94: a SIGKILL the evaluator did not send (the host's out-of-memory killer) is the
    machine's failure: with admission (a GPU host) the candidate is evaluated once more, in a
    replaced worker; a second kill, or no admission, is the result."""
    import os
    import signal

    import psutil

    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    good = (Path(__file__).parent / "fixtures" / "candidates" / "vadd_good.py").read_text()
    slow = "import time\ntime.sleep(1.5)\n" + good  # long enough to be killed while loading
    room = HostRoom(0) if admission else False
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=30,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   host_room=room) as ev:
        assert ev.device_info  # the worker is up
        kills: list[int] = []

        def serving(pid: int) -> bool:
            """The worker runs a candidate (it works in a candidate's folder)."""
            try:
                return "cand-" in psutil.Process(pid).cwd()
            except psutil.Error:
                return False

        def kill_running(times: int) -> None:
            for _ in range(times):
                for _ in range(1000):  # a worker not killed yet loads the candidate
                    pids = ev.kill_order.pids() if ev.kill_order is not None else [
                        w.proc.pid for w in ev._all]
                    if pids and pids[0] not in kills and serving(pids[0]):
                        break
                    threading.Event().wait(0.02)
                threading.Event().wait(0.3)  # into its 1.5 s of loading
                os.kill(pids[0], signal.SIGKILL)
                kills.append(pids[0])

        killer = threading.Thread(target=kill_running, args=(1,))
        killer.start()
        result = ev.evaluate("vadd", slow, seed=0)
        killer.join()
        if admission:
            assert result.status == "ok", result.error
            assert ev.killed_by_system == 1 and ev.workers_started == 2
            assert ev.kill_order is not None and ev.kill_order.pids() == []
            # killed twice: the second death is the result
            killer = threading.Thread(target=kill_running, args=(2,))
            killer.start()
            twice = ev.evaluate("vadd", slow + "\n# again\n", seed=0)
            killer.join()
            assert twice.status == "runtime_error" and "(SIGKILL)" in str(twice.error)
            assert ev.killed_by_system == 2
        else:
            assert result.status == "runtime_error" and "(SIGKILL)" in str(result.error)
            assert ev.killed_by_system == 0


@pytest.mark.parametrize("admission", [True, False])
def test_a_worker_the_system_kills_while_it_starts_is_replaced(
        admission: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """D94: the youngest process is the killer's first pick, so a worker can die while it
    imports torch. With admission (a GPU host) the evaluation starts another worker and goes
    on; without, the failure to start is raised as before."""
    import os
    import signal

    from live.evaluator import Evaluator, EvaluatorConfig
    from live.evaluator.sandbox import WorkerProcess
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    # the first worker's settings are held back, so it is still starting when it is killed: a
    # worker forked from the fork server (torch imported already) is otherwise ready within
    # milliseconds, and the kill below could come after its "ready"
    send, held = WorkerProcess.send, []

    def hold_first_settings(worker: WorkerProcess, message: object) -> bool:
        if not held:
            held.append(message)
            return True
        return send(worker, message)

    monkeypatch.setattr(WorkerProcess, "send", hold_first_settings)
    good = (Path(__file__).parent / "fixtures" / "candidates" / "vadd_good.py").read_text()
    room = HostRoom(0) if admission else False
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=30,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   host_room=room) as ev:
        (first,) = list(ev._all)
        os.kill(first.proc.pid, signal.SIGKILL)  # still importing torch: not ready yet
        first.proc.wait(timeout=10)
        if admission:
            result = ev.evaluate("vadd", good, seed=0)
            assert result.status == "ok", result.error
            assert ev.killed_by_system == 1 and ev.workers_started == 2
            assert first not in ev._all and len(ev._all) == 1
        else:
            with pytest.raises(RuntimeError, match=r"failed to start \(died\).*SIGKILL"):
                ev.evaluate("vadd", good, seed=0)
            assert ev.killed_by_system == 0
