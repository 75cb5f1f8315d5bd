"""KernelBench as a task source (``kernelbench:PATH``): discovery and selectors, the reference
and its inputs, the shortcut rules of the static check, and candidates judged end to end by the
evaluator on the CPU (Triton's interpreter), on a tiny problem set of our own in KernelBench's
format (``fixtures/kernelbench_mini``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kernelband.cli import main
from live.tasks.kernelbench.shortcuts import op_family, reference_ops, shortcut_check
from live.tasks.kernelbench.task import INPUT_SETS, gold_candidate
from live.tasks.registry import load_tasks, resolve_task
from live.tasks.sources import LoadOptions

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "kernelbench_mini"
SOLUTIONS = FIXTURES / "kernelbench_solutions"
SPEC = f"kernelbench:{MINI}"
RELU = "kernelbench/level1/1_ReLU"
#: the benchmark itself, where this machine has it (never needed: the test using it skips)
REAL = Path(os.environ.get("KERNELBENCH_DIR", Path(__file__).parents[3] / "shared" / "benchmarks"
                           / "kernelbench"))
CPU = LoadOptions(device="cpu")


def names(spec: str) -> list[str]:
    return [task.name for task in load_tasks(spec, CPU).tasks]


def test_discovery_names_every_problem_by_level_and_file() -> None:
    assert names(SPEC) == ["kernelbench/level1/1_ReLU", "kernelbench/level1/2_Matmul",
                           "kernelbench/level1/3_Sum_over_a_dimension",
                           "kernelbench/level2/1_Linear_GELU"]


@pytest.mark.parametrize(("selector", "expected"), [
    ("level1", ["1_ReLU", "2_Matmul", "3_Sum_over_a_dimension"]),
    ("level1:2-3", ["2_Matmul", "3_Sum_over_a_dimension"]),
    ("level1:2", ["2_Matmul"]),
    ("level2", ["1_Linear_GELU"]),
    ("level1/1_ReLU,level2", ["1_ReLU", "1_Linear_GELU"]),
])
def test_selectors(selector: str, expected: list[str]) -> None:
    assert [n.rsplit("/", 1)[1] for n in names(f"{SPEC}@{selector}")] == expected


def test_json_selector_with_k0_files(tmp_path: Path) -> None:
    k0 = tmp_path / "relu_k0.py"
    k0.write_text((SOLUTIONS / "relu_good.py").read_text())
    listing = tmp_path / "picked.json"
    listing.write_text(json.dumps({"problems": ["level1/1_ReLU", "level1/2_Matmul"],
                                   "k0": {"level1/1_ReLU": "relu_k0.py"}}))
    loaded = load_tasks(f"{SPEC}@{listing}", CPU)
    assert [t.name for t in loaded.tasks] == [RELU, "kernelbench/level1/2_Matmul"]
    assert loaded.tasks[0].k0 == k0.read_text()
    assert "class ModelNew(Model)" in loaded.tasks[1].k0  # no k0 given: the gold code
    # a worker rebuilds the same task from the canonical spec, in another directory
    from live.tasks.registry import canonical_spec

    rebuilt = resolve_task(canonical_spec(f"{SPEC}@{listing}"), RELU)
    assert rebuilt.k0 == k0.read_text()


@pytest.mark.parametrize(("selector", "message"), [
    ("level4", "unknown level"),
    ("level1:50-60", "names no problem"),
    ("level1/99_Nothing", "neither a level"),
    ("missing.json", "not found"),
])
def test_bad_selectors_say_why(selector: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_tasks(f"{SPEC}@{selector}", CPU)


def test_a_file_that_is_no_problem_is_skipped_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_ReLU.py").write_text((MINI / "level1" / "1_ReLU.py").read_text())
    (tmp_path / "level1" / "2_Broken.py").write_text("import torch\n\ndef get_inputs():\n"
                                                     "    return []\n")
    loaded = load_tasks(f"kernelbench:{tmp_path}", CPU)
    assert [t.name for t in loaded.tasks] == [RELU]
    assert loaded.skipped_pairs == [("level1/2_Broken",
                                     "the problem file defines no Model, get_init_inputs")]


def test_task_follows_kernelbench_protocol() -> None:
    task = resolve_task(SPEC, RELU)
    assert task.entry == "ModelNew" and task.call_style == "returns"
    assert len(task.test_shapes) == len(task.cpu_shapes) == INPUT_SETS == 5
    assert task.tolerance("float32") == task.tolerance("float16") == (1e-2, 1e-2)
    sets = [task.make_inputs(dict(shape), 0, "cpu")[0] for shape in task.cpu_shapes]
    assert all(not torch.equal(a, b) for i, a in enumerate(sets) for b in sets[i + 1:])
    again = task.make_inputs(dict(task.cpu_shapes[2]), 0, "cpu")[0]
    assert torch.equal(again, sets[2])  # seeded
    assert not torch.equal(task.make_inputs(dict(task.cpu_shapes[2]), 1, "cpu")[0], sets[2])
    (x,) = task.make_inputs({}, 0, "cpu")
    assert torch.equal(task.reference(x), torch.relu(x))


def test_models_are_built_under_one_seed() -> None:
    """The reference and a candidate that makes its parameters the same way start equal."""
    from live.tasks.loading import import_source

    task = resolve_task(SPEC, "kernelbench/level2/1_Linear_GELU")
    (x,) = task.make_inputs({}, 0, "cpu")
    gold = import_source(task.k0, "gold")
    (out,) = task.hooks.run(gold, (x,))
    assert torch.equal(out, task.reference(x))


def test_op_families() -> None:
    assert {op_family(n) for n in ("mm", "addmm", "linear", "Linear", "matmul")} == {"matmul"}
    assert {op_family(n) for n in ("Conv2d", "conv2d", "conv_transpose3d",
                                   "ConvTranspose2d", "convolution")} == {"conv"}
    assert op_family("ReLU") == op_family("relu_") == "relu"
    assert op_family("BatchNorm2d") == "batch_norm"


def test_reference_ops_follow_the_forward_path() -> None:
    assert set(reference_ops((MINI / "level1" / "2_Matmul.py").read_text())) == {"matmul"}
    assert set(reference_ops((MINI / "level2" / "1_Linear_GELU.py").read_text())) == {
        "matmul", "gelu"}
    sequential = ("import torch.nn as nn\nclass Model(nn.Module):\n"
                  "    def __init__(self):\n        super().__init__()\n"
                  "        layers = [nn.Linear(4, 4), nn.ReLU()]\n"
                  "        self.net = nn.Sequential(*layers)\n"
                  "    def forward(self, x):\n        return self.net(x)\n")
    assert set(reference_ops(sequential)) == {"matmul", "relu"}


#: (solution file, problem, static-check verdict: a phrase of the reason, or None)
STATIC_CASES = [
    ("relu_good.py", "level1/1_ReLU.py", None),
    ("relu_torch_fallback.py", "level1/1_ReLU.py", "calls torch.relu"),
    ("relu_no_kernel.py", "level1/1_ReLU.py", "never launches"),
    ("relu_cached.py", "level1/1_ReLU.py", "returns self.out"),
    ("relu_cached_hidden.py", "level1/1_ReLU.py", None),  # caught at run time instead
    ("relu_wrong_shape.py", "level1/1_ReLU.py", None),
    ("relu_in_place.py", "level1/1_ReLU.py", None),
    ("matmul_good.py", "level1/2_Matmul.py", None),
    ("matmul_fallback.py", "level1/2_Matmul.py", "calls @"),
    ("linear_gelu_good.py", "level2/1_Linear_GELU.py", None),
    ("linear_gelu_module_fallback.py", "level2/1_Linear_GELU.py", "an nn.Linear submodule"),
]


@pytest.mark.parametrize(("solution", "problem", "verdict"), STATIC_CASES)
def test_shortcut_rules(solution: str, problem: str, verdict: str | None) -> None:
    problem_source = (MINI / problem).read_text()
    found = shortcut_check((SOLUTIONS / solution).read_text(), problem_source)
    if verdict is None:
        assert found is None
    else:
        assert found is not None and verdict in found


@pytest.mark.parametrize("code, phrase", [
    ("import triton\n@triton.jit\ndef k(x):\n    pass\n"
     "class ModelNew:\n    def forward(self, x):\n        k[(1,)](x)\n"
     "        return self.helper(x)\n"
     "    @staticmethod\n    def helper(x):\n        return x\n", None),
    ("import torch.nn as nn\nimport triton\n@triton.jit\ndef k(x):\n    pass\n"
     "CACHE = {}\n"
     "class ModelNew(nn.Module):\n    def forward(self, x):\n        k[(1,)](x)\n"
     "        CACHE[x.shape] = x\n        return x\n", "module-level CACHE"),
    ("import functools\nimport triton\n@triton.jit\ndef k(x):\n    pass\n"
     "@functools.lru_cache\ndef run(x):\n    k[(1,)](x)\n    return x\n"
     "class ModelNew:\n    def forward(self, x):\n        return run(x)\n", "lru_cache"),
    ("import triton\n@triton.jit\ndef k(x):\n    pass\n"
     "class ModelNew:\n    def forward(self, x):\n        return x\n", "never launches"),
    ("import torch\n", "defines no class ModelNew"),
    ("import triton\n@triton.jit\ndef k(x):\n    pass\n"
     "def launch(x):\n    k[(1,)](x)\n    return x\n"
     "class ModelNew:\n    def __init__(self):\n        self.op = launch\n"
     "    def forward(self, x):\n        return self.op(x)\n", None),
])
def test_shortcut_rules_follow_calls(code: str, phrase: str | None) -> None:
    found = shortcut_check(code, (MINI / "level1" / "1_ReLU.py").read_text())
    assert (found is None) if phrase is None else (found is not None and phrase in found)


def test_gold_code_is_no_solution() -> None:
    """The problem's own code as a candidate (the gold-vs-gold k0) launches no kernel: the
    static check refuses it, though it passes every correctness check."""
    source = (MINI / "level1" / "1_ReLU.py").read_text()
    assert "never launches" in shortcut_check(gold_candidate(source), source)


def test_tasks_list_on_cpu_reads_without_running() -> None:
    result = CliRunner().invoke(main, ["tasks", "list", "--tasks", f"{SPEC}@level1",
                                       "--device", "cpu"])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.strip().splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [(RELU, "elementwise"),
                                            ("kernelbench/level1/2_Matmul", "matmul"),
                                            ("kernelbench/level1/3_Sum_over_a_dimension",
                                             "reduction")]


@pytest.mark.skipif(not (REAL / "level1").is_dir(),
                    reason=f"the KernelBench folder is not on this machine ({REAL}; set "
                           "KERNELBENCH_DIR to point at one)")
def test_real_level1_lists_100_tasks() -> None:
    result = CliRunner().invoke(main, ["tasks", "list", "--tasks", f"kernelbench:{REAL}@level1",
                                       "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert len(record["tasks"]) == 100 and not record["skipped"]
    assert "kernelbench/level1/19_ReLU" in record["tasks"]
