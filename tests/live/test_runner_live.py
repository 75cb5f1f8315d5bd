"""The live runner end to end on CPU (Triton interpreter): mutate proposer, openai proposer
against a local fake endpoint, cassette replay, and kill-and-resume (issue 5 acceptance)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbsim.trace.reader import load_trace, validate_trace
from live.evaluator import Evaluator, EvaluatorConfig
from live.proposers import make_proposer
from live.proposers.llm import OpenAIChatClient
from live.runner import RunConfig
from live.runner.resume import ResumeError
from live.runner.runner import LiveRunner
from live.tasks.registry import resolve_task
from tests.live.fakeserver import FakeOpenAIServer, chat_reply, error_reply

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="CPU runs need TRITON_INTERPRET=1"
)

#: the columns of a step that depend on choices and outcomes, not on measured times
DECISION_COLUMNS = ["task_id", "step", "cluster", "parent_id", "strategy", "child_id", "status",
                    "logging_propensity", "prompt_tokens", "completion_tokens"]


def decisions(path: Path, run_id: str | None = None):
    steps = load_trace(path).steps_df()
    if run_id is not None:
        steps = steps[steps["run_id"] == run_id]
    return steps.sort_values(["task_id", "step"])[DECISION_COLUMNS].reset_index(drop=True)


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvaluatorConfig("builtin", device="cpu", workers=1, timeout_s=60)) as ev:
        yield ev


def test_mutate_run_on_three_tasks_writes_a_valid_trace(tmp_path, evaluator):
    config = RunConfig(out=str(tmp_path / "t"), tasks="add,softmax,transpose",
                       policy="kernelband-v2", steps=5, device="cpu", profile="off",
                       in_flight=3)
    result = LiveRunner(config, make_proposer("mutate"), show_progress=False,
                        evaluator=evaluator).run()
    assert validate_trace(tmp_path / "t") == []
    data = load_trace(tmp_path / "t")
    steps, kernels = data.steps_df(), data.kernels_df()
    # not_applicable attempts are rows of their own that spend no step (issue #18)
    spent = steps[steps["status"] != "not_applicable"]
    assert len(spent) == 15
    assert sorted(steps["task_id"].unique()) == ["add", "softmax", "transpose"]
    for task_id in ("add", "softmax", "transpose"):
        part = steps[steps["task_id"] == task_id]
        assert list(part["step"].sort_values()) == list(range(len(part)))
        assert (part["status"] != "not_applicable").sum() == 5
    # every ok step's child is a correct kernel of the trace; k0 of every task is there
    ok = steps[steps["status"] == "ok"]
    assert len(ok) > 0
    correct = set(kernels[kernels["correct"]]["kernel_id"])
    assert set(ok["child_id"]) <= correct
    from live.evaluator import kernel_id

    for t in ("add", "softmax", "transpose"):
        assert kernel_id(resolve_task("builtin", t).k0) in set(kernels["kernel_id"])
    assert set(kernels["timing_backend"]) == {"cpu-interpreter"}
    assert data.manifests[0]["hardware"]["timing_backend"] == "cpu-interpreter"
    assert data.manifests[0]["config"]["policy"] == "kernelband-v2"
    # v2 rewards follow the paper: max(0, (T_parent - T_child) / T_parent), failures 0
    for row in steps.to_dict("records"):
        if row["status"] == "ok":
            expected = max(0.0, (row["parent_ms"] - row["child_ms"]) / row["parent_ms"])
            assert row["reward"] == pytest.approx(expected)
        else:
            assert row["reward"] == 0.0
    for summary in result.tasks:
        assert Path(summary.best_path).read_text().strip()
        assert summary.steps == 5
    # where each evaluation's time went: one line per evaluation (k0s and evaluated steps)
    import json

    log = (tmp_path / "t" / "evaluations.jsonl").read_text()
    lines = [json.loads(x) for x in log.splitlines()]
    assert sorted(x["kernel_id"] for x in lines) == sorted(kernels["kernel_id"])
    assert {x["task_id"] for x in lines} == {"add", "softmax", "transpose"}
    for line in lines:
        assert line["eval_latency_s"] is not None and line["eval_latency_s"] >= 0
        if line["status"] == "ok":
            assert line["timing_s"] > 0 and line["check_s"] >= 0


def test_existing_trace_without_resume_is_refused(tmp_path, evaluator):
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", steps=1, device="cpu",
                       profile="off")
    LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=evaluator).run()
    with pytest.raises(FileExistsError, match="already holds a trace; pass --resume"):
        LiveRunner(config, make_proposer("mutate"), show_progress=False,
                   evaluator=evaluator).run()
    other = RunConfig(out=str(tmp_path / "t"), tasks="add", steps=2, device="cpu",
                      profile="off", policy="random")
    with pytest.raises(ResumeError, match="different policy 'kernelband-v2' -> 'random'"):
        LiveRunner(other, make_proposer("mutate"), show_progress=False, resume=True,
                   evaluator=evaluator, ).run()


# -- openai proposer against a real local HTTP endpoint, then its cassette ---------------------

class NoSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _reply(code: str) -> str:
    return f"Here is the kernel.\n\n```python\n{code.strip()}\n```\n"


def test_openai_proposer_run_and_cassette_replay(tmp_path, evaluator):
    k0 = resolve_task("builtin", "add").k0
    wrong = k0.replace("x + alpha * y", "x - alpha * y")
    assert wrong != k0
    script = [
        error_reply(429, "rate limited", retry_after="1"),   # step 0: retried ...
        chat_reply(_reply(k0)),                               # ... then a good kernel
        error_reply(500),                                     # step 1: a 5xx, retried ...
        chat_reply("I would tile it, but no code today."),    # ... then a reply without code
        dataclasses.replace(chat_reply(_reply(k0)), delay_s=3.0),  # step 2: a timeout ...
        chat_reply(_reply(wrong)),                            # ... then a wrong kernel
        chat_reply(_reply("def broken(:\n    pass")),         # step 3: unparsable code
        chat_reply(_reply(k0)),                               # step 4: good again
    ]
    sleeper = NoSleep()
    cassette = tmp_path / "llm.jsonl"
    config = RunConfig(out=str(tmp_path / "live"), tasks="add", policy="explore", steps=5,
                       device="cpu", profile="off", in_flight=1)
    with FakeOpenAIServer(script) as server:
        proposer = make_proposer(
            "openai", model="fake-model", base_url=server.base_url, api_key="sk-test-SECRET",
            timeout_s=0.5, max_retries=3, backoff_base_s=0.01, backoff_max_s=2.0,
            client_factory=lambda cfg: OpenAIChatClient(cfg, sleep=sleeper),
            cassette=cassette,
        )
        LiveRunner(config, proposer, show_progress=False, evaluator=evaluator).run()
        assert server.remaining == 0
    assert validate_trace(tmp_path / "live") == []
    live_steps = decisions(tmp_path / "live")
    assert list(live_steps["status"]) == ["ok", "no_code", "incorrect", "no_code", "ok"]
    steps = load_trace(tmp_path / "live").steps_df()
    assert (steps["prompt_tokens"] > 0).all()
    assert (steps["llm_model"] == "fake-model").all()
    assert len(sleeper.waits) >= 3  # 429, 500 and the timeout were each retried
    assert "SECRET" not in cassette.read_text()
    # server stopped: the cassette replays the same run with no network
    replay = RunConfig(out=str(tmp_path / "replayed"), tasks="add", policy="explore", steps=5,
                       device="cpu", profile="off", in_flight=1)
    LiveRunner(replay, make_proposer("cassette", path=cassette), show_progress=False,
               evaluator=evaluator).run()
    assert decisions(tmp_path / "replayed").equals(live_steps)


# -- kill and resume ---------------------------------------------------------------------------

def _live_cmd(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kernelband.cli", "live", "--tasks", "add,transpose",
            "--policy", "explore", "--steps", "5", "--seed", "3", "--device", "cpu",
            "--profile", "off", "--in-flight", "2", "--quiet", "--out", str(out), *extra]


def _n_steps(path: Path) -> int:
    try:
        return len(load_trace(path).steps)
    except Exception:
        return 0


def test_killed_run_resumes_to_the_uninterrupted_trace(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    whole = tmp_path / "whole"
    subprocess.run(_live_cmd(whole), env=env, check=True, capture_output=True, timeout=300)
    killed = tmp_path / "killed"
    kills = 0
    for target in (2, 6):  # kill once a few steps are on disk, twice, then finish
        proc = subprocess.Popen(_live_cmd(killed, "--resume"), env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        while _n_steps(killed) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        assert validate_trace(killed) == []
    assert kills >= 1
    subprocess.run(_live_cmd(killed, "--resume"), env=env, check=True, capture_output=True,
                   timeout=300)
    assert validate_trace(killed) == []
    assert decisions(killed).equals(decisions(whole))


# -- profiling: the representatives the policy asks for, or every correct kernel ---------------

class FakeProfiler:
    """Stands in for Nsight Compute on CPU: a deterministic signature per kernel."""

    name = "fake-ncu"
    available = True

    def __init__(self) -> None:
        self.calls: list[str] = []

    def profile(self, task_name: str, code: str):
        from live.evaluator import kernel_id
        from live.profiler import ProfileResult

        kid = kernel_id(code)
        self.calls.append(kid)
        level = int(kid[:4], 16) % 100
        return ProfileResult(kid, task_name, profiled=True, profiler=self.name,
                             hw_sig=(float(level), float(100 - level), 50.0),
                             profile9=tuple(float(level) for _ in range(9)))


@pytest.mark.parametrize("mode", ["reps", "all"])
def test_profiles_are_recorded_once_per_kernel(tmp_path, evaluator, mode):
    profiler = FakeProfiler()
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", policy="kernelband-v2:K=1",
                       steps=6, device="cpu", profile=mode, in_flight=1)
    LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=evaluator,
               profiler=profiler).run()
    assert validate_trace(tmp_path / "t") == []
    kernels = load_trace(tmp_path / "t").kernels_df()
    profiled = set(kernels[kernels["profiled"]]["kernel_id"])
    assert len(profiler.calls) == len(set(profiler.calls)) == len(profiled) >= 1
    correct = set(kernels[kernels["correct"]]["kernel_id"])
    if mode == "all":
        assert profiled == correct
    else:
        assert profiled < correct or len(correct) == 1
    for row in kernels[kernels["profiled"]].to_dict("records"):
        assert row["profiler"] == "fake-ncu" and len(row["hw_sig"]) == 3


# -- not-applicable proposals (issue #18) ------------------------------------------------------

class NothingApplies:
    """A proposer that can apply no strategy to any kernel (no LLM, no GPU)."""

    name = "nothing-applies"

    def describe(self) -> dict:
        return {"kind": self.name}

    def propose(self, task, parent, strategy, *, seed, sample_index):
        from live.proposers.base import Proposal

        return Proposal(status="not_applicable", code=None, error=f"{strategy}: nothing to do")


@pytest.mark.parametrize("policy", ["kernelband-v2", "greedy"])
def test_a_task_with_no_applicable_pair_stops_with_its_reason(tmp_path, evaluator, policy):
    from kbsim.policies.episode import NO_APPLICABLE_PAIR

    config = RunConfig(out=str(tmp_path / "t"), tasks="add", policy=policy, steps=10,
                       device="cpu", profile="off")
    result = LiveRunner(config, NothingApplies(), show_progress=False,
                        evaluator=evaluator).run()
    (summary,) = result.tasks
    assert summary.stopped == NO_APPLICABLE_PAIR and summary.steps == 0
    steps = load_trace(tmp_path / "t").steps_df()
    # each of k0's six strategies tried once, recorded as its own row, none spending a step
    assert sorted(steps["strategy"]) == sorted(
        ["tiling", "vectorization", "fusion", "pipeline", "reordering", "access_layout"])
    assert (steps["status"] == "not_applicable").all()
    assert sorted(steps["step"]) == list(range(6))
