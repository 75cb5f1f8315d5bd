"""What each compiled policy does, checked on small hand-built pools."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from kbsim.policies import (
    new_pool,
    new_state,
    parse_policy,
    pool_add,
    prepare,
    representatives,
    select,
    select_inline,
    update,
    update_inline,
)
from kbsim.policies._v1 import profile_features, psi
from kbsim.rng import new_rng, rand_uniform
from kbsim.strategies import DRAM, L2, SM, TARGET

NAN3 = np.full(3, np.nan)
NAN9 = np.full(9, np.nan)


def _pool(phis, hws, ms, max_pool=None):
    pool = new_pool(max_pool or len(ms))
    for k, (phi, hw, t) in enumerate(zip(phis, hws, ms, strict=True)):
        pool_add(pool, np.asarray(phi, float), np.asarray(hw, float), NAN9, np.zeros(6), t, k)
    return pool


def _sel(spec, state, pool, rng):
    return select(spec.kind, spec.fparams, spec.iparams, state, pool, rng)


def _upd(spec, state, pool, c, s, p, child_ms, success):
    return update(spec.kind, spec.fparams, spec.iparams, state, pool, c, s, p, child_ms, success)


def _three_blobs(hws):
    """Six kernels, two per well-separated blob in phi space."""
    centres = [0.0, 10.0, 20.0]
    phis = [np.full(5, c + d) for c in centres for d in (0.0, 0.1)]
    return _pool(phis, [hws[i // 2] for i in range(6)], [1.0 + 0.1 * i for i in range(6)])


def _cluster_of_blob(state, blob: int) -> int:
    return int(state.assign[2 * blob])


def test_v2_masks_closes_saturated_targets_and_keeps_one_open() -> None:
    hws = [[50.0, 90.0, 20.0],  # DRAM saturated
           [80.0, 10.0, 76.0],  # SM and L2 saturated
           [95.0, 99.0, 80.0]]  # everything saturated: least saturated (L2, 80 - 75) reopens
    pool = _three_blobs(hws)
    spec = parse_policy("kernelband-v2")
    state = new_state(spec, 6)
    _sel(spec, state, pool, new_rng(0))
    assert state.clustered[0] == 1
    for blob in range(len(hws)):
        c = _cluster_of_blob(state, blob)
        assert state.assign[2 * blob + 1] == c and state.size[c] == 2
        mask = state.mask[c]
        if blob == 0:
            assert list(mask) == [int(TARGET[s] != DRAM) for s in range(6)]
        elif blob == 1:
            assert list(mask) == [int(TARGET[s] == DRAM) for s in range(6)]
        else:
            assert list(mask) == [int(TARGET[s] == L2) for s in range(6)]
    nomask = parse_policy("kernelband-v2-nomask")
    state = new_state(nomask, 6)
    _sel(nomask, state, pool, new_rng(0))
    assert (state.mask == 1).all()


def test_v2_only_selects_open_arms() -> None:
    pool = _three_blobs([[50.0, 90.0, 20.0], [80.0, 10.0, 76.0], [95.0, 99.0, 80.0]])
    spec = parse_policy("kernelband-v2")
    state = new_state(spec, 6)
    rng = new_rng(1)
    for _ in range(300):
        c, s, p, _ = _sel(spec, state, pool, rng)
        assert state.mask[c, s] == 1 and state.assign[p] == c
        _upd(spec, state, pool, c, s, p, pool.ms[p] * 0.9, True)


def test_v2_clustering_recovers_planted_groups_like_sklearn() -> None:
    gen = np.random.default_rng(0)
    centres = gen.normal(0.0, 6.0, (3, 5))
    labels = np.repeat(np.arange(3), 20)
    phis = centres[labels] + gen.normal(0.0, 0.5, (60, 5))
    pool = _pool(phis, [NAN3] * 60, np.ones(60))
    spec = parse_policy("kernelband-v2")
    state = new_state(spec, 60)
    _sel(spec, state, pool, new_rng(2))
    assert adjusted_rand_score(labels, state.assign[:60]) == 1.0
    z = (phis - state.zmean) / state.zstd
    ours = sum(((z[state.assign[:60] == c] - state.centroids[c]) ** 2).sum() for c in range(3))
    ref = KMeans(n_clusters=3, n_init=10, random_state=0).fit(z).inertia_
    assert ours <= ref * 1.001
    # each representative is the member nearest its centre
    for c in range(3):
        members = np.nonzero(state.assign[:60] == c)[0]
        d2 = ((z[members] - state.centroids[c]) ** 2).sum(axis=1)
        assert state.rep[c] == members[np.argmin(d2)]


def test_v2_reclusters_every_tau_steps_once_the_pool_is_big_enough() -> None:
    spec = parse_policy("kernelband-v2:K=2,tau=5")
    pool = _pool([np.zeros(5)], [NAN3], [1.0], max_pool=50)
    state = new_state(spec, 50)
    rng = new_rng(3)
    times = []
    for step in range(40):
        c, s, p, _ = _sel(spec, state, pool, rng)
        if state.clustered[0] and (not times or times[-1] != state.last_cluster_t[0]):
            times.append(int(state.last_cluster_t[0]))
        _upd(spec, state, pool, c, s, p, 0.9, True)
        if step < 3:  # the pool reaches 2K = 4 members after step 2
            pool_add(pool, np.full(5, step + 1.0), NAN3, NAN9, np.zeros(6), 0.9, step + 1)
    assert times == list(range(3, 40, 5))


def test_softmax_parent_distribution_and_propensity() -> None:
    hw = np.array([[50.0, 30.0, 60.0], [70.0, 60.0, 10.0], [20.0, 74.0, 40.0], [np.nan] * 3])
    pool = _pool(np.zeros((4, 5)), hw, [1.0, 2.0, 3.0, 4.0])
    spec = parse_policy("kernelband-v2:K=1,mask=0,temperature=10")
    state = new_state(spec, 4)
    rng = new_rng(4)
    counts = np.zeros((6, 4))
    for _ in range(12_000):
        c, s, p, prop = _sel(spec, state, pool, rng)
        dim = TARGET[s]
        score = np.where(np.isnan(hw[:, dim]), 0.0, (75.0 - hw[:, dim]) / 10.0)
        want = np.exp(score - score.max()) / np.exp(score - score.max()).sum()
        assert prop == pytest.approx(want[p], rel=1e-12)
        counts[s, p] += 1
        _upd(spec, state, pool, c, s, p, pool.ms[p], False)  # reward 0: arms rotate
    for s in range(6):
        dim = TARGET[s]
        score = np.where(np.isnan(hw[:, dim]), 0.0, (75.0 - hw[:, dim]) / 10.0)
        want = np.exp(score - score.max()) / np.exp(score - score.max()).sum()
        freq = counts[s] / counts[s].sum()
        assert np.abs(freq - want).max() < 0.05, (s, freq, want)


def test_without_signatures_the_fastest_member_is_the_parent() -> None:
    pool = _pool(np.zeros((3, 5)), [NAN3] * 3, [3.0, 1.0, 2.0])
    spec = parse_policy("kernelband-v2:K=1")
    state = new_state(spec, 3)
    rng = new_rng(5)
    for _ in range(50):
        c, s, p, prop = _sel(spec, state, pool, rng)
        assert (p, prop) == (1, 1.0)
        _upd(spec, state, pool, c, s, p, 0.5, True)


def test_parent_fastest_takes_the_fastest_member_of_the_chosen_cluster() -> None:
    hws = [[10.0, 10.0, 10.0], [20.0, 20.0, 20.0], [30.0, 30.0, 30.0]]
    pool = _three_blobs(hws)  # runtimes 1.0 .. 1.5: the first kernel of each blob is faster
    spec = parse_policy("kernelband-v2:parent=fastest,mask=0")
    state = new_state(spec, 6)
    rng = new_rng(2)
    seen = set()
    for _ in range(200):
        c, s, p, prop = _sel(spec, state, pool, rng)
        members = state.members[c, : state.size[c]]
        assert p == members[np.argmin(pool.ms[members])] and prop == 1.0
        seen.add(c)
        _upd(spec, state, pool, c, s, p, pool.ms[p], False)
    assert len(seen) == 3  # every cluster was chosen, each time its own fastest member


def test_parent_fastest_with_one_cluster_and_no_mask_refines_the_global_best() -> None:
    # the components preset's converse: greedy's parent under a UCB over the strategies
    pool = _pool(np.arange(5.0)[:, None] * np.ones(5), [[50.0, 50.0, 50.0]] * 4 + [NAN3],
                 [2.0, 0.7, 1.5, 0.9, 1.1])
    spec = parse_policy("kernelband-v2:K=1,mask=0,parent=fastest")
    state = new_state(spec, 5)
    rng = new_rng(3)
    strategies = set()
    for _ in range(60):
        c, s, p, prop = _sel(spec, state, pool, rng)
        assert (c, p, prop) == (0, 1, 1.0)
        strategies.add(s)
        _upd(spec, state, pool, c, s, p, pool.ms[p], False)
    assert strategies == set(range(6))  # the UCB over strategies tries them all


@pytest.mark.parametrize("temperature", [0.1, 1.0])
def test_parent_speed_is_a_softmax_over_log_speedup_over_k0(temperature: float) -> None:
    ms = np.array([2.0, 1.0, 1.6, 0.8])
    pool = _pool(np.zeros((4, 5)), [[10.0, 90.0, 50.0]] * 4, ms)
    spec = parse_policy(f"kernelband-v2:K=1,mask=0,parent=speed,parent_temperature={temperature}")
    state = new_state(spec, 4)
    rng = new_rng(8)
    score = np.log(ms[0] / ms) / temperature
    want = np.exp(score - score.max()) / np.exp(score - score.max()).sum()
    counts = np.zeros(4)
    for _ in range(8000):
        c, s, p, prop = _sel(spec, state, pool, rng)
        assert prop == pytest.approx(want[p], rel=1e-12)  # the same for every strategy
        counts[p] += 1
        _upd(spec, state, pool, c, s, p, pool.ms[p], False)
    assert np.abs(counts / counts.sum() - want).max() < 0.02


def test_frontier_keeps_only_the_fastest_members_as_parents() -> None:
    ms = [3.0, 1.0, 2.0, 0.5, 4.0]
    hw = [[0.0, 0.0, 0.0]] + [[70.0, 70.0, 70.0]] * 4  # headroom alone prefers the slow k0
    pool = _pool(np.zeros((5, 5)), hw, ms)
    spec = parse_policy("kernelband-v2:K=1,mask=0,frontier=2")
    state = new_state(spec, 5)
    rng = new_rng(9)
    parents = set()
    for _ in range(300):
        c, s, p, _ = _sel(spec, state, pool, rng)
        parents.add(p)
        _upd(spec, state, pool, c, s, p, pool.ms[p], False)
    assert parents == {1, 3}


def test_rewards_and_statistics_of_v2_and_v1() -> None:
    pool = _pool([np.zeros(5)], [NAN3], [2.0])
    v2 = parse_policy("kernelband-v2")
    st = new_state(v2, 1)
    assert _upd(v2, st, pool, 0, 1, 0, 1.5, True) == 0.25
    assert _upd(v2, st, pool, 0, 1, 0, 3.0, True) == 0.0  # slower child: 0, not negative
    assert _upd(v2, st, pool, 0, 1, 0, 1.0, False) == 0.0  # failure
    assert st.cnt[0, 1] == 4.0 and st.mu[0, 1] == pytest.approx((0.5 + 0.25) / 4)
    assert st.isq[0, 1] == 0.5 and st.t[0] == 3
    v1 = parse_policy("kernelband-v1")
    st = new_state(v1, 1)
    assert _upd(v1, st, pool, 0, 2, 0, 1.5, True) == 0.25
    assert _upd(v1, st, pool, 0, 2, 0, 3.0, True) == -0.5
    assert _upd(v1, st, pool, 0, 2, 0, 1.0, False) == -1.0
    assert st.cnt[0, 2] == 3.0 and st.mu[0, 2] == pytest.approx(-1.25 / 3)


def test_baselines_parent_rules_and_propensities() -> None:
    pool = _pool(np.zeros((4, 5)), [NAN3] * 4, [2.0, 1.0, 3.0, 1.0])
    rng = new_rng(6)
    for name, want_parent in (("bon", 0), ("greedy", 1)):
        spec = parse_policy(name)
        state = new_state(spec, 4)
        strategies = set()
        for _ in range(200):
            c, s, p, prop = _sel(spec, state, pool, rng)
            assert (c, p, prop) == (-1, want_parent, 1.0 / 6)
            strategies.add(s)
        assert strategies == set(range(6))
    for name in ("explore", "random"):
        spec = parse_policy(name)
        state = new_state(spec, 4)
        counts = np.zeros((4, 6))
        for _ in range(24_000):
            c, s, p, prop = _sel(spec, state, pool, rng)
            assert c == -1 and prop == 1.0 / 24
            counts[p, s] += 1
        assert ((counts - 1000) ** 2 / 1000).sum() < 60.0  # chi-square, 23 dof


def test_ucb_flat_pulls_every_new_pair_first() -> None:
    pool = _pool(np.zeros((2, 5)), [NAN3] * 2, [1.0, 1.0], max_pool=3)
    spec = parse_policy("ucb-flat")
    state = new_state(spec, 3)
    rng = new_rng(7)
    seen = []
    for _ in range(12):
        c, s, p, prop = _sel(spec, state, pool, rng)
        seen.append((p, s))
        _upd(spec, state, pool, c, s, p, 0.5, True)
    assert seen == [(k, s) for k in range(2) for s in range(6)]
    pool_add(pool, np.zeros(5), NAN3, NAN9, np.zeros(6), 0.5, 2)
    assert _sel(spec, state, pool, rng)[1:3] == (0, 2)  # the new kernel's first pair


def test_eps_greedy_propensities() -> None:
    pool = _pool([np.zeros(5)], [NAN3], [1.0])
    spec = parse_policy("eps-greedy:K=1,eps=0.3")
    state = new_state(spec, 1)
    state.mu[0, 4] = 0.9  # greedy arm
    rng = new_rng(8)
    props = {}
    for _ in range(2000):
        c, s, p, prop = _sel(spec, state, pool, rng)
        props[s] = prop
    assert props[4] == pytest.approx(0.7 + 0.3 / 6)
    assert all(props[s] == pytest.approx(0.05) for s in range(6) if s != 4)


def test_v1_warm_up_then_ucb_and_a_warm_started_prior() -> None:
    gen = np.random.default_rng(9)
    pool = new_pool(10)
    for k in range(4):
        pool_add(pool, np.zeros(5), NAN3, gen.uniform(0, 100, 9), gen.normal(0, 1, 6),
                 [2.0, 1.0, 3.0, 1.5][k], k)
    spec = parse_policy("kernelband-v1")
    state = new_state(spec, 10)
    rng = new_rng(10)
    picks = []
    for _ in range(18):
        c, s, p, prop = _sel(spec, state, pool, rng)
        picks.append((p, s))
        assert c == state.assign[p] and prop == 1.0
        _upd(spec, state, pool, c, s, p, 0.9, True)
    assert picks == [(1, t % 6) for t in range(18)]
    assert state.warmed[0] == 1 and state.clustered[0] == 1
    # warm start: a strategy's success prior is higher when its target resource has headroom
    x_low, x_high = np.zeros(10), np.zeros(10)
    for s in range(6):
        load = {SM: 2, DRAM: 1, L2: 0}[TARGET[s]]
        prof_low = np.full((1, 9), 50.0)
        prof_high = np.full((1, 9), 50.0)
        prof_low[0, load], prof_high[0, load] = 5.0, 95.0
        assert profile_features(prof_low, 0, x_low) and profile_features(prof_high, 0, x_high)
        assert psi(state.w, s, x_low) > psi(state.w, s, x_high)


def test_live_flow_representatives_get_profiled() -> None:
    pool = _three_blobs([NAN3, NAN3, NAN3])
    spec = parse_policy("kernelband-v2")
    state = new_state(spec, 6)
    rng = new_rng(11)
    prepare(spec.kind, spec.fparams, spec.iparams, state, pool, rng)
    reps = representatives(spec.kind, state, pool)
    assert sorted(reps) == sorted(state.rep) and len(reps) == 3
    assert (state.mask == 1).all() and state.mask_dirty[0] == 2  # unknown h: all open
    for r in reps:
        pool.hw[r] = [90.0, 10.0, 10.0]  # SM saturated everywhere
    c, s, p, _ = _sel(spec, state, pool, rng)
    assert len(representatives(spec.kind, state, pool)) == 0
    assert state.mask_dirty[0] == 0
    assert all(state.mask[c, s] == int(TARGET[s] != SM) for c in range(3) for s in range(6))
    assert len(representatives(parse_policy("greedy").kind, state, pool)) == 0


def test_empty_and_full_pools() -> None:
    spec = parse_policy("kernelband-v2")
    pool = new_pool(1)
    c, s, p, prop = _sel(spec, new_state(spec, 1), pool, new_rng(0))
    assert (c, s, p) == (-1, -1, -1) and math.isnan(prop)
    assert pool_add(pool, np.zeros(5), NAN3, NAN9, np.zeros(6), 1.0, 7) == 0
    assert pool_add(pool, np.zeros(5), NAN3, NAN9, np.zeros(6), 1.0, 8) == -1
    assert pool.n[0] == 1 and pool.key[0] == 7


@njit(cache=True, _nrt=False)
def _inline_loop(kind, fparams, iparams, state, pool, rng, env, steps, out) -> None:
    for t in range(steps):
        c, s, p, prop = select_inline(kind, fparams, iparams, state, pool, rng)
        success = rand_uniform(env) < 0.7
        child_ms = pool.ms[p] * (0.8 + 0.4 * rand_uniform(env))
        out[t] = update_inline(kind, fparams, iparams, state, pool, c, s, p, child_ms, success)


@pytest.mark.parametrize("text", ["kernelband-v2", "kernelband-v1", "thompson", "ucb-flat"])
def test_inline_entry_points_run_the_same_policy(text: str) -> None:
    spec = parse_policy(text)
    gen = np.random.default_rng(12)
    pool = new_pool(8)
    for k in range(8):
        pool_add(pool, gen.normal(0, 3, 5), gen.uniform(30, 100, 3), gen.uniform(0, 100, 9),
                 gen.normal(0, 1, 6), 1.0 + k / 10, k)
    state_a, state_b = new_state(spec, 8), new_state(spec, 8)
    rng_a, env_a, rng_b, env_b = new_rng(1), new_rng(2), new_rng(1), new_rng(2)
    rewards_a = np.zeros(500)
    _inline_loop(spec.kind, spec.fparams, spec.iparams, state_a, pool, rng_a, env_a, 500,
                 rewards_a)
    rewards_b = []
    for _ in range(500):
        c, s, p, _ = _sel(spec, state_b, pool, rng_b)
        success = rand_uniform(env_b) < 0.7
        child_ms = pool.ms[p] * (0.8 + 0.4 * rand_uniform(env_b))
        rewards_b.append(_upd(spec, state_b, pool, c, s, p, child_ms, success))
    assert np.array_equal(rewards_a, rewards_b) and np.array_equal(rng_a, rng_b)
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(state_a, state_b,
                                                                    strict=True))
