"""Issue #20: the compiled replay loop (`kbsim.replay.engine`'s worker) is the Python step
(`kbsim.policies.episode.Episode`, run by the live runner) inlined: a live run on CPU with the
mutate proposer, replayed on its own tape with the same policy and seed, is reproduced step by
step (arm, parent, status, reward bit for bit, pool growth), not-applicable attempts included."""

from __future__ import annotations

import json
import os

import pytest

from kbsim.envs.recorded import load_tables
from kbsim.envs.tape import build_tape
from kbsim.replay.sweep import run_sweep
from kbsim.strategies import STRATEGIES
from live.evaluator import Evaluator, EvaluatorConfig
from live.proposers import make_proposer
from live.runner import RunConfig
from live.runner.runner import LiveRunner

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                       reason="CPU runs need TRITON_INTERPRET=1"),
]

TASKS = ("add", "softmax")
STEPS = 8
SEED = 3


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvaluatorConfig("builtin", device="cpu", workers=1, timeout_s=60)) as ev:
        yield ev


@pytest.mark.parametrize("policy", ["explore", "kernelband-v2",
                                    "kernelband-v2:parent=speed,frontier=2"])
def test_live_run_replays_on_its_tape_step_for_step(tmp_path, evaluator, policy) -> None:
    out = tmp_path / policy
    config = RunConfig(out=str(out), tasks=",".join(TASKS), policy=policy, steps=STEPS,
                       seed=SEED, device="cpu", profile="off", in_flight=1)
    LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=evaluator).run()
    # the parent rule (DESIGN.md) reaches the live policy and its manifest
    assert json.loads((out / "manifest.json").read_text())["policy"]["spec"] == policy
    steps_table, kernels = load_tables(out)
    env = build_tape(steps_table, kernels, on_exhaust="stop")
    replay = run_sweep([policy], env, [SEED], STEPS).results.to_pandas()
    logged = steps_table.to_pandas()
    # not_applicable attempts (the mutate proposer declines some strategies) are rows of their
    # own that spend no step: replay answers them from the tape and selects again (issue #18)
    assert (logged.status == "not_applicable").any()
    spent = logged[logged.status != "not_applicable"]
    assert len(spent) == len(replay) == len(TASKS) * STEPS
    for task_id in TASKS:
        rows = logged[logged.task_id == task_id].sort_values("step")
        assert list(rows["step"]) == list(range(len(rows)))
        live = spent[spent.task_id == task_id].sort_values("step").reset_index(drop=True)
        mine = replay[replay.task_id == task_id].sort_values("step").reset_index(drop=True)
        assert list(mine["step"]) == list(range(STEPS))
        # the pool in the order the live episode grew it: k0, then each correct child
        pool_ids = [live["parent_id"].iloc[0]]
        for t in range(STEPS):
            row = live.iloc[t]
            assert STRATEGIES[mine["strategy"].iloc[t]] == row["strategy"], (task_id, t)
            assert pool_ids[mine["parent"].iloc[t]] == row["parent_id"], (task_id, t)
            assert bool(mine["success"].iloc[t]) == (row["status"] == "ok"), (task_id, t)
            assert mine["cluster"].iloc[t] == row["cluster"], (task_id, t)
            if row["status"] == "ok":
                pool_ids.append(row["child_id"])
            # the policy's own reward, identical floats
            assert mine["reward"].iloc[t] == row["reward"], (task_id, t)
            assert mine["pool_size"].iloc[t] == len(pool_ids), (task_id, t)
        assert mine["success"].any() or not (live["status"] == "ok").any()
