"""Every built-in task's k0 passes its own CPU self-check; broken variants are caught."""

from __future__ import annotations

import ast

import pytest

from live.tasks.registry import BUILTIN_TASKS, builtin_task
from live.tasks.selfcheck import selfcheck


@pytest.mark.parametrize("name", BUILTIN_TASKS)
def test_k0_passes_its_cpu_selfcheck(name: str) -> None:
    task = builtin_task(name)
    result = selfcheck(task, "cpu")
    assert result.ok, result.failures
    assert len(result.checks) == len(task.cpu_shapes) >= 1
    assert result.seconds < 20  # the interpreter is slow; tiny shapes keep this well under 2 s


@pytest.mark.parametrize("name", BUILTIN_TASKS)
def test_k0_is_written_in_the_mutable_style(name: str) -> None:
    """Block sizes are constexpr parameters fed from module constants, launch options are
    explicit, nothing is autotuned: the form the mutate proposer rewrites."""
    task = builtin_task(name)
    tree = ast.parse(task.k0)
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    constants = {target.id for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)}
    assert task.entry in functions
    assert any(c.startswith("BLOCK_") for c in constants)
    assert "tl.constexpr" in task.k0
    assert "num_warps=4" in task.k0 and "num_stages=" in task.k0
    assert "autotune" not in task.k0


@pytest.mark.parametrize("name", BUILTIN_TASKS)
def test_shapes_and_roofline_counts(name: str) -> None:
    task = builtin_task(name)
    assert len(task.perf_shapes) >= 3 and task.test_shapes and task.cpu_shapes
    assert task.bytes_moved is not None and task.flops is not None
    for shape in task.perf_shapes:
        assert task.bytes_moved(shape) > 0
        assert task.flops(shape) >= 0
    # a perf shape moves far more bytes than a CPU shape
    assert min(map(task.bytes_moved, task.perf_shapes)) > 100 * max(
        map(task.bytes_moved, task.cpu_shapes))


def test_suite_spans_the_regimes() -> None:
    categories = {builtin_task(name).category for name in BUILTIN_TASKS}
    assert len(BUILTIN_TASKS) >= 12
    assert {"elementwise", "reduction", "scan", "transpose", "gather", "quantization", "matmul",
            "attention"} <= categories


def test_inputs_are_seeded_and_device_independent() -> None:
    task = builtin_task("layernorm")
    shape = task.cpu_shapes[0]
    first, again, other = (task.make_inputs(shape, seed, "cpu") for seed in (3, 3, 4))
    assert all(a.equal(b) for a, b in zip(first[:3], again[:3], strict=True))
    assert not first[0].equal(other[0])


# (task, replace this, with that, words the failure must contain)
BROKEN_VARIANTS = [
    ("softmax", "/ denominator", "/ (denominator + 1.0)", "elements differ"),
    ("matmul_fp16", "range(0, K, BLOCK_K)", "range(0, K - BLOCK_K, BLOCK_K)", "elements differ"),
    ("matmul_bf16", "acc += tl.dot(a, b)", "acc += tl.dot(a, b) * 1.05", "elements differ"),
    # a grid one tile short leaves NaN-poisoned elements unwritten
    ("transpose", "triton.cdiv(n_rows, BLOCK_M)", "n_rows // BLOCK_M", "elements differ"),
    # an integer output that is never written keeps its sentinel
    ("quantize_int8", "tl.store(q_row + cols, rounded.to(tl.int8), mask=mask)", "pass",
     "output 0"),
    ("add", "tl.store(out_ptr + offsets, x + alpha * y, mask=mask)",
     "tl.store(out_ptr + offsets, x + alpha * y, mask=mask)\n"
     "    tl.store(x_ptr + offsets, y, mask=mask)",
     "input 0 was modified"),
    ("cumsum", "carry += tl.sum(x, axis=0)", "carry += 0.0", "elements differ"),
    ("attention", "acc = acc * correction[:, None] + ", "acc = acc + ", "elements differ"),
    # the entry function is missing
    ("layernorm", "def layernorm(", "def layer_norm(", "raised AttributeError"),
]


@pytest.mark.parametrize(("name", "old", "new", "words"), BROKEN_VARIANTS,
                         ids=[v[0] for v in BROKEN_VARIANTS])
def test_broken_k0_variant_fails(name: str, old: str, new: str, words: str) -> None:
    task = builtin_task(name)
    assert old in task.k0
    result = selfcheck(task, "cpu", source=task.k0.replace(old, new))
    assert not result.ok
    assert any(words in line for line in result.failures), result.failures


def test_source_that_does_not_import_is_reported() -> None:
    result = selfcheck(builtin_task("add"), "cpu", source="def add(:\n")
    assert not result.ok and result.checks == ()
    assert result.error is not None and result.error.startswith("source does not import")


def test_the_runner_s_process_loads_every_built_in_task_without_torch() -> None:
    """`kernelband live`'s own process loads the tasks and plans, its workers run them: torch
    stays out of it (it cost each start ~2 s of CPU: #36), whatever imports it at the top."""
    import subprocess
    import sys

    code = ("import sys\n"
            "import kernelband.cli.live, live.runner.runner\n"
            "from live.tasks.registry import load_tasks\n"
            "from live.tasks.sources import LoadOptions\n"
            "tasks = load_tasks('builtin', LoadOptions(device='cpu')).tasks\n"
            "print(len(tasks), 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.split() == [str(len(BUILTIN_TASKS)), "False"], done.stdout
