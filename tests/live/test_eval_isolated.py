"""Named kernelband functions in parallel sandboxed workers (live.evaluator.isolated)."""

from __future__ import annotations

from pathlib import Path

from live.evaluator.isolated import Call, run_calls

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
