"""The TritonBench-G adapter on a hand-written mini checkout (tests/live/fixtures)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

import pytest
import torch

from live.tasks.registry import resolve_task, resolve_tasks, resolve_tasks_and_skipped
from live.tasks.selfcheck import selfcheck
from live.tasks.tritonbench import (
    SEPARATOR,
    discover,
    load_tritonbench,
    retarget,
    split_operator_file,
    tritonbench_task,
)

MINI = Path(__file__).parent / "fixtures" / "tritonbench_mini"


@pytest.fixture(scope="module")
def loaded():
    return load_tritonbench(MINI, device="cpu")


def test_operator_files_split_at_the_146_hash_line() -> None:
    code, test = split_operator_file(f"a = 1\n{SEPARATOR}\nresult_gold = a\n")
    assert (code, test) == ("a = 1\n", "result_gold = a\n")
    assert split_operator_file("a = 1\n" + "#" * 145 + "\n") is None


def test_discover_pairs_operators_with_perf_scripts() -> None:
    sources = {s.op: s for s in discover(MINI)}
    assert set(sources) == {"add", "row_sum", "noisy_scale"}  # performance_utils is no operator
    assert sources["add"].perf_path.name == "add_perf.py"
    assert "result_gold = test_add()" in sources["add"].test_code
    assert SEPARATOR not in sources["add"].code


def test_gold_vs_gold_keeps_good_operators_and_reports_the_broken_one(loaded) -> None:
    tasks, skipped = loaded
    assert [t.name for t in tasks] == ["tritonbench/add", "tritonbench/row_sum"]
    assert [op for op, _ in skipped] == ["noisy_scale"]
    assert "gold-vs-gold check failed" in skipped[0][1]
    # noisy_scale draws from the global RNG: whichever check runs into the difference first
    # (its own result_gold, or the outputs on the performance inputs) reports it, depending on
    # the RNG state earlier tests left behind
    assert "result_gold" in skipped[0][1] or "elements differ" in skipped[0][1]


def test_tasks_follow_the_returns_convention(loaded) -> None:
    add = loaded[0][0]
    assert add.call_style == "returns" and add.entry == "add"
    assert add.k0.startswith("import torch") and "result_gold" not in add.k0
    assert add.source == f"tritonbench:{MINI.resolve()}"
    assert len(add.perf_shapes) == 9 and add.cpu_shapes == [{"index": 0}, {"index": 1}]
    # bytes and FLOPs come from the script's get_gbps / get_tflops at 1 ms
    n = 2 ** 22 + 3
    assert add.bytes_moved({"index": 8}) == 3 * 4 * n
    assert add.flops({"index": 8}) == n


def test_inputs_are_seeded_and_single_tensor_entries_work(loaded) -> None:
    add, row_sum = loaded[0]
    x0, y0 = add.make_inputs({"index": 1}, 0, "cpu")
    x1, _ = add.make_inputs({"index": 1}, 0, "cpu")
    x2, _ = add.make_inputs({"index": 1}, 1, "cpu")
    assert x0.equal(x1) and not x0.equal(x2) and x0.shape == (2 ** 8 + 3,)
    (matrix,) = row_sum.make_inputs({"index": 0}, 0, "cpu")
    (out,) = row_sum.reference(matrix)
    assert torch.allclose(out, matrix.sum(dim=1), atol=1e-5)


def test_spec_and_worker_rebuild(loaded, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="live.tasks.registry"):
        names = [t.name for t in resolve_tasks(f"tritonbench:{MINI}")]
    assert names == ["tritonbench/add", "tritonbench/row_sum"]
    assert "skipped TritonBench operator noisy_scale: gold-vs-gold" in caplog.text
    tasks, skipped = resolve_tasks_and_skipped(f"tritonbench:{MINI}")
    assert len(tasks) == 2 and skipped[0][0] == "noisy_scale"
    for name in ("add", "tritonbench/add"):
        assert resolve_task(f"tritonbench:{MINI}", name).name == "tritonbench/add"
    with pytest.raises(ValueError, match="no TritonBench operator 'mul'"):
        resolve_task(f"tritonbench:{MINI}", "mul")


def test_wrong_candidate_fails_result_gold(loaded) -> None:
    add = loaded[0][0]
    wrong = add.k0.replace("x + y", "x - y")
    result = selfcheck(add, "cpu", source=wrong)
    assert not result.ok and "result_gold" in result.failures[0]


def test_candidate_matching_result_gold_but_not_perf_inputs_fails(loaded) -> None:
    add = loaded[0][0]
    # correct on the test code's sizes (<= 1000 elements), wrong on larger performance inputs
    sloppy = add.k0.replace("x + y, mask=mask)", "tl.where(offsets < 1024, x + y, 0.0), mask=mask)")
    assert sloppy != add.k0
    task = tritonbench_task(MINI, "add")
    big = [{"index": 2}]  # 2**10 + 3 elements
    result = selfcheck(dataclasses.replace(task, cpu_shapes=big), "cpu", source=sloppy)
    assert not result.ok and "elements differ" in result.failures[0]


def test_whole_operator_file_with_test_code_is_a_valid_candidate(loaded) -> None:
    add = loaded[0][0]
    whole = (MINI / "TritonBench_G_mini" / "add.py").read_text()
    assert add.module_source(whole) == add.k0  # the test code is not run at import
    assert selfcheck(add, "cpu", source=whole).ok


def test_retarget_rewrites_cuda_references_only_off_gpu() -> None:
    source = "x = torch.ones(3, device='cuda')\ny = x.cuda()\nz = 'cuda:1'\nw = 'cudas'\n"
    rewritten = retarget(source, "cpu")
    assert "cuda'" not in rewritten.replace("'cudas'", "")
    assert "x.to('cpu')" in rewritten and "device='cpu'" in rewritten
    assert retarget(source, "cuda") == source


def test_missing_perf_script_and_bad_script_are_skipped(tmp_path: Path) -> None:
    shutil.copytree(MINI, tmp_path / "tb")
    root = tmp_path / "tb"
    (root / "perf" / "noisy_scale_perf.py").unlink()
    perf = root / "perf" / "row_sum_perf.py"
    perf.write_text(perf.read_text().replace("(Performance_Metrics)", "(object)"))
    tasks, skipped = load_tritonbench(root, device="cpu")
    assert [t.name for t in tasks] == ["tritonbench/add"]
    reasons = dict(skipped)
    assert "no noisy_scale_perf.py performance script" in reasons["noisy_scale"]
    assert "defines no Performance_Metrics subclass" in reasons["row_sum"]
