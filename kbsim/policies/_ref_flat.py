"""Reference baselines without clusters (twins of `_flat`).

- bon (best-of-N): every attempt starts from the initial kernel pool[0], strategy uniform.
- greedy (GEAK-like refinement): parent = the current fastest kernel, strategy uniform.
- random / explore: parent uniform over the pool, then strategy uniform; the propensity of the
  pair is 1 / (|pool| * |S|) (explore is the logging policy of live traces).
- ucb-flat: UCB1 (Auer et al. 2002) over (kernel, strategy) pairs, no clustering: every unpulled
  pair first (new kernels enter with n = 0, lowest kernel then strategy), then
  argmax  mean[k, s] + c * sqrt(ln t / n[k, s])  with t = pulls so far and c = sqrt(2) by default
  (exactly UCB1's  mean + sqrt(2 ln t / n)).

Pairs known not applicable (DESIGN.md) are skipped: bon draws among k0's applicable
strategies; greedy takes the fastest member with an applicable strategy; random / explore a
member with one (uniform), then one of its applicable strategies (uniform); ucb-flat runs over
the applicable pairs. None left: (-1, -1, -1, NaN).
"""

from __future__ import annotations

import math

import numpy as np

from kbsim.policies.spec import KIND_BON, KIND_GREEDY, KIND_UCB_FLAT, PolicySpec
from kbsim.policies.state import PolicyState, Pool
from kbsim.rng import py_rand_int


def select_flat_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray):
    """(cluster=-1, strategy, parent, propensity) for bon, greedy, random, explore, ucb-flat."""
    n = int(pool.n[0])
    n_strategies = len(state.target)
    if state.na_n[0] > 0:
        return _select_flat_na_ref(spec, state, pool, rng)
    if spec.kind == KIND_BON:
        return -1, py_rand_int(rng, n_strategies), 0, 1.0 / n_strategies
    if spec.kind == KIND_GREEDY:
        parent = int(np.argmin(pool.ms[:n]))
        return -1, py_rand_int(rng, n_strategies), parent, 1.0 / n_strategies
    if spec.kind == KIND_UCB_FLAT:
        counts = state.fcnt[:n]
        unpulled = np.argwhere(counts == 0.0)
        if len(unpulled):
            k, s = unpulled[0]
            return -1, int(s), int(k), 1.0
        log_t = math.log(max(int(state.t[0]), 1))
        ucb = state.fmu[:n] + spec.params["c"] * np.sqrt(log_t / counts)
        k, s = np.unravel_index(np.argmax(ucb), ucb.shape)
        return -1, int(s), int(k), 1.0
    parent = py_rand_int(rng, n)
    return -1, py_rand_int(rng, n_strategies), parent, 1.0 / (n * n_strategies)


def _applicable(state: PolicyState, k: int, n_strategies: int) -> list[int]:
    return [s for s in range(n_strategies) if not (int(state.na[k]) >> s) & 1]


def _select_flat_na_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray):
    n = int(pool.n[0])
    n_strategies = len(state.target)
    none = (-1, -1, -1, math.nan)
    usable = [k for k in range(n) if _applicable(state, k, n_strategies)]
    if spec.kind in (KIND_BON, KIND_GREEDY):
        if spec.kind == KIND_BON:
            parent = 0
        elif usable:
            parent = min(usable, key=lambda k: (pool.ms[k], k))
        else:
            return none
        options = _applicable(state, parent, n_strategies)
        if not options:
            return none
        return -1, options[py_rand_int(rng, len(options))], parent, 1.0 / len(options)
    if spec.kind == KIND_UCB_FLAT:
        pairs = [(k, s) for k in range(n) for s in _applicable(state, k, n_strategies)]
        if not pairs:
            return none
        unpulled = [(k, s) for k, s in pairs if state.fcnt[k, s] == 0.0]
        if unpulled:
            return -1, unpulled[0][1], unpulled[0][0], 1.0
        log_t = math.log(max(int(state.t[0]), 1))
        values = [state.fmu[k, s] + spec.params["c"] * math.sqrt(log_t / state.fcnt[k, s])
                  for k, s in pairs]
        k, s = pairs[int(np.argmax(values))]
        return -1, s, k, 1.0
    if not usable:
        return none
    parent = usable[py_rand_int(rng, len(usable))]
    options = _applicable(state, parent, n_strategies)
    strategy = options[py_rand_int(rng, len(options))]
    return -1, strategy, parent, 1.0 / (len(usable) * len(options))
