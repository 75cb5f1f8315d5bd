"""TritonBench-G test code that keeps its results under another name than ``result_gold``
(as the upstream benchmark's files do): the test's returned or last-built results dict is
compared, on hand-written operators (the mini checkout's ``add`` with other test code)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from live.tasks.tritonbench import SEPARATOR, load_tritonbench
from live.tasks.tritonbench.format import CAPTURED_NAME, results_variable
from live.tasks.tritonbench.operator import result_gold_of

MINI = Path(__file__).parent / "fixtures" / "tritonbench_mini"
ADD = (MINI / "TritonBench_G_mini" / "add.py").read_text()
CODE = ADD.split(SEPARATOR)[0]
BODY = """
import torch


def test_add():
    torch.manual_seed(0)
    results = {}
    x = torch.rand(100, device='cuda')
    y = torch.rand(100, device='cuda')
    results['test_case_1'] = add(x, y)
    x = torch.randn(37, device='cuda')
    results['test_case_2'] = add(x, -x)
    return results

"""
#: test code variants: (test code, the name its results are read from)
VARIANTS = {
    "result_gold": (BODY + "\nresult_gold = test_add()\n", "result_gold"),
    "returned_under_another_name": (BODY + "\ntest_results = test_add()\nprint('done')\n",
                                    "test_results"),
    "returned_and_dropped": (BODY + "\ntest_add()\n", CAPTURED_NAME),
    "module_level_dict": ("""
import torch

torch.manual_seed(0)
results = {}
x = torch.rand(100, device='cuda')
results['test_case_1'] = add(x, x)
summary = 'one case'
""", "results"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_results_variable_names_where_the_results_are(variant: str) -> None:
    test_code, expected = VARIANTS[variant]
    code, name = results_variable(test_code)
    assert name == expected
    if variant == "returned_and_dropped":  # one line changed, nothing else
        assert code.replace(f"{CAPTURED_NAME} = ", "") == test_code
    else:
        assert code == test_code


def test_test_code_without_results_says_so() -> None:
    code, name = results_variable("import torch\n\nprint('nothing kept')\n")
    assert name is None
    with pytest.raises(ValueError, match="leaves no results"):
        result_gold_of(CODE, "import torch\n\nprint('nothing kept')\n", "cpu", "tb_none")


@pytest.mark.parametrize("variant", ["returned_under_another_name", "returned_and_dropped"])
def test_results_under_another_name_are_the_test_returns(variant: str) -> None:
    expected = result_gold_of(CODE, VARIANTS["result_gold"][0], "cpu", "tb_gold")
    got = result_gold_of(CODE, VARIANTS[variant][0], "cpu", f"tb_{variant}")
    assert set(got) == set(expected) == {"test_case_1", "test_case_2"}
    for key in expected:
        assert torch.equal(got[key], expected[key])


def test_module_level_results_dict() -> None:
    got = result_gold_of(CODE, VARIANTS["module_level_dict"][0], "cpu", "tb_module_dict")
    assert set(got) == {"test_case_1"}


def test_operators_load_and_judge_candidates_by_their_own_results(tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tb"
    shutil.copytree(MINI, root)
    perf = (root / "perf" / "add_perf.py").read_text()
    ops = {"add_named": "returned_under_another_name", "add_dropped": "returned_and_dropped"}
    for op, variant in ops.items():
        (root / "TritonBench_G_mini" / f"{op}.py").write_text(
            CODE + SEPARATOR + "\n" + VARIANTS[variant][0])
        (root / "perf" / f"{op}_perf.py").write_text(
            perf.replace("TritonBench_G_mini.add import", f"TritonBench_G_mini.{op} import"))
    tasks, skipped = load_tritonbench(root, device="cpu", ops=sorted(ops))
    assert not skipped
    assert sorted(t.name for t in tasks) == ["tritonbench/add_dropped", "tritonbench/add_named"]
    task = next(t for t in tasks if t.name == "tritonbench/add_named")
    assert task.hooks.source_check is not None
    assert task.hooks.source_check(task.k0, "cpu") is None  # gold vs gold
    wrong = task.k0.replace("x + y", "x - y")
    problem = task.hooks.source_check(wrong, "cpu")
    assert problem is not None and "test_case_1" in problem


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_only_operators_without_result_gold_are_checked_again(variant: str) -> None:
    """The rule for other names changed what a check does only for test code that does not
    bind ``result_gold``: only those operators' check-cache keys changed, so the verdicts kept
    for the others (a recording's seeded check cache) are still read."""
    from live.tasks.tritonbench import ADAPTER_VERSION, _item
    from live.tasks.tritonbench.format import OperatorSource

    test_code, name = VARIANTS[variant]
    source = OperatorSource("add", CODE, test_code, MINI / "TritonBench_G_mini" / "add.py", None)
    assert (ADAPTER_VERSION in _item(source).contents) == (name != "result_gold")
