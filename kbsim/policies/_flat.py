"""Compiled baselines without clusters: bon, greedy, random, explore, ucb-flat."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kbsim._byref import ref_of_value
from kbsim._jit import inner_njit
from kbsim.policies._na import is_na, n_applicable, nth_applicable
from kbsim.policies.spec import F_C, KIND_BON, KIND_GREEDY, KIND_UCB_FLAT
from kbsim.rng import rand_int


@inner_njit(_nrt=False)
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
    if state.na_n[0] > 0:
        # compiled on its own: given references (`kbsim.policies.kernels`)
        return select_flat_na(kind, fparams, ref_of_value(state), ref_of_value(pool), rng)
    if kind == KIND_BON:
        return -1, rand_int(rng, S), 0, 1.0 / S
    if kind == KIND_GREEDY:
        parent = fastest(ref_of_value(pool))
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


@inner_njit(_nrt=False)
def select_flat_na(kind, fparams, state, pool, rng):
    """`select_flat` when some (member, strategy) pairs are known not applicable: the same
    rules over the applicable pairs only (bon: k0's applicable strategies; greedy: the fastest
    member with one; random / explore: a member with one, then one of its strategies;
    ucb-flat: applicable pairs). Without any: (-1, -1, -1, NaN)."""
    n = pool.n[0]
    S = state.target.shape[0]
    full = (1 << S) - 1
    none = (-1, -1, -1, np.nan)
    if kind == KIND_BON or kind == KIND_GREEDY:
        parent = 0
        if kind == KIND_GREEDY:
            parent = -1
            for k in range(n):
                if state.na[k] != full and (parent < 0 or pool.ms[k] < pool.ms[parent]):
                    parent = k
            if parent < 0:
                return none
        n_app = n_applicable(state, parent, S)
        if n_app == 0:
            return none
        return -1, nth_applicable(state, parent, S, rand_int(rng, n_app)), parent, 1.0 / n_app
    if kind == KIND_UCB_FLAT:
        log_t = math.log(max(state.t[0], 1))
        c = fparams[F_C]
        best = -np.inf
        bk = -1
        bs = -1
        for k in range(n):
            for s in range(S):
                if is_na(state, k, s):
                    continue
                if state.fcnt[k, s] == 0.0:
                    return -1, s, k, 1.0
                v = state.fmu[k, s] + c * math.sqrt(log_t / state.fcnt[k, s])
                if v > best:
                    best = v
                    bk = k
                    bs = s
        if bk < 0:
            return none
        return -1, bs, bk, 1.0
    n_members = 0
    for k in range(n):
        if state.na[k] != full:
            n_members += 1
    if n_members == 0:
        return none
    j = rand_int(rng, n_members)
    parent = -1
    for k in range(n):
        if state.na[k] != full:
            if j == 0:
                parent = k
                break
            j -= 1
    n_app = n_applicable(state, parent, S)
    s = nth_applicable(state, parent, S, rand_int(rng, n_app))
    return -1, s, parent, 1.0 / (n_members * n_app)


@njit(cache=True, _nrt=False, inline="always")
def update_flat(kind, state, parent, strategy, reward) -> None:
    """ucb-flat: n += 1, mean += (r - mean) / n for the pulled (kernel, strategy)."""
    if kind == KIND_UCB_FLAT:
        state.fcnt[parent, strategy] += 1.0
        state.fmu[parent, strategy] += (reward - state.fmu[parent, strategy]) / state.fcnt[
            parent, strategy
        ]
