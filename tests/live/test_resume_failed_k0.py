"""NOTE (D86): a resumed run does not evaluate again a k0 that failed on its own in the recorded
run (the task stopped there), but does one that the machine stopped (timeout, killed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbsim.trace.reader import validate_trace
from live.evaluator import EvalResult, kernel_id
from live.evaluator.result import TimedResult
from live.proposers import make_proposer
from live.runner import RunConfig
from live.runner.resume import RecordedRun
from live.runner.runner import LiveRunner
from live.tasks.registry import resolve_tasks

TASKS = "add,softmax"


class K0Evaluator:
    """`add`'s k0 fails as told; everything else is correct, its time from its hash."""

    device = "cpu"
    device_info: dict = {"device_name": None}

    # the rest of live.evaluator.CandidateEvaluator: no memory plan, no lock, no notes
    memory_plan_info = None
    gpu_lock_info = None
    session_memory = None

    def shape_notes(self, task_name: str) -> list[str]:
        return []

    def __init__(self, k0_status: str, k0_error: str) -> None:
        self.tasks = {t.name: t for t in resolve_tasks(TASKS)}
        self.k0_status, self.k0_error = k0_status, k0_error
        self.calls: list[tuple[str, bool]] = []

    def evaluate(self, task_name: str, code: str, *, seed: int = 0) -> EvalResult:
        task = self.tasks[task_name]
        kid = kernel_id(code)
        self.calls.append((task_name, code == task.k0))
        if task_name == "add" and code == task.k0:
            return EvalResult(status=self.k0_status, kernel_id=kid, task_id=task_name,
                              error=self.k0_error)
        ms = 0.1 + int(kid[:6], 16) / 16**6
        shape_ms = tuple(ms for _ in task.perf_shapes)
        timed = TimedResult(ms=sum(shape_ms), shape_ms=shape_ms, ref_ms=1.0, phi=(1.0,) * 5,
                            runtime_vec=(0.5,) * 6,
                            shapes=tuple(dict(s) for s in task.perf_shapes))
        return EvalResult(status="ok", kernel_id=kid, task_id=task_name, correct=True,
                          timing_backend="cpu-interpreter", timed=timed, eval_latency_s=0.0)

    def close(self) -> None:
        pass


def _run(out: Path, evaluator: K0Evaluator, resume: bool = False) -> None:
    config = RunConfig(out=str(out), tasks=TASKS, policy="explore", steps=2, seed=0,
                       device="cpu", profile="off", in_flight=1)
    LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=evaluator,
               resume=resume).run()
    assert validate_trace(out) == []


@pytest.mark.parametrize(("status", "error", "again"), [
    ("incorrect", "output 0: 3/64 elements differ", False),
    ("runtime_error", "illegal memory access", False),
    ("runtime_error", "worker died: signal 11 (SIGSEGV)", False),
    ("timeout", "run exceeded 120 s; worker killed", True),
    ("runtime_error", "worker died: signal 9 (SIGKILL)", True),
    ("runtime_error", "memory limit exceeded: host memory 33024 MB > limit 32768 MB", True),
])
def test_a_resumed_run_evaluates_a_failed_k0_again_only_if_the_machine_stopped_it(
        tmp_path: Path, status: str, error: str, again: bool) -> None:
    out = tmp_path / "t"
    _run(out, K0Evaluator(status, error))
    rows = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows if r["task_id"] == "add"] == [status]
    second = K0Evaluator(status, error)
    _run(out, second, resume=True)
    # softmax finished in the first run: nothing of it is evaluated again
    assert second.calls == ([("add", True)] if again else [])


def test_recorded_failures_are_forgotten_once_the_kernel_passed() -> None:
    rows = [{"run_id": "r", "task_id": "t", "kernel_id": "k", "status": "incorrect",
             "error": "x"},
            {"run_id": "r", "task_id": "t", "kernel_id": "k", "status": "ok"},
            {"run_id": "r", "task_id": "t", "kernel_id": "j", "status": "compile_error",
             "error": "SyntaxError"},
            {"run_id": "other", "task_id": "t", "kernel_id": "i", "status": "incorrect"}]
    run = RecordedRun([], [], {}, "r", evaluations=rows)
    assert run.own_failure("t", "k") is None
    assert run.own_failure("t", "j") == "compile_error: SyntaxError"
    assert run.own_failure("t", "i") is None  # another run's


class FixedK0Evaluator(K0Evaluator):
    """`add`'s k0 passes now (an evaluator fix): every kernel is correct."""

    def evaluate(self, task_name: str, code: str, *, seed: int = 0) -> EvalResult:
        self.calls.append((task_name, code == self.tasks[task_name].k0))
        return _correct(self, task_name, code)


def _correct(ev: K0Evaluator, task_name: str, code: str) -> EvalResult:
    task = ev.tasks[task_name]
    kid = kernel_id(code)
    ms = 0.1 + int(kid[:6], 16) / 16**6
    shape_ms = tuple(ms for _ in task.perf_shapes)
    timed = TimedResult(ms=sum(shape_ms), shape_ms=shape_ms, ref_ms=1.0, phi=(1.0,) * 5,
                        runtime_vec=(0.5,) * 6, shapes=tuple(dict(s) for s in task.perf_shapes))
    return EvalResult(status="ok", kernel_id=kid, task_id=task_name, correct=True,
                      timing_backend="cpu-interpreter", timed=timed, eval_latency_s=0.0)


def test_retry_k0_evaluates_a_failed_k0_again_and_a_passing_one_starts_its_task(
        tmp_path: Path) -> None:
    out = tmp_path / "t"
    _run(out, K0Evaluator("incorrect", "output 0: 3/64 elements differ"))
    config = RunConfig(out=str(out), tasks=TASKS, policy="explore", steps=2, seed=0,
                       device="cpu", profile="off", in_flight=1, retry_k0=True)
    fixed = FixedK0Evaluator("incorrect", "unused")
    LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=fixed,
               resume=True).run()
    assert validate_trace(out) == []
    assert fixed.calls[0] == ("add", True)  # the recorded failure did not stop it
    assert all(task == "add" for task, _ in fixed.calls)  # softmax was finished
    from kbsim.trace.reader import load_trace

    data = load_trace(out)
    add_steps = [r for r in data.steps.to_pylist() if r["task_id"] == "add"]
    assert len([r for r in add_steps if r["status"] != "not_applicable"]) == 2
    # the run is the same run: the flag is not in its manifest
    manifest = json.loads((out / "manifest.json").read_text())
    assert "retry_k0" not in manifest["config"]


def test_retry_k0_needs_resume(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kernelband.cli import main

    result = CliRunner().invoke(main, ["live", "--tasks", "add", "--proposer", "mutate",
                                       "--device", "cpu", "--out", str(tmp_path / "x"),
                                       "--retry-k0"])
    assert result.exit_code == 2
    assert "--retry-k0 needs --resume" in result.output
