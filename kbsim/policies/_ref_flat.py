"""Reference baselines without clusters (twins of `_flat`).

- bon (best-of-N): every attempt starts from the initial kernel pool[0], strategy uniform.
- greedy (GEAK-like refinement): parent = the current fastest kernel, strategy uniform.
- random / explore: parent uniform over the pool, then strategy uniform; the propensity of the
  pair is 1 / (|pool| * |S|) (explore is the logging policy of live traces).
- ucb-flat: UCB1 (Auer et al. 2002) over (kernel, strategy) pairs, no clustering: every unpulled
  pair first (new kernels enter with n = 0, lowest kernel then strategy), then
  argmax  mean[k, s] + c * sqrt(ln t / n[k, s])  with t = pulls so far and c = sqrt(2) by default
  (exactly UCB1's  mean + sqrt(2 ln t / n)).
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
