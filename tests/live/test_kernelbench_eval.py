"""`kernelband eval` and the evaluator on KernelBench tasks (CPU, Triton's interpreter): a
correct Triton solution passes; the known shortcuts are classified: a torch fallback and an
output cached in ``self`` are rejected before they run, an output cached where the static check
does not look fails the five input sets, a wrong shape and a changed input are incorrect."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelband.cli import main
from live.evaluator import Evaluator, EvaluatorConfig

FIXTURES = Path(__file__).parent / "fixtures"
SPEC = f"kernelbench:{FIXTURES / 'kernelbench_mini'}"
SOLUTIONS = FIXTURES / "kernelbench_solutions"
RELU = "kernelbench/level1/1_ReLU"


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", static_check=True, timeout_s=120,
                                   compile_timeout_s=120)) as ev:
        yield ev


#: (solution, task, status, a phrase of the error)
CASES = [
    ("relu_good.py", RELU, "ok", None),
    ("matmul_good.py", "kernelbench/level1/2_Matmul", "ok", None),
    ("linear_gelu_good.py", "kernelbench/level2/1_Linear_GELU", "ok", None),
    ("relu_torch_fallback.py", RELU, "rejected", "torch fallback"),
    ("relu_no_kernel.py", RELU, "rejected", "Triton kernel"),
    ("matmul_fallback.py", "kernelbench/level1/2_Matmul", "rejected", "torch fallback"),
    ("linear_gelu_module_fallback.py", "kernelbench/level2/1_Linear_GELU", "rejected",
     "nn.Linear"),
    ("relu_cached.py", RELU, "rejected", "kept from an earlier call"),
    ("relu_cached_hidden.py", RELU, "incorrect", "elements differ"),
    ("relu_wrong_shape.py", RELU, "incorrect", "shape (768,) != expected (8, 96)"),
    ("relu_in_place.py", RELU, "incorrect", "input 0 was modified"),
]


@pytest.mark.parametrize(("solution", "task", "status", "phrase"), CASES)
def test_solutions_are_classified(evaluator: Evaluator, solution: str, task: str, status: str,
                                  phrase: str | None) -> None:
    result = evaluator.evaluate(task, (SOLUTIONS / solution).read_text(), seed=0)
    assert result.status == status, result.error
    if phrase is not None:
        assert phrase in (result.error or "")
    if status == "ok":
        assert result.correct and result.ms is not None and result.ref_ms is not None


def test_gold_code_passes_its_own_checks(evaluator: Evaluator) -> None:
    """Gold vs gold (the static check off, as at load time): the reference as a candidate
    passes KernelBench's five input sets and ours on every fixture problem."""
    from live.tasks.registry import resolve_tasks

    evaluator.static_check = False
    try:
        for task in resolve_tasks(SPEC):
            result = evaluator.evaluate(task.name, task.k0, seed=0)
            assert result.status == "ok", (task.name, result.error)
    finally:
        evaluator.static_check = True


def test_eval_command_classifies() -> None:
    runner = CliRunner()
    base = ["--task", RELU, "--tasks", SPEC, "--device", "cpu"]
    good = runner.invoke(main, ["eval", str(SOLUTIONS / "relu_good.py"), *base])
    assert good.exit_code == 0, good.output
    assert json.loads(good.output)["status"] == "ok"
    fallback = runner.invoke(main, ["eval", str(SOLUTIONS / "relu_torch_fallback.py"), *base])
    assert fallback.exit_code == 1
    assert json.loads(fallback.output)["status"] == "rejected"
    unchecked = runner.invoke(main, ["eval", str(SOLUTIONS / "relu_torch_fallback.py"), *base,
                                     "--no-static-check"])
    assert json.loads(unchecked.output)["status"] == "ok"  # what the static check is for
