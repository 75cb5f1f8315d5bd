"""The live runner's parts, wired once from its config (`live.runner.wiring`), and the
interfaces they meet (`CandidateEvaluator`, `KernelProfiler`, `Proposer`)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import pytest

from live.evaluator import CandidateEvaluator, Evaluator, EvaluatorConfig
from live.profiler import NcuProfiler
from live.profiler.interface import KernelProfiler
from live.proposers import make_proposer
from live.proposers.base import Proposer
from live.runner import RunConfig
from live.runner.wiring import eval_workers, wire

RUNNER = Path(__file__).resolve().parents[2] / "live" / "runner"


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvaluatorConfig("add", device="cpu", workers=1, timeout_s=60)) as ev:
        yield ev


def test_the_local_parts_meet_the_runner_s_interfaces(evaluator):
    assert isinstance(evaluator, CandidateEvaluator)
    assert isinstance(NcuProfiler("add", device="cpu", quiet=True), KernelProfiler)
    assert isinstance(make_proposer("mutate"), Proposer)


def test_a_given_evaluator_on_a_locked_device_is_used_one_evaluation_at_a_time(tmp_path,
                                                                               evaluator):
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", device="cpu", profile="reps")
    parts = wire(config, 1, evaluator=evaluator, device_lock=True)
    assert parts.evaluator is evaluator and not parts.owns_evaluator
    assert parts.gpu_lock is None
    assert isinstance(parts.serial_lock, type(threading.Lock()))
    # the profiler made here holds the same device, and shares the evaluator's memory pool
    assert isinstance(parts.profiler, NcuProfiler)
    assert parts.profiler.device_gate is not None
    assert parts.profiler.device_gate() is parts.device_alone() is parts.serial_lock
    assert parts.profiler.session_memory is evaluator.session_memory is None


def test_a_given_profiler_is_kept_and_none_is_made_without_profiling(tmp_path, evaluator):
    given = NcuProfiler("add", device="cpu", quiet=True)
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", device="cpu", profile="all")
    assert wire(config, 1, evaluator=evaluator, profiler=given).profiler is given
    off = RunConfig(out=str(tmp_path / "t"), tasks="add", device="cpu", profile="roofline")
    parts = wire(off, 1, evaluator=evaluator)
    assert parts.profiler is None and parts.gpu_lock is None  # CPU: no device lock


@pytest.mark.parametrize(("asked", "expected"), [(0, 1), (3, 3)])
def test_a_cpu_run_starts_one_evaluator_worker_unless_asked(tmp_path, asked, expected):
    config = RunConfig(out=str(tmp_path), device="cpu", in_flight=4, eval_workers=asked)
    assert eval_workers(config, n_tasks=5) == expected


def test_the_runner_probes_none_of_its_parts():
    """No getattr/hasattr on the evaluator, profiler or proposer in live/runner/ (issue 39):
    they meet their interfaces instead."""
    parts = ("evaluator", "profiler", "proposer")
    found = []
    for path in sorted(RUNNER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and node.args
                    and any(part in ast.unparse(node.args[0]) for part in parts)):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
