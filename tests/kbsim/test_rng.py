"""kbsim.rng: compiled draws equal their plain-Python twins bit for bit, and look random."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbsim import rng as R


def _pair(seed: int = 123):
    a = R.new_rng(seed)
    return a, a.copy()


@pytest.mark.parametrize(
    ("compiled", "python", "args"),
    [
        (R.rand_uniform, R.py_rand_uniform, ()),
        (R.rand_int, R.py_rand_int, (7,)),
        (R.rand_normal, R.py_rand_normal, ()),
        (R.rand_gamma, R.py_rand_gamma, (0.3,)),
        (R.rand_gamma, R.py_rand_gamma, (2.5,)),
        (R.rand_beta, R.py_rand_beta, (0.5, 3.0)),
    ],
)
def test_compiled_and_python_twins_draw_identical_numbers(compiled, python, args) -> None:
    a, b = _pair()
    got = [compiled(a, *args) for _ in range(5000)]
    want = [python(b, *args) for _ in range(5000)]
    assert got == want
    assert np.array_equal(a, b)  # same state afterwards, including the draw counter


def test_uniform_and_int_ranges_and_moments() -> None:
    state = R.new_rng(1)
    u = np.array([R.rand_uniform(state) for _ in range(50_000)])
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    k = np.array([R.rand_int(state, 6) for _ in range(60_000)])
    counts = np.bincount(k, minlength=6)
    assert k.min() == 0 and k.max() == 5
    chi2 = ((counts - 10_000) ** 2 / 10_000).sum()
    assert chi2 < 25.0  # 5 dof: p ~ 1e-4


def test_distribution_moments() -> None:
    state = R.new_rng(2)
    z = np.array([R.rand_normal(state) for _ in range(40_000)])
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.03
    g = np.array([R.rand_gamma(state, 0.4) for _ in range(40_000)])
    assert abs(g.mean() - 0.4) < 0.02
    b = np.array([R.rand_beta(state, 2.0, 5.0) for _ in range(40_000)])
    assert abs(b.mean() - 2.0 / 7.0) < 0.01
    assert 0.0 < b.min() and b.max() < 1.0


def test_draw_counter_counts_64_bit_outputs() -> None:
    state = R.new_rng(3)
    for _ in range(10):
        R.rand_uniform(state)
    assert state[2] == 10


def test_seeds_are_reproducible_and_distinct() -> None:
    assert np.array_equal(R.new_rng(5), R.new_rng(5))
    assert not np.array_equal(R.new_rng(5), R.new_rng(6))
    a, b = R.new_rng(5), R.new_rng(6)
    assert [R.rand_uniform(a) for _ in range(3)] != [R.rand_uniform(b) for _ in range(3)]
    assert R.new_rng(0)[:2].any()  # never the all-zero state


def test_derive_seed_is_stable_and_separates_keys() -> None:
    s = R.derive_seed(42, "kernelband-v2", 3)
    assert s == R.derive_seed(42, "kernelband-v2", 3)
    assert 0 <= s < 2**63
    others = {
        R.derive_seed(42, "kernelband-v2", 4),
        R.derive_seed(43, "kernelband-v2", 3),
        R.derive_seed(42, "greedy", 3),
        R.derive_seed(42, "3", "kernelband-v2"),
        R.derive_seed(42, "kernelband-v2", "3"),  # str and int keys differ
    }
    assert s not in others and len(others) == 5


def test_batched_states_equal_one_at_a_time() -> None:
    from kbsim.rng import env_rng, episode_rngs, policy_rng

    seeds = [0, 1, 5, 2**63 - 1, -3, np.int64(7)]
    assert np.array_equal(R.new_rngs(seeds), np.stack([R.new_rng(s) for s in seeds]))
    assert R.new_rngs([]).shape == (0, 3)
    pairs = [(task, seed) for task in ("syn-000", "softmax") for seed in range(4)]
    pairs += [("syn-001", np.int64(9)), ("syn-002", 2**62)]
    assert np.array_equal(episode_rngs("policy", pairs),
                          np.stack([policy_rng(s, t) for t, s in pairs]))
    assert np.array_equal(episode_rngs("env", pairs), np.stack([env_rng(s, t) for t, s in pairs]))


@pytest.mark.parametrize("bad", [1.5, "7", None, True])
def test_bad_seed_is_rejected(bad) -> None:
    with pytest.raises(ValueError, match="seed must be an integer"):
        R.new_rng(bad)
    with pytest.raises(ValueError, match="seed must be an integer"):
        R.new_rngs([1, bad])


def test_derive_seed_rejects_bad_keys() -> None:
    with pytest.raises(ValueError, match="keys must be int or str"):
        R.derive_seed(1, 2.5)


def test_uniform_uses_53_bits() -> None:
    state = R.new_rng(9)
    u = R.rand_uniform(state)
    assert u * 2**53 == math.floor(u * 2**53)
