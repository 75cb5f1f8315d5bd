"""Runtime floors: the synthetic env's planted roofline and the recorded floor of the fitted (D46)
and tape (D47) envs.

Without them a greedy policy compounds improvements without limit (synthetic: 3.4e48 at
T=1000; fitted: 11x in 40 steps on a synthetic trace).
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kbsim.envs.fitted import build_fitted, fitted_arm_means_arrays, fitted_pick_arrays
from kbsim.envs.step import recorded_outcome
from kbsim.envs.synthetic import build_synthetic, parse_synthetic, syn_arm_mean, syn_step
from kbsim.envs.tape import build_tape, tape_arm_means_arrays
from kbsim.replay.sweep import run_sweep
from kbsim.rng import new_rng, rand_int
from kbsim.strategies import N_STRATEGIES
from kbsim.trace.synthetic_trace import synthetic_tables


def test_presets_with_stationary_gaps_have_no_floor() -> None:
    assert parse_synthetic("default").roofline == 8.0
    assert parse_synthetic("default").floor_ms == pytest.approx(0.125)
    for preset in ("minimax", "fixed-gap", "fixed-pool"):
        assert parse_synthetic(preset).floor_ms == 0.0
    assert parse_synthetic("fixed-gap,roofline=4").floor_ms == pytest.approx(0.25)
    with pytest.raises(ValueError, match="roofline must be 0"):
        parse_synthetic("roofline=0.5")


@njit
def _mc_syn(env, phi, ms, s, rng, n):
    out_phi = np.empty(5)
    total = 0.0
    lowest = np.inf
    for _ in range(n):
        ok, child_ms, _ = syn_step(env, 0, 0, phi, ms, s, rng, out_phi)
        if ok:
            total += max(0.0, (ms - child_ms) / ms)
            lowest = min(lowest, child_ms)
    return total / n, lowest


@pytest.mark.parametrize("ms", [1.0, 0.4, 0.15, 0.125])
def test_synthetic_means_stay_exact_near_the_floor(ms: float) -> None:
    env = build_synthetic("default,noise=0.2,roofline=8").data
    phi = env.k_phi[0]
    rng = new_rng(2)
    for s in range(N_STRATEGIES):
        exact = syn_arm_mean(env, 0, 0, phi, s, ms)
        mc, lowest = _mc_syn(env, phi, ms, s, rng, 40_000)
        assert mc == pytest.approx(exact, abs=0.006)
        assert lowest >= 0.125 - 1e-12
    assert syn_arm_mean(env, 0, 0, phi, 0, 0.125) == 0.0  # no headroom left


def test_synthetic_without_floor_is_unchanged() -> None:
    env = build_synthetic("default,roofline=0,noise=0.2").data
    rng_a, rng_b = new_rng(5), new_rng(5)
    phi = env.k_phi[0]
    out = np.empty(5)
    for _ in range(200):
        ok, child_ms, _ = syn_step(env, 0, 0, phi, 0.5, 1, rng_a, out)
        ok_b, child_b, _ = syn_step(env, 0, 0, phi, 0.5, 1, rng_b, out)
        assert ok == ok_b and (not ok or child_ms == child_b)
        if ok:
            assert syn_arm_mean(env, 0, 0, phi, 1, 0.5) == syn_arm_mean(env, 0, 0, phi, 1)


def test_greedy_speedup_saturates_at_the_roofline() -> None:
    capped = run_sweep(["greedy"], build_synthetic("default,tasks=2,roofline=8"), 3, 600)
    assert (capped.summary["final_best_speedup"] <= 8.0 + 1e-9).all()
    assert (capped.summary["final_best_speedup"] > 2.0).all()
    frame = capped.results.to_pandas()
    assert (frame["regret"].dropna() >= -1e-12).all()
    free = run_sweep(["greedy"], build_synthetic("default,tasks=2,roofline=0"), 3, 600)
    assert (free.summary["final_best_speedup"] > 8.0).all()  # what the floor prevents


@pytest.fixture(scope="module")
def tables():
    return synthetic_tables(n_steps=600, n_tasks=3, seed=2)


def test_fitted_floor_is_the_fastest_correct_recorded_runtime(tables) -> None:
    steps, kernels = tables
    env = build_fitted(steps, kernels)
    frame = steps.to_pandas()
    for t, task in enumerate(env.task_ids):
        rows = frame[(frame.task_id == task) & (frame.status == "ok")]
        k0_ms = env.data.k_ms[env.data.task_k0[t]]
        assert env.data.task_floor_ms[t] == pytest.approx(min(rows.child_ms.min(), k0_ms))


def test_fitted_speedup_is_bounded_by_the_recorded_floor(tables) -> None:
    env = build_fitted(*tables)
    data = env.data
    sweep = run_sweep(["greedy", "kernelband-v2"], env, 4, 400)
    ceiling = data.k_ms[data.task_k0] / data.task_floor_ms
    summary = sweep.summary
    for t, task in enumerate(env.task_ids):
        rows = summary[summary["task_id"] == task]
        assert len(rows) == 8
        assert (rows["final_best_speedup"] <= ceiling[t] * (1 + 1e-9)).all()
    # the ceiling is reachable: some episode gets within 10% of it
    assert (summary["final_best_speedup"] >= 0.9 * ceiling.min()).any()
    frame = sweep.results.to_pandas()
    assert (frame["regret"].dropna() >= -1e-12).all()


@njit
def _mc_fitted_clamped(env, task, key, ms, s, rng, n):
    phi, prof9, rt6 = np.empty(5), np.empty(9), np.empty(6)
    total = 0.0
    lowest = np.inf
    floor_ms = env.task_floor_ms[task]
    for _ in range(n):
        row = fitted_pick_arrays(env.fit_nbr, env.fit_nbr_n, env.tape_start, key, s, rng)
        status, child_ms, _, _, _ = recorded_outcome(
            env.o_success, env.o_na, env.o_child, env.o_child_ms, env.o_parent_ms, env.o_tokens,
            env.o_cost, env.k_phi, env.k_prof9, env.k_rt6, row, False, True, ms, floor_ms,
            phi, prof9, rt6,
        )
        if status == 1:
            total += max(0.0, (ms - child_ms) / ms)
            lowest = min(lowest, child_ms)
    return total / n, lowest


@pytest.mark.parametrize("above_floor", [1.0, 1.3, 3.0])
def test_fitted_means_stay_exact_with_the_floor(tables, above_floor: float) -> None:
    data = build_fitted(*tables, knn=4).data
    k0, floor_ms = data.task_k0[0], data.task_floor_ms[0]
    ms = floor_ms * above_floor
    out = np.empty(N_STRATEGIES)
    fitted_arm_means_arrays(data.fit_mean, data.fit_min_ratio, data.fit_nbr, data.fit_nbr_n,
                            data.tape_start, data.o_success, data.o_child_ms, data.o_parent_ms,
                            k0, ms, floor_ms, out)
    if above_floor == 1.0:
        assert np.allclose(out, 0.0)  # at the floor nothing can improve
    rng = new_rng(4)
    for s in range(N_STRATEGIES):
        mc, lowest = _mc_fitted_clamped(data, 0, k0, ms, s, rng, 60_000)
        assert mc == pytest.approx(out[s], abs=0.006)
        assert lowest >= floor_ms
    # far above the floor the precomputed model means apply unchanged
    fitted_arm_means_arrays(data.fit_mean, data.fit_min_ratio, data.fit_nbr, data.fit_nbr_n,
                            data.tape_start, data.o_success, data.o_child_ms, data.o_parent_ms,
                            k0, 1e9, floor_ms, out)
    assert np.array_equal(out, data.fit_mean[k0])



# ---------------------------------------------------------------- tape env (NOTE D47)


@pytest.mark.parametrize("on_exhaust", ["nearest", "resample"])
def test_tape_speedup_is_bounded_by_the_recorded_floor(tables, on_exhaust: str) -> None:
    # 400 steps exhaust the tapes: stand-in ratios then compound (3.1x against a recorded
    # best of 2.1x on task 1 before the floor)
    env = build_tape(*tables, on_exhaust=on_exhaust)
    data = env.data
    ceiling = data.k_ms[data.task_k0] / data.task_floor_ms
    sweep = run_sweep(["greedy", "kernelband-v2"], env, 4, 400)
    summary = sweep.summary
    for t, task in enumerate(env.task_ids):
        rows = summary[summary["task_id"] == task]
        assert len(rows) == 8
        assert (rows["final_best_speedup"] <= ceiling[t] * (1 + 1e-9)).all()
    assert (summary["final_best_speedup"] >= 0.9 * ceiling.min()).any()  # reachable


def _stand_in(data, task: int):
    """(kernel row, strategy, stand-in row) of a kernel of `task` whose own tape for the
    strategy is empty and that has a `nearest` stand-in with some successful outcome."""
    lo_k, hi_k = data.task_kstart[task], data.task_kstart[task + 1]
    for key in range(lo_k, hi_k):
        for s in range(N_STRATEGIES):
            nn = data.tape_nn[key, s]
            if np.isnan(data.tape_mean[key, s]) and nn >= 0:
                slot = nn * N_STRATEGIES + s
                if data.o_success[data.tape_start[slot]:data.tape_start[slot + 1]].any():
                    return key, s, nn
    raise AssertionError("no kernel with an empty tape and a stand-in")


@njit
def _mc_tape_stand_in(env, task, nn, s, ms, rng, n):
    phi, prof9, rt6 = np.empty(5), np.empty(9), np.empty(6)
    slot = nn * N_STRATEGIES + s
    lo, hi = env.tape_start[slot], env.tape_start[slot + 1]
    floor_ms = env.task_floor_ms[task]
    total = 0.0
    lowest = np.inf
    for _ in range(n):
        row = lo + rand_int(rng, hi - lo)
        status, child_ms, _, _, _ = recorded_outcome(
            env.o_success, env.o_na, env.o_child, env.o_child_ms, env.o_parent_ms, env.o_tokens,
            env.o_cost, env.k_phi, env.k_prof9, env.k_rt6, row, False, False, ms, floor_ms,
            phi, prof9, rt6,
        )
        if status == 1:
            total += max(0.0, (ms - child_ms) / ms)
            lowest = min(lowest, child_ms)
    return total / n, lowest


@pytest.mark.parametrize("above_floor", [1.0, 1.2, 2.0])
def test_tape_stand_in_means_stay_exact_with_the_floor(tables, above_floor: float) -> None:
    data = build_tape(*tables, on_exhaust="nearest").data
    task = 0
    key, s, nn = _stand_in(data, task)
    floor_ms = data.task_floor_ms[task]
    ms = floor_ms * above_floor
    out = np.empty(N_STRATEGIES)
    tape_arm_means_arrays(data.tape_mean, data.tape_nn, data.tape_start, data.o_success,
                          data.o_child_ms, data.o_parent_ms, False, key, ms, floor_ms, out)
    if above_floor == 1.0:
        assert out[s] == 0.0  # at the floor a stand-in cannot improve
    mc, lowest = _mc_tape_stand_in(data, task, nn, s, ms, new_rng(3), 60_000)
    assert mc == pytest.approx(out[s], abs=0.006)
    assert lowest >= floor_ms
    # far above the floor (or without one) the recorded stand-in mean applies unchanged
    for far_ms, floor in ((1e9, floor_ms), (ms, 0.0)):
        tape_arm_means_arrays(data.tape_mean, data.tape_nn, data.tape_start, data.o_success,
                              data.o_child_ms, data.o_parent_ms, False, key, far_ms, floor, out)
        assert out[s] == data.tape_mean[nn, s]
