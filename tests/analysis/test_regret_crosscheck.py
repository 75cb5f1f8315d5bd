"""An outside check of the regret machinery: kbsim's `ucb-flat` against UCB1 written here from
the textbook, on the classic K-armed Bernoulli bandit (synthetic spec ``bernoulli``).

UCB1 (Auer, Cesa-Bianchi and Fischer, "Finite-time Analysis of the Multiarmed Bandit Problem",
Machine Learning 47, 2002, Figure 1): play each machine once; then play the machine j that
maximises x̄_j + sqrt(2 ln n / n_j), n the plays so far. Theorem 1: for rewards in [0, 1], the
expected regret after n plays is at most

    8 * sum_{i: mu_i < mu*} ln(n) / Delta_i  +  (1 + pi^2 / 3) * sum_j Delta_j.

The implementation below shares no code with kbsim (numpy only, its own random numbers,
vectorised over runs); SMPyBandits' `UCB` was the first choice but it does not import with this
project's SciPy (it needs `scipy.special.btdtri`, which SciPy has removed). Over 1,000 seeds the
two mean pseudo-regret curves agree within their intervals (95 % simultaneous over every T) at
every T = 1 ... 1,000, the bound holds at every T, and a UCB with another exploration constant
is told apart (the check has power).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from kbsim.envs.synthetic import build_synthetic, parse_synthetic
from kbsim.replay.sweep import run_sweep

SPEC = "bernoulli"  # six arms, success probabilities 0.9 ... 0.4, success reward 0.5
SEEDS = 1000
HORIZON = 1000


def instance(spec_text: str = SPEC) -> tuple[np.ndarray, float]:
    """(success probability per arm, the reward of a success) of a Bernoulli spec."""
    spec = parse_synthetic(spec_text)
    return np.array(spec.arm_probabilities()), spec.gmax


def textbook_ucb1(probs: np.ndarray, gain: float, horizon: int, runs: int,
                  rng: np.random.Generator, c: float = math.sqrt(2.0)) -> np.ndarray:
    """Cumulative pseudo-regret (runs, horizon) of UCB1 on arms paying `gain` with probability
    probs[j]: column t is the regret after t + 1 plays. `c` = sqrt(2) is UCB1; ties go to the
    lowest arm."""
    arms = len(probs)
    means = gain * probs
    gaps = means.max() - means
    counts = np.zeros((runs, arms))
    sums = np.zeros((runs, arms))
    regret = np.zeros((runs, horizon))
    total = np.zeros(runs)
    rows = np.arange(runs)
    for t in range(horizon):
        if t < arms:  # play each machine once
            arm = np.full(runs, t)
        else:
            arm = np.argmax(sums / counts + c * np.sqrt(math.log(t) / counts), axis=1)
        reward = gain * (rng.random(runs) < probs[arm])
        counts[rows, arm] += 1.0
        sums[rows, arm] += reward
        total += gaps[arm]
        regret[:, t] = total
    return regret


def auer_bound(probs: np.ndarray, gain: float, plays: np.ndarray) -> np.ndarray:
    """Theorem 1 of Auer et al. (2002) after `plays` plays (rewards in [0, 1])."""
    means = gain * probs
    gaps = means.max() - means
    positive = gaps[gaps > 0]
    return (8.0 * np.log(plays)[:, None] / positive).sum(axis=1) + (
        1.0 + math.pi ** 2 / 3.0) * gaps.sum()


def kbsim_regret(policy: str, spec_text: str = SPEC, seeds: int = SEEDS,
                 horizon: int = HORIZON) -> np.ndarray:
    """Cumulative pseudo-regret (seeds, horizon) of a kbsim policy replayed on the spec."""
    result = run_sweep([policy], build_synthetic(spec_text), seeds, horizon, keep_steps=True)
    rows = result.results.to_pandas().sort_values(["seed", "step"])
    return rows["cum_regret"].to_numpy().reshape(seeds, horizon)


#: the intervals hold at every T at once: 95 % simultaneous (Bonferroni over the HORIZON values
#: of T; pointwise 95 % intervals over 1,000 T would part somewhere by chance)
Z_EVERY_T = NormalDist().inv_cdf(1 - 0.05 / (2 * HORIZON))


def mean_and_halfwidth(regret: np.ndarray, z: float = Z_EVERY_T) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """Mean over runs at each T and the half-width of its normal interval (z standard
    errors; default: 95 % simultaneous over HORIZON values of T)."""
    return regret.mean(axis=0), z * regret.std(axis=0, ddof=1) / math.sqrt(len(regret))


@pytest.fixture(scope="module")
def curves() -> dict[str, np.ndarray]:
    probs, gain = instance()
    return {
        "ucb-flat": kbsim_regret("ucb-flat"),
        "textbook": textbook_ucb1(probs, gain, HORIZON, SEEDS, np.random.default_rng(2002)),
    }


def test_the_bernoulli_spec_is_the_classic_instance(curves) -> None:
    probs, gain = instance()
    assert list(probs) == [0.9, 0.8, 0.7, 0.6, 0.5, 0.4] and gain == 0.5
    # the first six plays try every arm once, in order, in both implementations
    gaps = gain * (probs.max() - probs)
    for regret in curves.values():
        assert np.allclose(regret[:, :6], np.cumsum(gaps))


def test_ucb_flat_agrees_with_textbook_ucb1_at_every_horizon(curves) -> None:
    ours, ours_half = mean_and_halfwidth(curves["ucb-flat"])
    theirs, theirs_half = mean_and_halfwidth(curves["textbook"])
    gap = np.abs(ours - theirs)
    assert (gap <= ours_half + theirs_half).all(), (
        f"the 95 % intervals part at T = {int(np.argmax(gap - ours_half - theirs_half)) + 1}")
    # the curves compared are not flat: the regret keeps growing, its rate per step falling
    assert theirs[-1] > 5 * theirs[99] and theirs[-1] / HORIZON < 0.8 * theirs[99] / 100


def test_auers_finite_time_bound_holds_at_every_horizon(curves) -> None:
    probs, gain = instance()
    bound = auer_bound(probs, gain, np.arange(1, HORIZON + 1))
    for regret in curves.values():
        mean, half = mean_and_halfwidth(regret)
        assert (mean + half <= bound).all()


def test_the_check_tells_another_exploration_constant_apart(curves) -> None:
    # a UCB exploring less (c = 0.3) has a visibly different regret curve: agreement above is
    # evidence, not a check too loose to fail
    other, other_half = mean_and_halfwidth(kbsim_regret("ucb-flat:c=0.3"))
    theirs, theirs_half = mean_and_halfwidth(curves["textbook"])
    assert (np.abs(other - theirs) > other_half + theirs_half).any()


def test_fewer_arms_leave_the_other_strategies_not_applicable() -> None:
    spec = "bernoulli,means=0.7/0.2"
    probs, gain = instance(spec)
    regret = kbsim_regret("ucb-flat", spec, seeds=300, horizon=200)
    textbook = textbook_ucb1(probs, gain, 200, 300, np.random.default_rng(7))
    ours, ours_half = mean_and_halfwidth(regret)
    theirs, theirs_half = mean_and_halfwidth(textbook)
    assert (np.abs(ours - theirs) <= ours_half + theirs_half).all()
