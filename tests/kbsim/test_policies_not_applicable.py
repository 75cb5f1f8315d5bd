"""Issue #18: not-applicable proposals are unavailable actions, not failed attempts.

A world with planted not-applicable (member, strategy) pairs drives the compiled policy and the
plain-Python reference side by side: every selection agrees (arm, parent, propensity, and the
random draws), no policy ever selects a pair it already knows is not applicable, a
not-applicable answer updates no statistic and spends no step, and a task whose every pair is
not applicable stops with its reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from kbsim.policies import (
    copy_pool,
    copy_state,
    new_pool,
    new_state,
    parse_policy,
    pool_add,
    prepare,
    representatives,
    select,
)
from kbsim.policies.episode import NO_APPLICABLE_PAIR, Attempt, Episode
from kbsim.policies.kernels import mark_na
from kbsim.policies.reference import (
    mark_na_ref,
    prepare_ref,
    representatives_ref,
    select_ref,
)
from kbsim.policies.spec import POLICY_NAMES
from kbsim.rng import new_rng
from tests.kbsim.test_policies_equivalence import (
    _assert_states_equal,
    _kernel_features,
    _same,
    _update_and_grow,
)

#: the statistics a not-applicable answer must leave alone
STATS = ("t", "mu", "cnt", "isq", "beta_a", "beta_b", "fmu", "fcnt", "w", "buf_x", "buf_s",
         "buf_y", "buf_n")


def planted_na(key: int, strategy: int, rate: float) -> bool:
    """A fixed pseudo-random set of (kernel key, strategy) pairs that are not applicable."""
    h = (key * 1_000_003 + strategy * 7_919 + 12_345) % 1_000
    return h < rate * 1_000


def run_na_pair(spec_text: str, steps: int, seed: int, rate: float, max_pool: int = 30,
                live_profiling: bool = True) -> dict:
    """Compiled and reference through the same world with planted NA pairs; asserts equality
    at every selection; returns counts."""
    spec = parse_policy(spec_text)
    gen = np.random.default_rng(seed)
    pool, state, rng = new_pool(max_pool), new_state(spec, max_pool), new_rng(seed)
    hidden_hw = np.full((max_pool, 3), np.nan)
    phi, hw, prof9, rt6 = _kernel_features(gen, np.zeros(5), 0.0)
    hidden_hw[0] = hw
    pool_add(pool, phi, np.full(3, np.nan) if live_profiling else hw, prof9, rt6, 1.0, 0)
    pool_r, state_r, rng_r = copy_pool(pool), copy_state(state), rng.copy()
    n_na = n_steps = 0
    stopped = False
    for step in range(steps):
        if live_profiling:
            prepare(spec.kind, spec.fparams, spec.iparams, state, pool, rng)
            prepare_ref(spec, state_r, pool_r, rng_r)
            reps = representatives(spec.kind, state, pool)
            assert np.array_equal(reps, representatives_ref(spec, state_r, pool_r))
            for r in reps:
                pool.hw[r] = pool_r.hw[r] = hidden_hw[r]
        while True:
            got = select(spec.kind, spec.fparams, spec.iparams, state, pool, rng)
            want = select_ref(spec, state_r, pool_r, rng_r)
            assert got[:3] == want[:3], f"step {step}: compiled {got} != reference {want}"
            assert _same(got[3], want[3]), f"step {step}: propensity {got[3]} != {want[3]}"
            cluster, strategy, parent, _ = got
            if parent < 0:
                stopped = True
                break
            # never a pair already known not applicable
            assert not (int(state.na[parent]) >> strategy) & 1, (step, parent, strategy)
            if not planted_na(int(pool.key[parent]), strategy, rate):
                break
            before = {name: getattr(state, name).copy() for name in STATS}
            mark_na(state, parent, strategy)
            mark_na_ref(state_r, parent, strategy)
            for name in STATS:  # no statistic moves
                assert np.array_equal(before[name], getattr(state, name), equal_nan=True), name
            n_na += 1
        if stopped:
            break
        n_steps += 1
        _update_and_grow(spec, gen, (state, pool), (state_r, pool_r), hidden_hw, cluster,
                         strategy, parent, step, live_profiling, key=lambda k: k)
        if step % 25 == 0:
            _assert_states_equal(state, state_r, step)
            assert np.array_equal(rng, rng_r)
    _assert_states_equal(state, state_r, steps)
    assert np.array_equal(rng, rng_r)
    return {"na": n_na, "steps": n_steps, "stopped": stopped, "state": state, "pool": pool}


@pytest.mark.parametrize("spec_text", POLICY_NAMES)
@pytest.mark.parametrize("profiled", [True, False])
def test_compiled_matches_reference_with_not_applicable_pairs(spec_text, profiled) -> None:
    out = run_na_pair(spec_text, 600, seed=13, rate=0.4, live_profiling=profiled)
    assert out["na"] > 0, "the world planted not-applicable pairs the policy met"
    assert out["steps"] == 600 or out["stopped"]
    assert int(out["state"].na_n[0]) == out["na"]  # each answer a new pair


@pytest.mark.parametrize(
    "spec_text",
    ["kernelband-v2:K=2,tau=3", "kernelband-v2:theta_sat=40", "eps-greedy:eps=0.5",
     "thompson:K=5", "kernelband-v1:warmup=0", "kernelband-v1:K=1,warm=0", "ucb-flat:c=0.3",
     "kernelband-v2:parent=fastest", "kernelband-v2:parent=speed,frontier=3",
     "eps-greedy:parent=speed", "kernelband-v2:frontier=2"],
)
def test_compiled_matches_reference_with_not_applicable_and_parameters(spec_text) -> None:
    out = run_na_pair(spec_text, 400, seed=5, rate=0.6)
    assert out["na"] > 0


@pytest.mark.parametrize("spec_text", POLICY_NAMES)
def test_a_task_whose_every_pair_is_not_applicable_stops(spec_text) -> None:
    out = run_na_pair(spec_text, 50, seed=2, rate=1.0)
    assert out["stopped"] and out["steps"] == 0
    assert out["na"] == 6  # k0's six strategies, each learnt once
    assert int(out["state"].t[0]) == 0


class _AllNotApplicable:
    """A world in which no strategy applies to any kernel."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, str]] = []

    def reveal(self, episode, wanted) -> None:
        for idx in wanted:
            episode.reveal(idx, [80.0, 90.0, 85.0])

    def attempt(self, episode, choice) -> Attempt:
        return Attempt("not_applicable")

    def record(self, episode, result) -> None:
        self.rows.append((result.step, result.index, result.attempt.status))


@pytest.mark.parametrize("spec_text", POLICY_NAMES)
def test_the_python_step_stops_a_task_with_no_applicable_pair(spec_text) -> None:
    episode = Episode(parse_policy(spec_text), "add", seed=0, max_pool=41)
    episode.add_member("k0", ms=1.0, phi=np.ones(5), rt6=np.zeros(6))
    world = _AllNotApplicable()
    assert episode.run(world, 40) == NO_APPLICABLE_PAIR
    assert episode.step == 0 and episode.attempts == 6
    # every attempt recorded, its own row and number, none spending a step
    assert world.rows == [(0, i, "not_applicable") for i in range(6)]
