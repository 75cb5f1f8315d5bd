"""KernelBench's k0 written by the LLM proposer at step 0 (NOTE D100), against the scripted
OpenAI-compatible server and a cassette, on the CPU (Triton's interpreter); and the one-sentence
refusal of a run that has neither an LLM nor k0 files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from kbsim.strategies import STRATEGIES
from kbsim.trace.schema import K0_PARENT, K0_STRATEGY
from kernelband.cli import main
from live.evaluator import kernel_id
from tests.live.fakeserver import FakeOpenAIServer, chat_reply

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "kernelbench_mini"
SPEC = f"kernelbench:{MINI}@level1:1"
RELU = "kernelbench/level1/1_ReLU"
GOOD = (FIXTURES / "kernelbench_solutions" / "relu_good.py").read_text()
FASTER = GOOD.replace("256", "128")
NO_CODE = "I would fuse the loads, but I will not write code today."

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="CPU runs need TRITON_INTERPRET=1")


def fenced(code: str) -> str:
    return f"Here is the module.\n\n```python\n{code.strip()}\n```\n"


def live(out: Path, *extra: str) -> object:
    return CliRunner().invoke(main, [
        "live", "--tasks", SPEC, "--device", "cpu", "--profile", "off", "--quiet",
        "--no-compile-timing", "--steps", "2", "--policy", "explore", "--out", str(out),
        *extra])


def test_mutate_without_k0_files_fails_at_start_with_one_sentence(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    result = live(out, "--proposer", "mutate")
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert f"{RELU} have no k0 and the mutate proposer cannot write one" in message
    assert "kernelband tasks k0" in message and "@DIR/k0.json" in message
    assert "Traceback" not in result.output
    assert not (out / "manifest.json").exists()  # nothing ran, nothing recorded


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, monkeypatch_module) -> tuple[Path, Path, list[dict]]:
    """One live run with the openai proposer against the scripted server, recorded to a
    cassette: k0 at step 0, then two steps of the policy."""
    base = tmp_path_factory.mktemp("llm_k0")
    cassette = base / "run.jsonl"
    script = [chat_reply(fenced(GOOD), prompt_tokens=300, completion_tokens=90),
              chat_reply(fenced(FASTER)), chat_reply(NO_CODE)]
    with FakeOpenAIServer(script, lifetime_s=600) as server:
        result = live(base / "trace", "--proposer", "openai", "--model", "fake-model",
                      "--base-url", server.base_url, "--cassette", str(cassette), "--record")
        requests = list(server.requests)
    assert result.exit_code == 0, result.output
    return base / "trace", cassette, requests


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
        yield patch


def steps_of(out: Path):
    from kbsim.trace.reader import load_trace, validate_trace

    assert validate_trace(out) == []
    data = load_trace(out)
    return data, data.steps_df().sort_values("step").reset_index(drop=True)


def test_k0_is_step_0_of_the_trace(recorded) -> None:
    out, _, requests = recorded
    data, steps = steps_of(out)
    assert list(steps["step"]) == [0, 1, 2]
    k0 = steps.iloc[0]
    k0_id = kernel_id(GOOD.strip() + "\n")
    assert (k0["strategy"], k0["parent_id"], k0["status"]) == (K0_STRATEGY, K0_PARENT, "ok")
    assert k0["child_id"] == k0_id
    assert (k0["prompt_tokens"], k0["completion_tokens"]) == (300, 90)
    assert k0["llm_model"] == "fake-model" and k0["reward"] == 0.0
    assert k0["child_ms"] > 0 and k0["speedup_vs_ref"] > 0
    # the policy's attempts follow from step 1, with k0 as their first parent
    first, second = steps.iloc[1], steps.iloc[2]
    assert first["strategy"] in STRATEGIES and first["parent_id"] == k0_id
    assert first["status"] == "ok", first["error"]
    assert first["child_id"] == kernel_id(FASTER.strip() + "\n")
    assert second["status"] == "no_code"
    kernels = data.kernels_df().set_index("kernel_id")
    assert bool(kernels.loc[k0_id, "correct"]) and pd.isna(kernels.loc[k0_id, "parent_id"])
    # the k0 request asked for a first kernel from the problem's own code
    prompt = requests[0]["messages"][-1]["content"]
    assert "write the first one from the reference" in prompt
    assert "class Model(nn.Module)" in prompt and "ModelNew" in prompt
    assert "Strategy to apply" in requests[1]["messages"][-1]["content"]


def test_readers_of_the_policy_attempts_leave_the_k0_step_out(recorded) -> None:
    from analysis.fast_p import best_per_run
    from kbsim.envs.recorded import compile_recorded
    from live.runner.resume import load_recorded

    out, _, _ = recorded
    data, steps = steps_of(out)
    fields, tasks = compile_recorded(data.steps, data.kernels)
    assert tasks == (RELU,) or list(tasks) == [RELU]
    run = load_recorded(out, steps["run_id"].iloc[0])
    assert [r["step"] for r in run.steps_of(RELU)] == [1, 2]
    assert run.k0_step(RELU)["child_id"] == steps.iloc[0]["child_id"]
    # fast_p's best kernel is the policy's (k0 does not count)
    (row,) = best_per_run(steps).to_dict("records")
    assert row["best_ms"] == pytest.approx(steps.iloc[1]["child_ms"])


def test_the_cassette_replays_the_run_with_no_server(recorded, tmp_path: Path) -> None:
    out, cassette, _ = recorded
    result = live(tmp_path / "replay", "--proposer", "cassette", "--cassette", str(cassette))
    assert result.exit_code == 0, result.output
    _, original = steps_of(out)
    _, replayed = steps_of(tmp_path / "replay")
    keys = ["step", "strategy", "parent_id", "status", "child_id", "prompt_tokens"]
    assert replayed[keys].to_dict("records") == original[keys].to_dict("records")


def test_a_k0_step_that_fails_stops_the_task_and_is_recorded(tmp_path: Path,
                                                            monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    with FakeOpenAIServer([chat_reply(NO_CODE)], lifetime_s=600) as server:
        result = live(tmp_path / "trace", "--proposer", "openai", "--model", "fake-model",
                      "--base-url", server.base_url, "--max-retries", "0")
    assert result.exit_code == 0, result.output
    _, steps = steps_of(tmp_path / "trace")
    assert steps[["step", "strategy", "status"]].to_dict("records") == [
        {"step": 0, "strategy": K0_STRATEGY, "status": "no_code"}]
    assert json.loads((tmp_path / "trace" / "manifest.json").read_text())["tasks"] == [RELU]


def test_a_resumed_run_keeps_its_k0_step(recorded, tmp_path: Path) -> None:
    """Stopped after one step and resumed to two: k0 comes from the trace (no second k0
    step), the policy's attempts go on from step 2, as in the run done in one piece."""
    out, cassette, _ = recorded
    piece = tmp_path / "piece"
    first = CliRunner().invoke(main, [
        "live", "--tasks", SPEC, "--device", "cpu", "--profile", "off", "--quiet",
        "--no-compile-timing", "--steps", "1", "--policy", "explore",
        "--out", str(piece),
        "--proposer", "cassette", "--cassette", str(cassette)])
    assert first.exit_code == 0, first.output
    _, steps = steps_of(piece)
    assert list(steps["step"]) == [0, 1]
    resumed = CliRunner().invoke(main, [
        "live", "--tasks", SPEC, "--device", "cpu", "--profile", "off", "--quiet",
        "--no-compile-timing", "--steps", "2", "--policy", "explore",
        "--out", str(piece), "--resume",
        "--proposer", "cassette", "--cassette", str(cassette)])
    assert resumed.exit_code == 0, resumed.output
    _, original = steps_of(out)
    _, steps = steps_of(piece)
    keys = ["step", "strategy", "parent_id", "status", "child_id"]
    assert steps[keys].to_dict("records") == original[keys].to_dict("records")


def test_tasks_without_k0_are_known_before_loading(tmp_path: Path, monkeypatch) -> None:
    from live.tasks import kernelbench
    from live.tasks.registry import tasks_without_k0

    def no_load(*args, **kwargs):
        raise AssertionError("loaded")

    monkeypatch.setattr(kernelbench, "load", no_load)  # nothing is checked to say it
    mini = f"kernelbench:{MINI}"
    assert tasks_without_k0(f"{mini}@level1:1-2") == [RELU, "kernelbench/level1/2_Matmul"]
    (tmp_path / "relu.py").write_text(GOOD)
    listing = tmp_path / "k0.json"
    listing.write_text(json.dumps({"problems": ["level1/1_ReLU", "level1/2_Matmul"],
                                   "k0": {"level1/1_ReLU": "relu.py"}}))
    assert tasks_without_k0(f"{mini}@{listing}") == ["kernelbench/level1/2_Matmul"]
    assert tasks_without_k0("builtin") is None
    result = live(tmp_path / "trace", "--proposer", "mutate")
    assert result.exit_code == 2 and "have no k0" in result.output
