"""Issue #18 in replay: environments answer `not_applicable`, the compiled engine spends no step
on it, and the tape replay of a logged run with not-applicable rows reproduces it exactly."""

from __future__ import annotations

import numpy as np
import pytest

from kbsim.envs.recorded import load_tables
from kbsim.envs.synthetic import build_synthetic
from kbsim.envs.tape import build_tape
from kbsim.policies.spec import POLICY_NAMES
from kbsim.replay.record import record_trace
from kbsim.replay.sweep import run_sweep
from kbsim.strategies import STRATEGIES

pytestmark = pytest.mark.slow

WORLD = "default,tasks=3,fail=0.3,seed=5,na=0.35"


def _record(tmp_path_factory, policy: str, steps: int = 50):
    path = tmp_path_factory.mktemp("trace") / policy
    record_trace(path, build_synthetic(WORLD), policy, seed=11, steps=steps)
    return path


@pytest.fixture(scope="module")
def explore_trace(tmp_path_factory):
    return _record(tmp_path_factory, "explore")


def test_the_recorded_run_never_repeats_a_known_not_applicable_pair(explore_trace) -> None:
    steps = load_tables(explore_trace)[0].to_pandas()
    na = steps[steps.status == "not_applicable"]
    assert len(na) > 10, "the world planted not-applicable pairs"
    for task_id, rows in steps.groupby("task_id"):
        rows = rows.sort_values("step")
        assert list(rows["step"]) == list(range(len(rows)))  # attempts numbered 0..n-1
        assert (rows.status != "not_applicable").sum() == 50  # NA rows spend no step of T
        seen: set[tuple[str, str]] = set()
        for row in rows.itertuples():  # record_trace gives every pool member its own id
            pair = (row.parent_id, row.strategy)
            assert pair not in seen, f"{task_id}: {pair} attempted after it was not applicable"
            if row.status == "not_applicable":
                seen.add(pair)
                assert row.reward == 0.0 and not isinstance(row.child_id, str)


@pytest.mark.parametrize("policy", ["explore", "kernelband-v2", "greedy", "kernelband-v1"])
def test_tape_replay_of_a_run_with_not_applicable_rows_is_exact(tmp_path_factory,
                                                                explore_trace, policy) -> None:
    path = explore_trace if policy == "explore" else _record(tmp_path_factory, policy)
    steps_table, kernels = load_tables(path)
    logged = steps_table.to_pandas()
    env = build_tape(steps_table, kernels, on_exhaust="stop")
    replay = run_sweep([policy], env, [11], 50).results.to_pandas()
    for task_id, rows in logged.groupby("task_id"):
        rows = rows[rows.status != "not_applicable"].sort_values("step")
        mine = replay[replay.task_id == task_id].sort_values("step")
        assert len(mine) == len(rows) == 50
        assert np.array_equal(mine["reward"].to_numpy(), rows["reward"].to_numpy())
        assert list(mine["strategy"].map(lambda s: STRATEGIES[s])) == list(rows["strategy"])
        assert np.array_equal(mine["success"].to_numpy(), (rows["status"] == "ok").to_numpy())
        assert list(mine["cluster"]) == list(rows["cluster"])


def test_the_legacy_rule_replays_not_applicable_as_failures(explore_trace) -> None:
    steps_table, kernels = load_tables(explore_trace)
    n_na = int((steps_table.to_pandas().status == "not_applicable").sum())
    assert int(build_tape(steps_table, kernels).data.o_na.sum()) == n_na
    legacy = build_tape(steps_table, kernels, not_applicable="failure")
    assert not legacy.data.o_na.any()
    with pytest.raises(ValueError, match="unknown not-applicable rule"):
        build_tape(steps_table, kernels, not_applicable="maybe")


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_the_engine_stops_a_task_without_applicable_pairs(policy) -> None:
    env = build_synthetic("default,tasks=2,na=1.0")
    result = run_sweep([policy], env, [0, 1], 20)
    assert (result.summary["steps_run"] == 0).all()
    partly = run_sweep([policy], build_synthetic("default,tasks=2,na=0.4"), [0, 1], 20)
    assert (partly.summary["steps_run"] == 20).all()
