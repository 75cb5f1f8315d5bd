"""Synthetic environment: spec parsing, exact means, planted Lipschitz constant, planted gaps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from kbsim.envs.synthetic import (
    build_synthetic,
    parse_synthetic,
    syn_arm_mean,
    syn_improvement,
    syn_step,
)
from kbsim.rng import new_rng
from kbsim.strategies import N_STRATEGIES


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bogus", "unknown synthetic base 'bogus'"),
        ("K=3,foo=1", "unknown synthetic parameter 'foo'"),
        ("K=three", "bad value 'three' for synthetic parameter 'K'"),
        ("K=0", "K must be in 1..64"),
        ("dim=7", "dim must be in 1..5"),
        ("fail=1.0", r"fail must be in \[0, 1\)"),
        ("default,noise=-1", "noise must be >= 0"),
        ("K=3,L", "expected key=value"),
        ("bernoulli,means=0.5", "means needs 2 to 6 success probabilities"),
        ("bernoulli,means=0.5/1.5", r"means must be probabilities in \[0, 1\]"),
        ("bernoulli,means=0.5/x", "means must be probabilities"),
        ("bernoulli,K=3", "Bernoulli arms .* need pool=1 and K=1"),
    ],
)
def test_bad_specs_get_one_clear_sentence(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_synthetic(text)


def test_named_bases_and_the_minimax_gap() -> None:
    assert parse_synthetic("default") == parse_synthetic("")
    assert parse_synthetic("fixed-pool").pool == 100
    spec = parse_synthetic("minimax,horizon=10000,K=2")
    expected = math.sqrt(2 * N_STRATEGIES * math.log(10000) / 10000)
    assert spec.gap == pytest.approx(expected)
    assert spec.L == 0 and spec.jump == 0
    assert parse_synthetic("K=3,n0=1,L=1.0,noise=0.1,fail=0.2,dim=5").gap < 0
    bernoulli = parse_synthetic("bernoulli,means=0.7/0.2/0.1")
    assert bernoulli.arm_probabilities() == [0.7, 0.2, 0.1]
    assert (bernoulli.pool, bernoulli.K, bernoulli.noise, bernoulli.roofline) == (1, 1, 0, 0)
    base = build_synthetic(bernoulli).data.syn_base[0, 0]
    assert list(base[:3]) == [0.7, 0.2, 0.1] and np.isnan(base[3:]).all()  # no arms there


@njit
def _mc_reward(env, phi, ms, s, rng, n):
    out_phi = np.empty(5)
    total = 0.0
    for _ in range(n):
        ok, child_ms, _ = syn_step(env, 0, 0, phi, ms, s, rng, out_phi)
        if ok:
            total += max(0.0, (ms - child_ms) / ms)
    return total / n


@pytest.mark.parametrize("spec", ["default,noise=0.2", "default,noise=0", "K=2,dim=2,gmax=0.3",
                                  "bernoulli", "bernoulli,fail=0.3,gmax=0.8,means=0.1/0.2/0.3/"
                                  "0.4/0.5/1"])
def test_exact_arm_means_match_monte_carlo(spec: str) -> None:
    env = build_synthetic(spec).data
    phi = env.k_phi[0]
    rng = new_rng(1)
    for s in range(N_STRATEGIES):
        exact = syn_arm_mean(env, 0, 0, phi, s)
        assert _mc_reward(env, phi, 1.0, s, rng, 40_000) == pytest.approx(exact, abs=0.006)


def test_mean_improvement_has_the_planted_lipschitz_constant_within_each_cluster() -> None:
    env = build_synthetic("L=2.5,dim=3,K=4,seed=7").data
    gen = np.random.default_rng(0)
    slopes = []
    for _ in range(3000):
        s, j = int(gen.integers(N_STRATEGIES)), int(gen.integers(4))
        x = np.zeros(5)
        x[:3] = env.syn_centers[0, j] + gen.normal(0, 0.04, 3)  # near a centre: mean > 0
        y = x.copy()
        y[:3] += gen.normal(0, 0.01, 3)
        distance = np.linalg.norm(x[:3] - y[:3])
        gap = abs(syn_improvement(env, 0, j, x, s) - syn_improvement(env, 0, j, y, s))
        slopes.append(gap / distance)
    slopes = np.asarray(slopes)
    assert slopes.max() <= 2.5 + 1e-9
    assert slopes.max() >= 0.95 * 2.5  # attained wherever the mean is above 0


def test_fixed_gap_instance_plants_exactly_one_best_arm() -> None:
    spec = "fixed-gap,gap=0.1,K=3,noise=0,fail=0,spread=0"
    env = build_synthetic(spec).data
    means = np.array(
        [
            [
                syn_improvement(env, 0, j, np.resize(env.syn_centers[0, j], 5), s)
                for s in range(N_STRATEGIES)
            ]
            for j in range(3)
        ]
    )
    assert means[0, 0] == pytest.approx(0.3)
    others = np.delete(means.ravel(), 0)
    assert np.allclose(others, 0.2)


def test_instances_depend_on_seed_and_task_only() -> None:
    a, b = build_synthetic("tasks=2,seed=4"), build_synthetic("tasks=3,seed=4")
    assert np.array_equal(a.data.syn_base, b.data.syn_base[:2])
    assert not np.array_equal(a.data.syn_base[0], a.data.syn_base[1])
    assert a.task_ids == ("syn-000", "syn-001")
    fixed = build_synthetic("pool=50,K=5")
    assert fixed.n_init == (50,) and not fixed.grows
