"""Named kernelband functions in parallel sandboxed workers (live.evaluator.isolated)."""

from __future__ import annotations

from pathlib import Path

from live.evaluator.isolated import Call, run_calls
from tests.live.fixtures.calls import failures

OPERATORS = Path(__file__).parent / "fixtures" / "tritonbench_mini" / "TritonBench_G_mini"
PLAIN = "live.tasks.tritonbench.script.run_plain_script"


def test_a_crash_is_confined_follow_ups_run_and_foreign_functions_are_refused() -> None:
    calls = [Call("crash", PLAIN, {"operator_path": str(OPERATORS / "crash_op.py")}, 60),
             Call("add", PLAIN, {"operator_path": str(OPERATORS / "add.py")}, 60),
             Call("foreign", "os.system", {"command": "true"}, 60)]
    seen: list[str] = []

    def follow_up(call: Call, result: dict) -> Call | None:
        if call.key == "add":
            return Call("add again", PLAIN, {"operator_path": str(OPERATORS / "row_sum.py")}, 60)
        return None

    results = run_calls(calls, device="cpu", workers=2,
                        on_result=lambda call, result: seen.append(call.key),
                        follow_up=follow_up)
    assert results["crash"]["status"] == "crashed"
    assert "worker died: signal 11" in results["crash"]["error"]
    assert results["add"]["status"] == "ok" and results["add again"]["status"] == "ok"
    assert results["foreign"]["status"] == "error" and "refused" in results["foreign"]["error"]
    assert sorted(seen) == ["add", "add again", "crash", "foreign"]
    assert all(result["wall_s"] > 0 for result in results.values())


def test_a_fresh_call_gets_a_newly_started_worker_and_follow_ups_may_be_several() -> None:
    """A worker that passed a check is kept for the next call, unless that call asks for a
    fresh one (a second check after a failure its worker's state may explain, D87)."""
    gold = "live.gold.judge.gold_check_in_worker"
    spec = f"tritonbench:{OPERATORS.parent}"

    def check(key: str, op: str, fresh: bool = False) -> Call:
        return Call(key, gold, {"task_spec": spec, "task_name": f"tritonbench/{op}"}, 120,
                    fresh=fresh)

    def follow_up(call: Call, result: dict) -> list[Call] | None:
        if call.key == "first":
            return [check("kept", "row_sum"), check("fresh", "add", fresh=True)]
        return None

    results = run_calls([check("first", "add")], device="cpu", workers=1,
                        follow_up=follow_up)
    assert [results[k]["status"] for k in ("first", "kept", "fresh")] == ["ok"] * 3, results
    assert results["first"]["worker_pid"] == results["kept"]["worker_pid"]
    assert results["fresh"]["worker_pid"] != results["kept"]["worker_pid"]


def _script(path: Path, body: str) -> str:
    path.write_text("import os, pathlib, time\n" + body)
    return str(path)


def test_tail_calls_wait_for_the_queue_run_one_at_a_time_with_their_own_settings(
        tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    stamp = ("from live.evaluator.settings import worker_settings\n"
             "def stamp(name):\n"
             f"    (pathlib.Path({str(marks)!r}) / name).write_text("
             "f\"{time.time()} {worker_settings().gpu_workers}\")\n")
    # `slow` runs until the first tail call has started: that one starts beside it
    slow = _script(tmp_path / "slow.py", stamp + (
        f"while not (pathlib.Path({str(marks)!r}) / 't0_start').exists():\n"
        "    time.sleep(0.05)\nstamp('slow_end')\n"))
    quick = _script(tmp_path / "quick.py", stamp + "stamp('quick')\n")
    # t0 runs 2 s (slow ends and quick is done meanwhile); nothing waits on t1's end
    tail = [_script(tmp_path / f"t{i}.py", stamp + f"stamp('t{i}_start')\n"
                    f"time.sleep({2 - 2 * i})\nstamp('t{i}_end')\n") for i in (0, 1)]

    def tail_call(i: int) -> Call:
        return Call(f"t{i}", PLAIN, {"operator_path": tail[i]}, 60, tail=True,
                    memory_limit_mb=8192, gpu_workers=1)

    def follow_up(call: Call, result: dict) -> Call | None:
        return tail_call(1) if call.key == "t0" else None

    results = run_calls([tail_call(0), Call("slow", PLAIN, {"operator_path": slow}, 60),
                         Call("quick", PLAIN, {"operator_path": quick}, 60)],
                        device="cpu", workers=3, follow_up=follow_up)
    assert all(r["status"] == "ok" for r in results.values()), failures(results)
    times = {p.name: float(p.read_text().split()[0]) for p in marks.iterdir()}
    workers = {p.name: p.read_text().split()[1] for p in marks.iterdir()}
    # queued first, the tail call still waited for the others to start; one tail at a time
    assert times["t0_start"] < times["slow_end"] and times["t0_end"] <= times["t1_start"]
    assert results["t0"]["beside"] >= 1 and results["t1"]["beside"] == 0
    # tail calls run in workers of their own, with their own settings
    assert workers["t0_start"] == workers["t1_start"] == "1" and workers["quick"] == "3"


def test_a_call_past_its_overtime_queues_another_beside_it(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    stamp = ("def stamp(name):\n"
             f"    (pathlib.Path({str(marks)!r}) / name).write_text(str(time.time()))\n")
    slow = _script(tmp_path / "slow.py", stamp + "time.sleep(6)\nstamp('slow_end')\n")
    quick = _script(tmp_path / "quick.py", stamp + "stamp('quick')\n")
    extra = _script(tmp_path / "extra.py", stamp + "stamp('extra')\n")
    asked: list[str] = []

    def overtime(call: Call) -> Call | None:
        asked.append(call.key)
        return Call("extra", PLAIN, {"operator_path": extra}, 60)

    results = run_calls([Call("slow", PLAIN, {"operator_path": slow}, 60, overtime_s=2.0),
                         Call("quick", PLAIN, {"operator_path": quick}, 60, overtime_s=30.0)],
                        device="cpu", workers=2, overtime=overtime)
    assert all(r["status"] == "ok" for r in results.values()), failures(results)
    times = {p.name: float(p.read_text()) for p in marks.iterdir()}
    # asked once, for the call that ran past its overtime; the extra call ran beside it, in
    # the worker that had finished `quick` (it waited for an overtime instead of leaving)
    assert asked == ["slow"] and times["extra"] < times["slow_end"]
