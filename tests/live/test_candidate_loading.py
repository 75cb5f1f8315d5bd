"""One way to load a candidate (`live.evaluator.loader.load_candidate`): the evaluator's worker,
the self-check and the profiler's target program give a whole TritonBench-G operator file (its
kernel and its test code) and its code part the same verdict, and all leave dropped shapes out."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from live.evaluator import Evaluator, EvaluatorConfig
from live.evaluator.loader import CandidateLoadError, forget_candidate, load_candidate
from live.evaluator.task_source import resolve_task
from live.profiler.target import prepare
from live.tasks.base import ShapeVerdict, Task
from live.tasks.findings import TaskFindings
from live.tasks.selfcheck import selfcheck
from live.tasks.tritonbench.operator import code_part
from tests.live.fixtures.candidates.tiny_tasks import TASKS

MINI = Path(__file__).parent / "fixtures" / "tritonbench_mini"
SPEC = f"tritonbench:{MINI}"
WHOLE = (MINI / "TritonBench_G_mini" / "add.py").read_text()


def small_vadd() -> Task:
    """The tiny vector add with four small perf shapes (the target runs one on the CPU)."""
    return dataclasses.replace(TASKS[0], perf_shapes=[{"N": n} for n in (64, 96, 128, 160)])


@pytest.fixture(scope="module")
def evaluator(tritonbench_mini_cache) -> Iterator[Evaluator]:
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=60,
                                   compile_timeout_s=60)) as ev:
        yield ev


def test_whole_operator_file_and_its_code_part_get_one_verdict_everywhere(
        evaluator: Evaluator, tmp_path: Path) -> None:
    task = resolve_task(SPEC, "tritonbench/add")
    part = code_part(WHOLE)
    assert "result_gold = test_add()" in WHOLE and "result_gold" not in part
    # the evaluator's worker (sandboxed, its own process)
    statuses = [evaluator.evaluate(task.name, code, seed=0).status for code in (WHOLE, part)]
    assert statuses == ["ok", "ok"]
    # the in-process self-check
    checks = [selfcheck(task, "cpu", source=code) for code in (WHOLE, part)]
    assert [c.ok for c in checks] == [True, True], [c.failures for c in checks]
    # the profiler's target program: both load, compile and run once
    paths = []
    for number, code in enumerate((WHOLE, part)):
        path = tmp_path / f"candidate_{number}.py"
        path.write_text(code)
        paths.append((number, str(path)))
    prepared = prepare(task, paths, drop_shapes=[], shape_index=None, device="cpu")
    assert prepared.failed == [] and [n for n, _ in prepared.loaded] == [0, 1]
    for number, _ in prepared.loaded:
        forget_candidate(f"kb_profiled_{number}")


def test_a_broken_code_part_fails_alike_in_a_whole_file_and_alone(evaluator: Evaluator) -> None:
    task = resolve_task(SPEC, "tritonbench/add")
    whole = WHOLE.replace("def add(x", "def add(x,,")
    part = code_part(whole)
    results = [evaluator.evaluate(task.name, code, seed=0) for code in (whole, part)]
    assert [r.status for r in results] == ["compile_error", "compile_error"]
    assert results[0].error == results[1].error
    checks = [selfcheck(task, "cpu", source=code) for code in (whole, part)]
    assert [c.error for c in checks] == [checks[0].error] * 2
    assert checks[0].error is not None and "SyntaxError" in checks[0].error


def test_load_candidate_leaves_out_the_dropped_shapes() -> None:
    task = small_vadd()
    n = len(task.perf_shapes)
    loaded = load_candidate(task, task.k0, drop_shapes=[0])
    forget_candidate(loaded.module_name)
    assert loaded.perf_kept == tuple(range(1, n))
    verdicts = {n - 1: ShapeVerdict("dropped", "the gold code runs out of memory")}
    loaded = load_candidate(task, task.k0, drop_shapes=[0],
                            findings=TaskFindings(shape_verdicts=verdicts))
    forget_candidate(loaded.module_name)
    assert loaded.perf_kept == tuple(range(1, n - 1))


def test_a_destination_passing_candidate_without_its_entry_is_refused() -> None:
    task = small_vadd()
    with pytest.raises(CandidateLoadError, match="defines no callable"):
        load_candidate(task, "x = 1\n")
    result = selfcheck(task, "cpu", source="x = 1\n")
    assert result.error is not None and "defines no callable" in result.error


def test_the_profiler_target_runs_a_shape_that_is_not_dropped(tmp_path: Path) -> None:
    task = small_vadd()
    n = len(task.perf_shapes)
    path = tmp_path / "candidate_0.py"
    path.write_text(task.k0)
    middle = (n - 1) // 2
    kept = [i for i in range(n) if i != middle]
    prepared = prepare(task, [(0, str(path))], drop_shapes=[middle], shape_index=None,
                       device="cpu")
    forget_candidate("kb_profiled_0")
    assert prepared.shape_index == kept[(len(kept) - 1) // 2] != middle
    assert prepared.failed == []
    prepared = prepare(task, [(0, str(path))], drop_shapes=list(range(n)), shape_index=None,
                       device="cpu")
    assert prepared.shape_index is None and prepared.loaded == []
    assert prepared.failed == [(0, "every perf shape is dropped")]
