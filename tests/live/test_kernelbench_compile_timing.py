"""torch.compile's time per KernelBench problem: timed once per task by the evaluator's protocol
(the reference under torch.compile as k0's baseline), kept in the live trace's manifest
(``compile_ms``) and in the reference timings of ``kernelband tasks check --compile-timing``,
so that ``fast_p`` against torch.compile fills in from a trace. On the CPU inductor makes C++
and the shapes are tiny: the plumbing is tested; GPU figures come from a GPU."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from kernelband.cli import main
from live.tasks.kernelbench.problems import find
from live.tasks.kernelbench.task import compiled_candidate

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "kernelbench_mini"
SPEC = f"kernelbench:{MINI}"
RELU = "kernelbench/level1/1_ReLU"

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="CPU runs need TRITON_INTERPRET=1")


def test_compiled_candidate_is_the_reference_under_torch_compile() -> None:
    source = find(str(MINI), "level1/1_ReLU").path.read_text()
    namespace: dict = {}
    exec(compile(compiled_candidate(source), "compiled_relu", "exec"), namespace)  # noqa: S102
    model = namespace["ModelNew"](*namespace["get_init_inputs"]())
    (x,) = namespace["get_inputs"]()
    assert torch.equal(model(x), torch.relu(x))
    assert "_kb_compiled" in model.__dict__  # compiled at the first call, kept
    assert not list(model.children())  # not a submodule of itself


def test_live_run_records_compile_ms_and_fast_p_fills_in(tmp_path: Path) -> None:
    """A first call with --no-compile-timing records none (and analyze says so); the resume,
    with it on, times the task and fast_p against torch.compile fills in."""
    from analysis.inputs import load_input
    from analysis.pipeline import analyze_input

    (tmp_path / "relu_k0.py").write_text(
        (FIXTURES / "kernelbench_solutions" / "relu_good.py").read_text())
    selector = tmp_path / "k0.json"
    selector.write_text(json.dumps({"problems": ["level1/1_ReLU"],
                                    "k0": {"level1/1_ReLU": "relu_k0.py"}}))
    out = tmp_path / "trace"

    def live(steps: int, *extra: str) -> None:
        result = CliRunner().invoke(main, [
            "live", "--tasks", f"{SPEC}@{selector}", "--device", "cpu", "--profile", "off",
            "--quiet", "--steps", str(steps), "--proposer", "mutate", "--policy", "explore",
            "--eval-timeout", "300", "--out", str(out), *extra])
        assert result.exit_code == 0, result.output

    live(1, "--no-compile-timing")
    manifest = json.loads((out / "manifest.json").read_text())
    assert not manifest.get("compile_ms")
    assert "compile_timing" not in manifest["config"]  # a choice of the call, not of the run
    assert any("compile_ms" in note for note in analyze_input(load_input(str(out))).notes)
    live(2, "--resume")
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["compile_ms"]) == {RELU} and manifest["compile_ms"][RELU] > 0
    analysis = analyze_input(load_input(str(out)))
    (row,) = analysis.tables["fast_p"].to_dict("records")
    assert row["fast_0_compile_pct"] == row["fast_0_eager_pct"] == 100.0
    # the compile columns are figures now (on the interpreter, whatever they say)
    assert row["fast_1_compile_pct"] in (0.0, 100.0)
    assert not any("compile_ms" in note for note in analysis.notes)


def test_tasks_check_writes_compile_timings(tmp_path: Path) -> None:
    out = tmp_path / "ref.json"
    result = CliRunner().invoke(main, [
        "tasks", "check", "--tasks", f"{SPEC}@level1:1", "--device", "cpu", "--out", str(out),
        "--compile-timing", "--timeout", "300"])
    assert result.exit_code == 0, result.output
    assert "torch.compile" in result.output
    record = json.loads(out.read_text())["tasks"][RELU]
    assert record["compile_status"] == "ok" and record["compile_ms"] > 0
    assert len(record["compile_shape_ms"]) == len(record["ref_shape_ms"]) >= 1
    plain = CliRunner().invoke(main, [
        "tasks", "check", "--tasks", f"{SPEC}@level1:1", "--device", "cpu",
        "--out", str(tmp_path / "plain.json")])
    assert plain.exit_code == 0, plain.output
    assert "compile_ms" not in json.loads((tmp_path / "plain.json").read_text())["tasks"][RELU]
