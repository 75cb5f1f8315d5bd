"""The TritonBench-G adapter on a hand-written mini checkout (tests/live/fixtures)."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import subprocess
import sys
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
#: the fixture's operators that pass gold vs gold, and those skipped (one per failure class)
PASSING = ["add", "big_fault", "big_oom", "empty_index", "host_hog", "kv_copy", "nested_scale",
           "noisy_scale", "racy_case", "racy_scatter", "row_sum", "unseeded_mul"]
SKIPPED = ["crash_op", "racy_sum"]


@pytest.fixture(scope="module", autouse=True)
def check_cache(tritonbench_mini_cache):
    """One gold-check cache for the module, away from the user's: a copy of the one the
    session's uncached load filled (tests/live/conftest.py)."""
    return tritonbench_mini_cache


@pytest.fixture(scope="module")
def loaded(tritonbench_mini_load, check_cache):
    """``load_tritonbench(MINI, device="cpu")`` from an empty cache: run once per session."""
    return tritonbench_mini_load.tasks, tritonbench_mini_load.skipped


@pytest.fixture(scope="module")
def findings(tritonbench_mini_load, check_cache):
    """The same load's findings, by task name."""
    return tritonbench_mini_load.findings


def _task(loaded, op: str):
    return next(t for t in loaded[0] if t.name == f"tritonbench/{op}")


def test_operator_files_split_at_the_146_hash_line() -> None:
    code, test = split_operator_file(f"a = 1\n{SEPARATOR}\nresult_gold = a\n")
    assert (code, test) == ("a = 1\n", "result_gold = a\n")
    assert split_operator_file("a = 1\n" + "#" * 145 + "\n") is None


def test_discover_pairs_operators_with_perf_scripts() -> None:
    sources = {s.op: s for s in discover(MINI)}
    assert set(sources) == set(PASSING + SKIPPED)  # performance_utils is no operator
    assert sources["add"].perf_path.name == "add_perf.py"
    assert "result_gold = test_add()" in sources["add"].test_code
    assert SEPARATOR not in sources["add"].code


def test_gold_vs_gold_keeps_good_operators_and_reports_the_broken_one(loaded) -> None:
    tasks, skipped = loaded
    assert [t.name for t in tasks] == [f"tritonbench/{op}" for op in PASSING]
    assert [op for op, _ in skipped] == SKIPPED
    reasons = dict(skipped)
    assert "gold-vs-gold check failed" in reasons["racy_sum"]
    # racy_sum differs from itself whatever the seeds: whichever check runs into the difference
    # first (its own result_gold, or the outputs on the performance inputs) reports it
    assert "result_gold" in reasons["racy_sum"] or "elements differ" in reasons["racy_sum"]


def test_tasks_follow_the_returns_convention(loaded) -> None:
    add = _task(loaded, "add")
    assert add.call_style == "returns" and add.entry == "add"
    assert add.k0.startswith("import torch") and "result_gold" not in add.k0
    assert add.source == f"tritonbench:{MINI.resolve()}"
    assert len(add.perf_shapes) == 9 and add.cpu_shapes == [{"index": 0}, {"index": 1}]
    # bytes and FLOPs come from the script's get_gbps / get_tflops at 1 ms
    n = 2 ** 22 + 3
    assert add.bytes_moved({"index": 8}) == 3 * 4 * n
    assert add.flops({"index": 8}) == n


def test_inputs_are_seeded_and_single_tensor_entries_work(loaded) -> None:
    add, row_sum = _task(loaded, "add"), _task(loaded, "row_sum")
    x0, y0 = add.make_inputs({"index": 1}, 0, "cpu")
    x1, _ = add.make_inputs({"index": 1}, 0, "cpu")
    x2, _ = add.make_inputs({"index": 1}, 1, "cpu")
    assert x0.equal(x1) and not x0.equal(x2) and x0.shape == (2 ** 8 + 3,)
    # the caller owns them: an operator that writes its inputs in place changes its own copy,
    # not the next check's (on a CPU a move is no copy; the generated inputs are cached)
    pristine = x1.clone()
    x0.fill_(7.0)
    x3, _ = add.make_inputs({"index": 1}, 0, "cpu")
    assert x3.equal(pristine) and x1.equal(pristine)
    big, _ = add.make_inputs({"index": 8}, 0, "cpu")  # from the whole set's cache, as well
    big.zero_()
    assert not add.make_inputs({"index": 8}, 0, "cpu")[0].equal(big)
    (matrix,) = row_sum.make_inputs({"index": 0}, 0, "cpu")
    (out,) = row_sum.reference(matrix)
    assert torch.allclose(out, matrix.sum(dim=1), atol=1e-5)


def test_spec_and_worker_rebuild(loaded, caplog, monkeypatch) -> None:
    from live.tasks import registry

    monkeypatch.setattr(registry, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="live.tasks.registry"):
        names = [t.name for t in resolve_tasks(f"tritonbench:{MINI}")]
        assert names == [f"tritonbench/{op}" for op in PASSING]
        assert "skipped TritonBench operator racy_sum: gold-vs-gold" in caplog.text
        caplog.clear()  # a live run resolves its spec again: each skip is logged once
        resolve_tasks(f"tritonbench:{MINI}")
        assert "skipped TritonBench operator" not in caplog.text
    tasks, skipped = resolve_tasks_and_skipped(f"tritonbench:{MINI}")
    assert len(tasks) == len(PASSING) and [op for op, _ in skipped] == SKIPPED
    for name in ("add", "tritonbench/add"):
        assert resolve_task(f"tritonbench:{MINI}", name).name == "tritonbench/add"
    with pytest.raises(ValueError, match="no TritonBench operator 'mul'"):
        resolve_task(f"tritonbench:{MINI}", "mul")


def test_a_subset_of_the_checkout(loaded, tmp_path, monkeypatch) -> None:
    """``tritonbench:PATH@SUBSET``: the authors' subset file (``{"kernels": [...]}``), a list,
    or a comma list; only those operators load (their checks come from the module's cache);
    workers rebuild from the same spec; unknown names and missing files are one sentence."""
    import json

    from live.tasks.registry import canonical_spec

    subset = tmp_path / "paper_subset.json"
    subset.write_text(json.dumps({"metadata": {"subset_size": 3},
                                  "kernels": ["add.py", "row_sum.py", "crash_op.py"]}))
    for spec in (f"tritonbench:{MINI}@{subset}", f"tritonbench:{MINI}@add,row_sum,crash_op"):
        tasks, skipped = resolve_tasks_and_skipped(spec)
        assert [t.name for t in tasks] == ["tritonbench/add", "tritonbench/row_sum"]
        assert [op for op, _ in skipped] == ["crash_op"]
        assert resolve_task(spec, "add").name == "tritonbench/add"
    listed = tmp_path / "two.json"
    listed.write_text(json.dumps(["add", "row_sum.py"]))
    assert len(resolve_tasks(f"tritonbench:{MINI}@{listed}")) == 2
    # a file named relative to the checkout or the current directory; canonical for workers
    monkeypatch.chdir(tmp_path)
    assert canonical_spec(f"tritonbench:{MINI}@two.json") == f"tritonbench:{MINI}@{listed}"
    assert canonical_spec(f"tritonbench:{MINI}@add") == f"tritonbench:{MINI}@add"
    with pytest.raises(ValueError, match=r"1 of the 2 operators asked for are not in .*: mul$"):
        resolve_tasks(f"tritonbench:{MINI}@add,mul")
    with pytest.raises(ValueError, match="subset file 'nope.json' not found"):
        resolve_tasks(f"tritonbench:{MINI}@nope.json")
    (tmp_path / "bad.json").write_text(json.dumps({"kernels": 3}))
    with pytest.raises(ValueError, match="must be a list of operator names"):
        resolve_tasks(f"tritonbench:{MINI}@bad.json")
    # a folder whose own name has an @ is a folder, not a subset
    odd = tmp_path / "tb@v1"
    shutil.copytree(MINI, odd)
    from live.tasks.sources.tritonbench import split_subset

    assert split_subset(str(odd)) == (str(odd), None)


def test_wrong_candidate_fails_result_gold(loaded) -> None:
    add = _task(loaded, "add")
    wrong = add.k0.replace("x + y", "x - y")
    result = selfcheck(add, "cpu", source=wrong)
    assert not result.ok and "result_gold" in result.failures[0]


def test_candidate_matching_result_gold_but_not_perf_inputs_fails(loaded) -> None:
    add = _task(loaded, "add")
    # correct on the test code's sizes (<= 1000 elements), wrong on larger performance inputs
    sloppy = add.k0.replace("x + y, mask=mask)", "tl.where(offsets < 1024, x + y, 0.0), mask=mask)")
    assert sloppy != add.k0
    task = tritonbench_task(MINI, "add")
    big = [{"index": 2}]  # 2**10 + 3 elements
    result = selfcheck(dataclasses.replace(task, cpu_shapes=big), "cpu", source=sloppy)
    assert not result.ok and "elements differ" in result.failures[0]


def test_whole_operator_file_with_test_code_is_a_valid_candidate(loaded) -> None:
    add = _task(loaded, "add")
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
    tasks, skipped = load_tritonbench(root, device="cpu", ops=["add", "noisy_scale", "row_sum"])
    assert [t.name for t in tasks] == ["tritonbench/add"]
    reasons = dict(skipped)
    assert "no noisy_scale_perf.py performance script" in reasons["noisy_scale"]
    assert "defines no Performance_Metrics subclass" in reasons["row_sum"]


# --- one fixture operator per failure class of the real benchmark (issue 14) -----------------


def test_every_failure_class_is_loaded_or_skipped_with_its_reason(loaded) -> None:
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions

    loaded = load_tasks(f"tritonbench:{MINI}", LoadOptions(device="cpu"))
    names = [t.name.removeprefix("tritonbench/") for t in loaded.tasks]
    # unseeded test code, random draws inside the call, an in-place operator and nested inputs
    # all load
    assert {"unseeded_mul", "noisy_scale", "kv_copy", "nested_scale"} <= set(names)
    skipped = {s.op: s for s in loaded.skipped}
    # a crash kills only its own worker: it is reported, and every other operator loads
    assert "worker died: signal 11" in skipped["crash_op"].reason
    assert skipped["crash_op"].plain_script.startswith("fails")
    # a genuinely nondeterministic operator is named so after two gold-vs-gold checks, and it
    # runs fine as a plain script (a benchmark property, not a kernelband bug)
    assert "nondeterministic" in skipped["racy_sum"].reason
    assert "in both of two checks" in skipped["racy_sum"].reason
    assert skipped["racy_sum"].plain_script == "passes"
    # the second load comes from the cache, without starting a worker
    assert loaded.stats["cached"] == len(PASSING) + len(SKIPPED)
    assert loaded.stats["checked"] == 0


def test_shapes_the_gold_code_cannot_be_judged_on_are_set_aside_not_the_operator(
        findings) -> None:
    """NOTE D73: per-shape verdicts of the gold check, kept in the cache and the task's
    findings."""
    tasks = {name.removeprefix("tritonbench/"): found for name, found in findings.items()}
    # colliding scatter indices in the perf inputs: the gold code disagrees with itself there,
    # so those shapes are timed but not compared; its own test code (distinct indices) checks
    scatter = tasks["racy_scatter"]
    assert scatter.shapes_with("unchecked") == [0, 1] and scatter.shapes_with("dropped") == []
    assert all("disagrees with itself" in note and "written in place by the reference" in note
               for note in scatter.shape_notes())
    # a fault on the larger inputs (a sticky CUDA error on a GPU): that shape and every larger
    # one are dropped, the check runs again in a fresh worker and passes on the rest
    fault = tasks["big_fault"]
    assert fault.shapes_with("dropped") == [1, 2]
    assert "illegal memory access" in fault.shape_verdicts[1].reason
    assert fault.shape_verdicts[2].reason.startswith("larger than perf shape 1")
    # out of memory beside the other checks, then again alone: dropped with every larger one
    oom = tasks["big_oom"]
    assert oom.shapes_with("dropped") == [1, 2]
    assert "runs out of memory in the gold check" in oom.shape_verdicts[1].reason
    # killed by the system beside the other checks (SIGKILL not sent by kernelband), then
    # checked again alone, where it passes (D80)
    from live.gold.load import CHECK_SETTINGS

    assert CHECK_SETTINGS.gpu_workers == 2 and CHECK_SETTINGS.first_config
    assert tasks["host_hog"].shape_verdicts == {}
    # an index table the script made with torch.empty: zeros while it is built (D72)
    assert tasks["empty_index"].shape_verdicts == {}
    # a cached load rebuilds the same verdicts without running anything
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions

    again = load_tasks(f"tritonbench:{MINI}", LoadOptions(device="cpu")).findings
    assert again["tritonbench/racy_scatter"].shape_verdicts == scatter.shape_verdicts
    assert again["tritonbench/big_fault"].shape_verdicts == fault.shape_verdicts


def test_candidates_follow_the_verdicts_in_the_evaluator(loaded, findings) -> None:
    """The live evaluator leaves dropped shapes out and does not compare unchecked ones: the
    gold code itself (k0) passes on a racy scatter, and a wrong candidate still fails on the
    operator's own test code."""
    from live.evaluator import Evaluator, EvaluatorConfig

    spec = f"tritonbench:{MINI}"
    scatter = _task(loaded, "racy_scatter")
    wrong = scatter.k0.replace("tl.store(cache_ptr + dest * row_len + cols, values",
                               "tl.store(cache_ptr + dest * row_len + cols, values + 1")
    assert wrong != scatter.k0
    fault = _task(loaded, "big_fault")
    with Evaluator(EvaluatorConfig(spec, device="cpu", workers=1)) as ev:
        assert ev.shape_notes(scatter.name) == findings[scatter.name].shape_notes()
        k0 = ev.evaluate(scatter.name, scatter.k0, seed=0)
        bad = ev.evaluate(scatter.name, wrong, seed=0)
        fault_k0 = ev.evaluate(fault.name, fault.k0, seed=0)
    assert k0.status == "ok", k0.error
    assert bad.status == "incorrect" and "source check" in bad.error
    assert fault_k0.status == "ok" and [s["index"] for s in fault_k0.shapes] == [0]


def test_test_code_is_compared_where_the_gold_code_agrees_with_itself(loaded) -> None:
    """NOTE D76: a racy case in the operator's own test code sets aside the elements that vary
    between runs of the gold code, not the operator; the rest is still compared."""
    from live.evaluator import Evaluator, EvaluatorConfig
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions

    racy = _task(loaded, "racy_case")
    # 3 of the 100 elements of result_gold (two cases of 50) vary between gold runs; the
    # note is in the cached record too
    notes = load_tasks(f"tritonbench:{MINI}", LoadOptions(device="cpu")).stats[
        "passed_with_results_set_aside"]
    assert set(notes) == {"racy_case"}
    assert "3 of 100 elements or values set aside" in notes["racy_case"]
    # wrong where the gold code agrees with itself (the racy case's untouched elements)
    wrong = racy.k0.replace("out[:3] +=", "out[:5] +=")
    # different only where the gold code varies anyway
    other_race = racy.k0.replace("out[:3] += 1 +", "out[:3] += 7 +")
    assert wrong != racy.k0 and other_race != racy.k0
    with Evaluator(EvaluatorConfig(f"tritonbench:{MINI}", device="cpu", workers=1)) as ev:
        k0 = ev.evaluate(racy.name, racy.k0, seed=0)
        bad = ev.evaluate(racy.name, wrong, seed=0)
        fine = ev.evaluate(racy.name, other_race, seed=0)
    assert k0.status == "ok", k0.error
    assert fine.status == "ok", fine.error
    assert bad.status == "incorrect"
    assert "result_gold['test_case_2']: 2/47 elements differ" in bad.error
    assert "3 elements where the gold code disagrees with itself set aside" in bad.error


def test_input_tables_made_with_torch_empty_are_zeros_while_the_script_builds_them() -> None:
    from live.tasks.tritonbench.operator import zeroed_empty_tensors

    factories = (torch.empty, torch.empty_like, torch.empty_strided, torch.Tensor.new_empty)
    with zeroed_empty_tensors():
        made = [torch.empty(1000, dtype=torch.int64), torch.empty_like(torch.ones(7)),
                torch.empty_strided((3, 3), (3, 1)), torch.ones(2).new_empty(50)]
    assert all(int(torch.count_nonzero(x)) == 0 for x in made)
    assert (torch.empty, torch.empty_like, torch.empty_strided,
            torch.Tensor.new_empty) == factories  # put back afterwards


def test_checked_calls_fill_empty_tensors_without_loading_inductor() -> None:
    """The checked calls' deterministic mode is set as ``torch.use_deterministic_algorithms``
    sets it, without that function's import of inductor (and dynamo), ~1.1 CPU-s in a worker;
    inductor's flag too where it is loaded. In a fresh interpreter: this one may have loaded
    inductor for another test."""
    code = """if True:
        import json, sys, torch
        from live.tasks.tritonbench.operator import filled_uninitialised_memory
        with filled_uninitialised_memory():
            on = [torch.are_deterministic_algorithms_enabled(),
                  torch.is_deterministic_algorithms_warn_only_enabled(),
                  torch.utils.deterministic.fill_uninitialized_memory]
            nan = bool(torch.isnan(torch.empty(1000)).all())
            top = int(torch.empty(9, dtype=torch.int64).min()) == torch.iinfo(torch.int64).max
        off = [torch.are_deterministic_algorithms_enabled(),
               torch.is_deterministic_algorithms_warn_only_enabled()]
        dynamo = "torch._dynamo" in sys.modules or "torch._inductor.config" in sys.modules
        import torch._inductor.config as inductor
        with filled_uninitialised_memory():
            inductor_on = inductor.deterministic
        print(json.dumps([on, nan, top, off, dynamo, inductor_on, inductor.deterministic]))
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=True)
    on, nan, top, off, dynamo, inductor_on, inductor_after = json.loads(done.stdout)
    assert on == [True, True, True] and nan and top
    assert off == [False, False] and not dynamo
    assert inductor_on and not inductor_after


def test_test_code_runs_under_one_seeded_rng_state_and_restores_it() -> None:
    import random

    import numpy as np

    from live.tasks.tritonbench.operator import result_gold_of, seeded_rng

    source = {s.op: s for s in discover(MINI)}["unseeded_mul"]
    random.seed(5)
    before = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(5)
    first = result_gold_of(source.code, source.test_code, "cpu", "t1")
    second = result_gold_of(source.code, source.test_code, "cpu", "t2")
    assert (random.random(), float(np.random.rand()), float(torch.rand(1)))[0] == before[0]
    assert torch.equal(first["test_case_1"], second["test_case_1"])
    assert first["factor"] == second["factor"] and first["label"] == "mul"
    with seeded_rng(3):
        a = (random.random(), np.random.rand(), torch.rand(2))
    with seeded_rng(3):
        b = (random.random(), np.random.rand(), torch.rand(2))
    assert a[0] == b[0] and a[1] == b[1] and torch.equal(a[2], b[2])


def test_in_place_operator_output_is_the_input_it_writes(loaded) -> None:
    kv_copy = _task(loaded, "kv_copy")
    assert selfcheck(kv_copy, "cpu").ok
    # writing the right values to the wrong rows of the cache is caught as a wrong output
    wrong = kv_copy.k0.replace("dest * row_len + cols", "row * row_len + cols")
    assert wrong != kv_copy.k0
    result = selfcheck(kv_copy, "cpu", source=wrong)
    assert not result.ok
    assert any("written in place by the reference too" in line or "result_gold" in line
               for line in result.failures), result.failures


def test_nested_inputs_move_with_the_scripts_to_cuda(loaded) -> None:
    from live.tasks.tritonbench import move_entry

    nested = _task(loaded, "nested_scale")
    (x, w), options = nested.make_inputs({"index": 0}, 0, "cpu")
    assert isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor) and options == {
        "alpha": 0.5}

    class Script:
        moved: list = []

        def to_cuda(self, entry):
            self.moved.append(entry)
            return ("moved by the script", entry)

    entry = ((torch.ones(2), torch.ones(2)), {"alpha": 1.0})
    assert move_entry(entry, "cuda", Script()) == ("moved by the script", entry)
    # without a script (or off the GPU) every tensor of the nesting moves, the structure stays
    again = move_entry(entry, "cpu")
    assert isinstance(again, tuple) and torch.equal(again[0][0], entry[0][0])
    assert again[1] == {"alpha": 1.0}


def test_cache_is_keyed_by_content_and_no_cache_rechecks(tmp_path: Path, monkeypatch) -> None:
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions

    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "tb"
    shutil.copytree(MINI, root)
    for path in root.rglob("*.py"):  # one operator only
        if path.stem not in ("add", "add_perf", "performance_utils"):
            path.unlink()
    first = load_tasks(f"tritonbench:{root}", LoadOptions(device="cpu"))
    assert first.stats["checked"] == 1 and [t.name for t in first.tasks] == ["tritonbench/add"]
    again = load_tasks(f"tritonbench:{root}", LoadOptions(device="cpu"))
    assert again.stats["cached"] == 1 and again.stats["checked"] == 0
    forced = load_tasks(f"tritonbench:{root}", LoadOptions(device="cpu", use_cache=False))
    assert forced.stats["checked"] == 1
    operator = root / "TritonBench_G_mini" / "add.py"
    operator.write_text(operator.read_text().replace("x + y, mask=mask", "x - y, mask=mask"))
    edited = load_tasks(f"tritonbench:{root}", LoadOptions(device="cpu"))
    # a changed operator file is a new key: checked again (and its gold still agrees with itself)
    assert edited.stats["checked"] == 1


def test_other_seeds_keep_only_the_test_shapes_inputs(loaded) -> None:
    from live.tasks.tritonbench import operator

    add = _task(loaded, "add")
    path = add.source.removeprefix("tritonbench:")
    operator.release_caches()
    assert add.test_shapes == []  # on a GPU: perf inputs and the test code only (D74)
    small_index = add.cpu_shapes[0]["index"]
    (x5, _) = add.make_inputs({"index": small_index}, 5, "cpu")
    # a test shape under another seed: made once, kept without the big perf inputs
    assert operator._cpu_inputs.cache_info().currsize == 0
    again = add.make_inputs({"index": small_index}, 5, "cpu")
    assert operator._small_cpu_inputs.cache_info().hits >= 1 and again[0].equal(x5)
    full, _ = operator._generate_inputs(path, "add", 5)
    assert full[small_index][0].equal(x5)  # the same draw as the whole set's
    big = next(s for s in add.perf_shapes if s not in add.cpu_shapes)
    (xb, _) = add.make_inputs(big, 5, "cpu")  # a perf shape under that seed: the whole set
    assert xb.equal(full[big["index"]][0]) and operator._cpu_inputs.cache_info().currsize == 1
