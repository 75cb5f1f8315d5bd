"""k0 without an LLM: inductor's generated Triton code wrapped as ``ModelNew``.

Inductor makes Triton code only for a GPU; the generated modules here (``fixtures/
kernelbench_k0``) were made on a CPU with its Triton backend for the CPU, so their wrapped
forms run under Triton's interpreter: the wrapper, the static check, the evaluator, the mutate
proposer and the report are tested end to end; only ``torch.compile`` itself needs the GPU."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelband.cli import main
from live.evaluator import Evaluator, EvaluatorConfig
from live.evaluator.static_check import static_check
from live.proposers.mutate import mutate_source
from live.tasks.kernelbench.k0 import LaunchConfig, NoK0, source_expression, wrap_as_model_new
from live.tasks.kernelbench.k0_report import K0Outcome, judge, reason_class, summarize, table
from live.tasks.kernelbench.shortcuts import shortcut_check
from live.tasks.registry import load_tasks
from live.tasks.sources import LoadOptions

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "kernelbench_mini"
GENERATED = FIXTURES / "kernelbench_k0"
SPEC = f"kernelbench:{MINI}"
PROBLEMS = {"relu": ("level1/1_ReLU", "level1/1_ReLU.py"),
            "sum": ("level1/3_Sum_over_a_dimension", "level1/3_Sum_over_a_dimension.py"),
            "matmul": ("level1/2_Matmul", "level1/2_Matmul.py")}


def generated(name: str) -> dict:
    return json.loads((GENERATED / f"{name}.json").read_text())


def wrap(name: str, configs: dict | None = None, output_code: str | None = None) -> str:
    record = generated(name)
    return wrap_as_model_new(output_code or record["output_code"],
                             (MINI / PROBLEMS[name][1]).read_text(), record["forward_args"],
                             record["graph_inputs"], record["n_outputs"], configs,
                             note=record["note"])


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", static_check=True, timeout_s=120,
                                   compile_timeout_s=120)) as ev:
        yield ev


@pytest.mark.parametrize("name", ["relu", "sum"])
def test_wrapped_k0_passes_every_check(evaluator: Evaluator, name: str) -> None:
    code = wrap(name)
    assert static_check(code) is None
    assert shortcut_check(code, (MINI / PROBLEMS[name][1]).read_text()) is None
    assert "@triton.jit" in code and "triton_heuristics.pointwise" not in code
    assert ".run(" not in code and "class ModelNew(Model)" in code
    result = evaluator.evaluate("kernelbench/" + PROBLEMS[name][0], code, seed=0)
    assert result.status == "ok", result.error


def test_mutated_k0_still_passes(evaluator: Evaluator) -> None:
    """Block sizes are literal keywords under the names the mutate proposer edits, and the grid
    reads them from meta, so a tiling edit keeps the k0 correct."""
    code = wrap("relu")
    mutated, what = mutate_source(code, "tiling", seed=0, sample_index=0)
    assert mutated is not None and "BLOCK_X" in what, what
    result = evaluator.evaluate("kernelbench/level1/1_ReLU", mutated, seed=0)
    assert result.status == "ok", result.error


def test_k0_file_through_a_selector_file(evaluator: Evaluator, tmp_path: Path) -> None:
    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "1_ReLU.py").write_text(wrap("relu"))
    selector = tmp_path / "k0.json"
    selector.write_text(json.dumps({"problems": ["level1/1_ReLU"],
                                    "k0": {"level1/1_ReLU": "level1/1_ReLU.py"}}))
    (task,) = load_tasks(f"{SPEC}@{selector}", LoadOptions(device="cpu")).tasks
    assert task.k0 == wrap("relu")
    assert evaluator.evaluate(task.name, task.k0, seed=0).status == "ok"


def test_chosen_configuration_is_used() -> None:
    code = wrap("relu", {"triton_poi_fused_relu_0": LaunchConfig({"XBLOCK": 128}, 2, 1)})
    assert "BLOCK_X=128, num_warps=2, num_stages=1" in code
    assert "meta['BLOCK_X']" in code and "XBLOCK" not in code.split("class ModelNew")[0] \
        .split("@triton.jit")[1]


def test_no_triton_kernel_is_a_reason() -> None:
    with pytest.raises(NoK0, match=r"no Triton kernel \(it calls extern_kernels.mm\)"):
        wrap("matmul")


@pytest.mark.parametrize(("edit", "reason"), [
    (("'grid_type': 'Grid1D'", "'grid_type': 'SplitScanGrid'"), "grid type SplitScanGrid"),
    (("async_compile.triton(", "async_compile.cpp_pybinding("), "not as a Triton kernel"),
    (("@triton_heuristics.pointwise(", "@triton_heuristics.template("), "a template kernel"),
    (("arg0_1, = args", "arg0_1, arg1_1 = args"), "takes 2 inputs, the graph recorded 1"),
])
def test_what_is_not_wrapped_says_why(edit: tuple[str, str], reason: str) -> None:
    code = generated("relu")["output_code"]
    assert edit[0] in code
    with pytest.raises(NoK0, match=reason):
        wrap("relu", output_code=code.replace(*edit))


def test_graph_input_sources() -> None:
    assert source_expression("L['x']") == "x"
    assert source_expression("L['self']._modules['fc']._parameters['weight']") == \
        "self._modules['fc']._parameters['weight']"
    with pytest.raises(NoK0, match="not from the forward's arguments"):
        source_expression("G['table']")


def test_a_k0_that_still_calls_the_reference_operator_is_rejected() -> None:
    """Inductor keeps a matmul as ``extern_kernels.mm``: beside a Triton kernel, that k0 does
    the main work in torch, and the report counts it so."""
    code = re.sub(r"( +)del arg0_1\n",
                  r"\1buf9 = extern_kernels.mm(arg0_1, arg0_1)\n\1del arg0_1\n",
                  generated("relu")["output_code"])
    wrapped = wrap("relu", output_code=code)
    matmul_source = (MINI / "level1" / "2_Matmul.py").read_text()
    refused = shortcut_check(wrapped, matmul_source)
    assert refused is not None and "extern_kernels.mm" in refused
    outcome, kept = judge("level1/2_Matmul", SPEC, "kernelbench/level1/2_Matmul",
                          {"status": "ok", "code": wrapped, "check_status": "ok"},
                          lambda c, s, n: shortcut_check(c, matmul_source))
    assert outcome.outcome == "rejected" and kept == wrapped
    assert reason_class(outcome) == "still calls the reference's matmul via extern_kernels.mm"


def test_summary_counts_per_level() -> None:
    outcomes = [
        K0Outcome("level1/1_ReLU", "passes"),
        K0Outcome("level1/2_Matmul", "no_k0", "inductor generated no Triton kernel (it calls "
                                              "extern_kernels.mm)"),
        K0Outcome("level1/3_Sum", "fails_check", "incorrect: shape ... 3/12 elements differ"),
        K0Outcome("level2/1_Linear_GELU", "rejected", "static check: ModelNew's forward calls "
                  "extern_kernels.addmm (line 9), the reference's own matmul operator (an "
                  "nn.Linear submodule): a torch fallback, not a Triton kernel"),
    ]
    levels = summarize(outcomes)
    assert levels["level1"] == {"problems": 3, "made": 2, "passes": 1,
                                "outcomes": {"passes": 1, "no_k0": 1, "fails_check": 1},
                                "reasons": {"no Triton kernel (extern calls only)": 1,
                                            "check: incorrect": 1}}
    assert levels["level2"]["reasons"] == {
        "still calls the reference's matmul via extern_kernels.addmm": 1}
    lines = table(levels)
    assert lines[1].split() == ["level1", "3", "2", "1"]
    assert lines[2].split() == ["level2", "1", "1", "0"]


def test_k0_command_on_cpu_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "k0"
    result = CliRunner().invoke(main, ["tasks", "k0", "--tasks", f"{SPEC}@level1:1-2",
                                       "--device", "cpu", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "k0-report.json").read_text())
    assert report["levels"]["level1"]["problems"] == 2
    assert report["levels"]["level1"]["passes"] == 0
    assert {p["outcome"] for p in report["problems"].values()} == {"no_k0"}
    assert all("generates C++" in p["reason"] for p in report["problems"].values())
    assert json.loads((out / "k0.json").read_text()) == {"problems": [], "k0": {}}
    assert json.loads(result.output)["levels"] == report["levels"]


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                    reason="CPU runs need TRITON_INTERPRET=1")
def test_live_run_with_the_mutate_proposer_needs_no_llm(tmp_path: Path) -> None:
    """``--proposer mutate`` runs KernelBench from the torch.compile k0s of a selector file;
    the trace validates and its fast_p table has the level."""
    from analysis.fast_p import fast_p_table
    from kbsim.trace.reader import load_trace, validate_trace

    selector = {"problems": [], "k0": {}}
    for name in ("relu", "sum"):
        problem = PROBLEMS[name][0]
        (tmp_path / problem).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{problem}.py").write_text(wrap(name))
        selector["problems"].append(problem)
        selector["k0"][problem] = f"{problem}.py"
    (tmp_path / "k0.json").write_text(json.dumps(selector))
    out = tmp_path / "trace"
    result = CliRunner().invoke(main, [
        "live", "--tasks", f"{SPEC}@{tmp_path / 'k0.json'}", "--device", "cpu",
        "--profile", "off", "--quiet", "--steps", "2", "--proposer", "mutate",
        "--policy", "explore", "--no-compile-timing", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert validate_trace(out) == []
    steps = load_trace(out).steps_df()
    assert set(steps["task_id"]) == {"kernelbench/" + PROBLEMS[n][0] for n in ("relu", "sum")}
    assert (steps.loc[steps["status"] != "not_applicable", "status"] == "ok").all()
    (row,) = fast_p_table(steps).to_dict("records")
    assert (row["level"], row["problems"], row["fast_0_eager_pct"]) == ("level1", 2, 100.0)


def test_gpu_form_of_call_is_wrapped() -> None:
    """On a GPU the generated call runs under a device guard and looks the stream up before
    each launch: the launch stays in the guard, the stream goes."""
    code = generated("relu")["output_code"]
    cpu_body = ("        buf0 = empty_strided_cpu((8, 96), (96, 1), torch.float32)\n"
                "        # Topologically Sorted Source Nodes: [relu], Original ATen: [aten.relu]\n"
                "        raw_streamNone = get_raw_stream(None)\n"
                "        triton_poi_fused_relu_0.run(arg0_1, buf0, 768, stream=raw_streamNone)\n"
                "        del arg0_1\n")
    gpu_body = ("        with torch.cuda._DeviceGuard(0):\n"
                "            torch.cuda.set_device(0)\n"
                "            buf0 = empty_strided_cuda((8, 96), (96, 1), torch.float32)\n"
                "            stream0 = get_raw_stream(0)\n"
                "            triton_poi_fused_relu_0.run(arg0_1, buf0, 768, stream=stream0)\n"
                "            del arg0_1\n")
    assert cpu_body in code
    wrapped = wrap("relu", output_code=code.replace(cpu_body, gpu_body))
    call = wrapped.split("def _inductor_call(args):")[1].split("class ModelNew")[0]
    assert "stream" not in call and "get_raw_stream" not in call
    guarded = call.split("with torch.cuda._DeviceGuard(0):")[1]
    assert "        triton_poi_fused_relu_0[lambda meta: (triton.cdiv(768, meta['BLOCK_X']),)]" \
           "(arg0_1, buf0, 768, BLOCK_X=1024, num_warps=4, num_stages=1)" in guarded
    assert static_check(wrapped) is None
    assert shortcut_check(wrapped, (MINI / "level1" / "1_ReLU.py").read_text()) is None


def test_a_stopped_k0_run_resumes_with_the_problems_left(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker result is kept as it arrives: a run stopped after one problem, run again,
    asks the workers only for the others (and again for one whose worker timed out)."""
    from live.evaluator import isolated
    from live.tasks.kernelbench import k0_report

    asked: list[list[str]] = []

    def stopped_after_one(calls, on_result=None, **_):
        asked.append([c.key for c in calls])
        on_result(calls[0], {"status": "no_k0", "reason": "no Triton kernel (extern calls only)"})
        on_result(calls[1], {"status": "timeout", "error": "ran past 1 s"})
        raise KeyboardInterrupt  # the run is stopped with more in flight

    monkeypatch.setattr(isolated, "run_calls", stopped_after_one)
    with pytest.raises(KeyboardInterrupt):
        k0_report.build_k0s(SPEC, tmp_path, device="cpu")
    first, second = asked[0][0], asked[0][1]

    def the_rest(calls, on_result=None, **_):
        asked.append([c.key for c in calls])
        results = {}
        for call in calls:
            results[call.key] = {"status": "no_k0", "reason": "no Triton kernel"}
            on_result(call, results[call.key])
        return results

    monkeypatch.setattr(isolated, "run_calls", the_rest)
    report = k0_report.build_k0s(SPEC, tmp_path, device="cpu")
    assert first not in asked[1] and second in asked[1]
    assert sorted(asked[1] + [first]) == sorted(asked[0])
    assert set(report["problems"]) == set(asked[0])
    assert report["problems"][first]["reason"] == "no Triton kernel (extern calls only)"
    assert (tmp_path / "k0.json").is_file() and (tmp_path / "k0-report.json").is_file()
