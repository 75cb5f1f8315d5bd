"""The evaluator on a TritonBench-G operator (call_style "returns", source_check) on CPU."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from live.evaluator import Evaluator, EvaluatorConfig
from live.evaluator.task_source import resolve_task

MINI = Path(__file__).parent / "fixtures" / "tritonbench_mini"
SPEC = f"tritonbench:{MINI}"


@pytest.fixture(scope="module")
def evaluator(tritonbench_mini_cache) -> Iterator[Evaluator]:
    # the evaluator reads the gold checks' per-shape verdicts from the module's copy of the
    # session's check cache (tests/live/conftest.py), not from the user's
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=60, compile_timeout_s=60)) as ev:
        yield ev


def test_gold_operator_is_ok_and_timed_against_gold(evaluator: Evaluator) -> None:
    task = resolve_task(SPEC, "tritonbench/add")
    result = evaluator.evaluate(task.name, task.k0, seed=0)
    assert result.status == "ok", result.error
    assert result.timing_backend == "cpu-interpreter" and result.ms > 0
    # where the check's time went: its own test code, run whole, and its longest perf shape
    assert result.source_check_s is not None and 0.0 < result.source_check_s <= result.check_s
    if result.longest_shape_s is not None:
        assert 0.0 < result.longest_shape_s <= result.check_s


def test_wrong_operator_fails_its_own_test_code(evaluator: Evaluator) -> None:
    task = resolve_task(SPEC, "tritonbench/add")
    wrong = task.k0.replace("x + y, mask=mask", "x * y, mask=mask")
    assert wrong != task.k0
    result = evaluator.evaluate(task.name, wrong, seed=0)
    assert result.status == "incorrect"
    assert "output 0" in result.error or "source check" in result.error


def test_every_k0_that_passes_at_load_passes_the_evaluator(evaluator: Evaluator,
                                                           tritonbench_mini_load) -> None:
    # the session's load_tritonbench(MINI, device="cpu") from an empty cache
    tasks, skipped = tritonbench_mini_load.tasks, tritonbench_mini_load.skipped
    assert len(tasks) >= 5 and skipped  # the fixture has both kinds
    for task in tasks:
        result = evaluator.evaluate(task.name, task.k0, seed=3)
        assert result.status == "ok", (task.name, result.error)
