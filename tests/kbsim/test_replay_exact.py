"""Acceptance: replaying a logged run with its own logging policy reproduces it exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kbsim.envs.recorded import load_tables
from kbsim.envs.synthetic import build_synthetic
from kbsim.envs.tape import build_tape
from kbsim.replay.record import record_trace
from kbsim.replay.sweep import run_sweep
from kbsim.strategies import STRATEGIES


def _record(tmp_path_factory, policy: str):
    path = tmp_path_factory.mktemp("trace") / policy
    env = build_synthetic("default,tasks=3,fail=0.3,seed=5")
    record_trace(path, env, policy, seed=11, steps=60)
    return path


@pytest.fixture(scope="module")
def explore_trace(tmp_path_factory):
    return _record(tmp_path_factory, "explore")


def _replayed(trace_path, policy: str, seed: int, steps: int):
    steps_table, kernels = load_tables(trace_path)
    env = build_tape(steps_table, kernels, on_exhaust="stop")
    result = run_sweep([policy], env, [seed], steps)
    return steps_table.to_pandas(), result


def test_tape_replay_of_logging_policy_reproduces_rewards_exactly(explore_trace) -> None:
    _check_exact(explore_trace, "explore")


@pytest.mark.parametrize("policy", ["kernelband-v2", "kernelband-v1", "thompson",
                                    "kernelband-v2:parent=speed,frontier=3",
                                    "kernelband-v2:K=1,mask=0,parent=fastest"])
def test_tape_replay_of_adaptive_logging_policies_is_exact_too(tmp_path_factory, policy) -> None:
    # the replay loop is the live loop: clustering, masks (hw of representatives from the
    # trace), parent choice and the v1 prior all see what they saw when the run was logged
    trace = _record(tmp_path_factory, policy)
    manifest = json.loads((trace / "manifest.json").read_text())
    assert manifest["policy"]["spec"] == policy  # the parent rule is part of the record
    _check_exact(trace, policy)


def _check_exact(trace_path, policy: str) -> None:
    logged, result = _replayed(trace_path, policy, seed=11, steps=60)
    replayed = result.results.to_pandas()
    assert len(replayed) == len(logged) == 3 * 60
    for task_id, rows in logged.groupby("task_id"):
        rows = rows.sort_values("step")
        mine = replayed[replayed.task_id == task_id].sort_values("step")
        # identical floats, not merely close
        assert np.array_equal(mine["reward"].to_numpy(), rows["reward"].to_numpy())
        assert list(mine["strategy"].map(lambda s: STRATEGIES[s])) == list(rows["strategy"])
        assert np.array_equal(mine["success"].to_numpy(), (rows["status"] == "ok").to_numpy())
        assert (mine["tokens"].diff().fillna(mine["tokens"].iloc[0]).to_numpy()
                == rows["prompt_tokens"].to_numpy()).all()
    summary = result.summary
    assert (summary["coverage"] == 1.0).all()  # every step served fresh from its tape
    assert not summary["truncated"].any()


def test_other_seed_diverges_and_a_stop_tape_truncates(explore_trace) -> None:
    _, result = _replayed(explore_trace, "explore", seed=12, steps=60)
    summary = result.summary
    # a different policy stream asks for arms the log never tried: `stop` ends those episodes
    assert summary["truncated"].any()
    assert (summary["steps_run"] < 60).any()
    assert ((summary["coverage"] > 0) & (summary["coverage"] <= 1)).all()
