"""Issue 15: a live ``--profile reps`` run on CPU whose policy saw roofline signatures until
Nsight Compute's came back (a deterministic stand-in: every profile is back when asked, shown
``LAG`` steps later) is (a) reproduced step for step by the compiled replay on its own tape with
the recorded reveal schedule (``signature-reveals.jsonl`` and the kernels' ``roofline_sig``),
and (b) resumed after an interruption into the same run as the uninterrupted one.

The evaluator is a deterministic stand-in too (runtimes and features from the kernel's hash),
so two runs of the same configuration choose alike and only the signature timing is tested."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kbsim.envs.recorded import load_tables
from kbsim.envs.tape import build_tape
from kbsim.replay.sweep import run_sweep
from kbsim.strategies import STRATEGIES
from kbsim.trace.reader import validate_trace
from kbsim.trace.reveals import REVEALS_NAME, load_reveals
from live.evaluator import EvalResult, kernel_id
from live.evaluator.result import TimedResult
from live.hardware import gpu_peaks
from live.profiler import ProfileResult
from live.profiler.provider import SignatureProvider, SignatureTiming
from live.proposers import make_proposer
from live.runner import RunConfig
from live.runner.runner import LiveRunner
from live.tasks.registry import resolve_tasks

TASKS = "add,softmax"
POLICY = "kernelband-v2:K=2,tau=3"
STEPS, SEED, LAG = 12, 4, 2


def _unit(kid: str, salt: int) -> float:
    """A number in [0, 1) from a kernel id."""
    return (int(kid[salt:salt + 6], 16) % 10_000) / 10_000


class HashEvaluator:
    """Correctness, runtimes and features from the candidate's hash (no kernel runs)."""

    device = "cpu"
    device_info: dict = {"device_name": None}

    # the rest of live.evaluator.CandidateEvaluator: no memory plan, no lock, no notes
    memory_plan_info = None
    gpu_lock_info = None
    session_memory = None

    def shape_notes(self, task_name: str) -> list[str]:
        return []

    def __init__(self) -> None:
        self.tasks = {t.name: t for t in resolve_tasks(TASKS)}

    def evaluate(self, task_name: str, code: str, *, seed: int = 0) -> EvalResult:
        kid = kernel_id(code)
        task = self.tasks[task_name]
        if _unit(kid, 0) < 0.2 and code != task.k0:
            return EvalResult(status="incorrect", kernel_id=kid, task_id=task_name,
                              error="wrong values")
        ms = 0.06 + 0.3 * _unit(kid, 2)  # the middle shape: DRAM 20 % .. 100 % of an H100
        middle = (len(task.perf_shapes) - 1) // 2
        shape_ms = tuple(ms * 2.0 ** (i - middle) for i in range(len(task.perf_shapes)))
        timed = TimedResult(
            ms=sum(shape_ms), shape_ms=shape_ms, ref_ms=1.0,
            phi=tuple(_unit(kid, 3 + d) * 10 for d in range(5)),
            runtime_vec=tuple(_unit(kid, 4 + d) for d in range(6)),
            shapes=tuple(dict(s) for s in task.perf_shapes))
        return EvalResult(
            status="ok", kernel_id=kid, task_id=task_name, correct=True,
            timing_backend="cpu-interpreter", timed=timed, eval_latency_s=0.0)

    def close(self) -> None:
        pass


class HashNcu:
    """Stands in for Nsight Compute: a signature from the kernel's hash."""

    name = "fake-ncu"
    available = True
    unavailable_reason = None

    def profile(self, task_name: str, code: str) -> ProfileResult:
        kid = kernel_id(code)
        level = 100 * _unit(kid, 8)
        return ProfileResult(kid, task_name, profiled=True, profiler=self.name,
                             hw_sig=(level, 100 - level, 50.0), profile9=tuple([level] * 9))


class AtOnceProvider(SignatureProvider):
    """Profiles what is queued as soon as it is asked for, on the asking thread: the profile is
    always back, so Nsight's signature shows exactly `LAG` steps after the first ask."""

    def _ensure_thread(self) -> None:
        batch, self._queue = self._queue, []
        if batch:
            self._run_batch(batch)


class Runner(LiveRunner):
    def _signature_provider(self, info):
        return AtOnceProvider(
            self.config.profile, {t.name: t for t in self.tasks}, peaks=gpu_peaks("h100-sxm"),
            profiler=self.profiler, device_alone=self.parts.device_alone,
            on_profiled=self._on_profiled, timing=SignatureTiming(lag_steps=LAG),
            on_reveal=self._on_reveal)


def _run(out: Path, steps: int, resume: bool = False) -> None:
    config = RunConfig(out=str(out), tasks=TASKS, policy=POLICY, steps=steps, seed=SEED,
                       device="cpu", profile="reps", profile_lag=LAG, in_flight=1)
    Runner(config, make_proposer("mutate"), show_progress=False, evaluator=HashEvaluator(),
           profiler=HashNcu(), resume=resume).run()
    assert validate_trace(out) == []


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reveal") / "whole"
    _run(out, STEPS)
    return out


def _replay(out: Path, reveal: str | None) -> pd.DataFrame:
    steps_table, kernels = load_tables(out)
    env = build_tape(steps_table, kernels, on_exhaust="stop", reveals=load_reveals(out),
                     reveal=reveal)
    assert env.reveal == (reveal or "recorded")
    return run_sweep([POLICY], env, [SEED], STEPS).results.to_pandas()


def _matches(out: Path, replay: pd.DataFrame) -> bool:
    """Whether the replay chose the live run's arm, parent and cluster and got its reward at
    every step of every task."""
    logged = load_tables(out)[0].to_pandas()
    spent = logged[logged.status != "not_applicable"]
    for task_id in TASKS.split(","):
        live = spent[spent.task_id == task_id].sort_values("step").reset_index(drop=True)
        mine = replay[replay.task_id == task_id].sort_values("step").reset_index(drop=True)
        if len(live) != STEPS or len(mine) != STEPS:
            return False
        pool_ids = [live["parent_id"].iloc[0]]
        for t in range(STEPS):
            row = live.iloc[t]
            if (STRATEGIES[mine["strategy"].iloc[t]] != row["strategy"]
                    or pool_ids[mine["parent"].iloc[t]] != row["parent_id"]
                    or mine["cluster"].iloc[t] != row["cluster"]
                    or mine["reward"].iloc[t] != row["reward"]):
                return False
            if row["status"] == "ok":
                pool_ids.append(row["child_id"])
    return True


def test_live_reps_run_replays_on_its_tape_with_the_recorded_reveals(whole: Path) -> None:
    reveals = load_reveals(whole)
    assert reveals and all(r.shown_step == r.asked_step + LAG for r in reveals)
    kernels = load_tables(whole)[1].to_pandas()
    correct = kernels[kernels.correct]
    assert correct["roofline_sig"].notna().all()  # the live side records it for every one
    assert _matches(whole, _replay(whole, None))
    # seeing Nsight's signatures at once (replay before issue 15) is another run
    assert not _matches(whole, _replay(whole, "at-once"))


def test_resumed_reps_run_matches_the_uninterrupted_one(whole: Path, tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    _run(out, STEPS // 2)  # interrupted half-way (every attempt so far on disk) ...
    first = (out / REVEALS_NAME).read_text().splitlines()
    _run(out, STEPS, resume=True)  # ... and resumed: the recorded steps are replayed first
    key = ["task_id", "step"]
    cols = [*key, "parent_id", "strategy", "child_id", "status", "cluster", "reward"]
    mine = load_tables(out)[0].to_pandas()[cols].sort_values(key).reset_index(drop=True)
    want = load_tables(whole)[0].to_pandas()[cols].sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, want)
    # the resumption neither forgot nor repeated a first showing
    lines = [json.loads(line) for line in (out / REVEALS_NAME).read_text().splitlines()]
    assert lines[:len(first)] == [json.loads(line) for line in first]
    assert sorted(map(json.dumps, lines)) == sorted(
        map(json.dumps, (json.loads(x) for x in (whole / REVEALS_NAME).read_text().splitlines())))
