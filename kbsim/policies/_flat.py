"""Compiled baselines without clusters: bon, greedy, random, explore, ucb-flat."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kbsim.policies.spec import F_C, KIND_BON, KIND_GREEDY, KIND_UCB_FLAT
from kbsim.rng import rand_int


@njit(cache=True, _nrt=False)
def fastest(pool) -> int:
    """Pool index of the fastest member (ties: lowest index)."""
    best = 0
    for k in range(1, pool.n[0]):
        if pool.ms[k] < pool.ms[best]:
            best = k
    return best


@njit(cache=True, _nrt=False, inline="always")
def select_flat(kind, fparams, state, pool, rng):
    """bon: parent = pool[0] (the initial kernel), strategy uniform.
    greedy: parent = fastest member, strategy uniform.
    random / explore: parent uniform over the pool, then strategy uniform.
    ucb-flat: UCB1 over (kernel, strategy) pairs; unpulled pairs first (lowest kernel, then
    strategy), else argmax of mean + c * sqrt(ln t / n) with t the pulls so far."""
    n = pool.n[0]
    S = state.target.shape[0]
    if kind == KIND_BON:
        return -1, rand_int(rng, S), 0, 1.0 / S
    if kind == KIND_GREEDY:
        parent = fastest(pool)
        return -1, rand_int(rng, S), parent, 1.0 / S
    if kind == KIND_UCB_FLAT:
        log_t = math.log(max(state.t[0], 1))
        c = fparams[F_C]
        best = -np.inf
        bk = 0
        bs = 0
        for k in range(n):
            for s in range(S):
                if state.fcnt[k, s] == 0.0:
                    return -1, s, k, 1.0
                v = state.fmu[k, s] + c * math.sqrt(log_t / state.fcnt[k, s])
                if v > best:
                    best = v
                    bk = k
                    bs = s
        return -1, bs, bk, 1.0
    parent = rand_int(rng, n)
    return -1, rand_int(rng, S), parent, 1.0 / (n * S)


@njit(cache=True, _nrt=False, inline="always")
def update_flat(kind, state, parent, strategy, reward) -> None:
    """ucb-flat: n += 1, mean += (r - mean) / n for the pulled (kernel, strategy)."""
    if kind == KIND_UCB_FLAT:
        state.fcnt[parent, strategy] += 1.0
        state.fmu[parent, strategy] += (reward - state.fmu[parent, strategy]) / state.fcnt[
            parent, strategy
        ]
