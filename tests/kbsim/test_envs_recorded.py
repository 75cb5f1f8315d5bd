"""Tape and fitted environments built from a trace's steps and kernels tables."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kbsim.envs.fitted import build_fitted, fitted_pick_arrays
from kbsim.envs.tape import build_tape
from kbsim.replay.sweep import run_sweep
from kbsim.rng import new_rng
from kbsim.strategies import N_STRATEGIES, STRATEGIES
from kbsim.trace.synthetic_trace import synthetic_tables


@pytest.fixture(scope="module")
def tables():
    return synthetic_tables(n_steps=600, n_tasks=3, seed=2)


def test_tapes_hold_each_arms_outcomes_in_recorded_order(tables) -> None:
    steps, kernels = tables
    env = build_tape(steps, kernels)
    data = env.data
    frame = steps.to_pandas()
    task = frame[frame.task_id == env.task_ids[0]].sort_values("step")
    kernel_ids = (
        kernels.to_pandas().query("task_id == @env.task_ids[0]")["kernel_id"].tolist()
    )
    k0 = kernel_ids.index(task.iloc[0]["parent_id"])
    assert data.task_k0[0] == k0
    for s, name in enumerate(STRATEGIES):
        rows = task[(task.parent_id == kernel_ids[k0]) & (task.strategy == name)]
        slot = k0 * N_STRATEGIES + s
        lo, hi = data.tape_start[slot], data.tape_start[slot + 1]
        assert hi - lo == len(rows)
        assert np.array_equal(data.o_success[lo:hi], (rows.status == "ok").to_numpy())
        tokens = (rows.prompt_tokens + rows.completion_tokens).to_numpy()
        assert np.array_equal(data.o_tokens[lo:hi], tokens)
        if len(rows):
            assert data.tape_mean[k0, s] == pytest.approx(rows.reward.mean())


def test_nearest_points_to_another_kernel_with_outcomes(tables) -> None:
    env = build_tape(*tables, on_exhaust="nearest").data
    for k in range(env.k_ms.shape[0]):
        for s in range(N_STRATEGIES):
            nn = env.tape_nn[k, s]
            if nn >= 0:
                assert nn != k
                slot = nn * N_STRATEGIES + s
                assert env.tape_start[slot + 1] > env.tape_start[slot]


@pytest.mark.parametrize(
    ("on_exhaust", "truncates"), [("stop", True), ("resample", False), ("nearest", False)]
)
def test_exhausted_tapes_follow_the_on_exhaust_rule(tables, on_exhaust, truncates) -> None:
    env = build_tape(*tables, on_exhaust=on_exhaust)
    summary = run_sweep(["greedy", "kernelband-v2"], env, 5, 150).summary
    assert summary["truncated"].any() == truncates
    assert summary["coverage"].between(0, 1).all()
    if truncates:
        assert (summary["steps_run"] < 150).all()
    else:
        # an explore log of a fast-growing pool leaves most (kernel, strategy) tapes short
        assert summary["coverage"].mean() < 0.5


def test_tape_regret_is_measured_against_tape_means(tables) -> None:
    env = build_tape(*tables, on_exhaust="resample")
    data = env.data
    # without the floor every arm mean is a recorded tape mean; with it (NOTE D47) a stand-in
    # near the floor gets a clamped mean (tests/kbsim/test_envs_floor.py)
    data.task_floor_ms[:] = 0.0
    frame = run_sweep(["random"], env, 3, 30).results.to_pandas()
    assert (frame["regret"].dropna() >= -1e-12).all()
    assert frame["arm_mean"].notna().any()
    assert set(np.round(frame["best_mean"].dropna(), 12)) <= set(
        np.round(data.tape_mean[~np.isnan(data.tape_mean)], 12)
    )


@njit
def _mc_fitted(env, key, s, rng, n):
    total = 0.0
    parent_ms = env.k_ms[key]
    for _ in range(n):
        row = fitted_pick_arrays(env.fit_nbr, env.fit_nbr_n, env.tape_start, key, s, rng)
        if row >= 0 and env.o_success[row]:
            child_ms = parent_ms * env.o_child_ms[row] / env.o_parent_ms[row]
            total += max(0.0, (parent_ms - child_ms) / parent_ms)
    return total / n


def test_fitted_model_mean_is_the_mean_of_its_draws(tables) -> None:
    env = build_fitted(*tables, knn=4)
    data = env.data
    k0 = data.task_k0[0]
    assert (data.fit_nbr_n[k0] == 4).all()
    assert k0 in data.fit_nbr[k0, :, 0]  # k0 is its own nearest recorded parent
    rng = new_rng(3)
    for s in range(N_STRATEGIES):
        exact = data.fit_mean[k0, s]
        assert exact == pytest.approx(np.mean(data.tape_mean[data.fit_nbr[k0, s], s]))
        assert _mc_fitted(data, k0, s, rng, 60_000) == pytest.approx(exact, abs=0.006)


def test_fitted_env_has_an_unlimited_horizon(tables) -> None:
    env = build_fitted(*tables)
    summary = run_sweep(["kernelband-v2"], env, 4, 300).summary
    assert not summary["truncated"].any()
    assert (summary["coverage"] == 1.0).all()
    assert (summary["final_best_speedup"] >= 1.0).all()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s, k: (s.drop_columns(["child_ms"]), k), "steps table lacks column.*child_ms"),
        (lambda s, k: (s, k.drop_columns(["phi"])), "kernels table lacks column.*phi"),
        (lambda s, k: (s.slice(0, 0), k), "holds no steps"),
    ],
)
def test_bad_traces_get_one_clear_sentence(tables, mutate, message) -> None:
    steps, kernels = mutate(*tables)
    with pytest.raises(ValueError, match=message):
        build_tape(steps, kernels)


def test_unknown_task_and_rule_are_named(tables) -> None:
    with pytest.raises(ValueError, match="task.*nope.*not in the trace"):
        build_tape(*tables, tasks=["nope"])
    with pytest.raises(ValueError, match="unknown on-exhaust rule 'never'"):
        build_tape(*tables, on_exhaust="never")
    assert build_fitted(*tables, tasks=["task001"]).task_ids == ("task001",)
