"""The compiled environment interface the replay engine calls, dispatched on the env kind.

- `env_init`: put the task's initial kernels in the pool (k0 first); returns k0's runtime;
- `env_on_add`: after a kernel joined the pool, compute the mean reward of its arms (and, for the
  fitted env, its neighbours); returns the best of them (NaN if none known);
- `env_step`: one attempt on (parent, strategy) -> (status, child_ms, child_key, tokens, cost_usd)
  with status 1 = correct child (features written to scratch.child_*), 0 = failure,
  -1 = episode truncated (tape env, ``stop``);
- `env_reveal_hw`: "profile" a pool member: write its hardware signature into pool.hw.

Pool keys: the synthetic env stores each kernel's planted cluster label; tape and fitted store
the recorded kernel row the member's features come from.

The env rng is separate from the policy rng, so environment draws never shift the policy's random
stream (this is what makes a tape replay of the logging policy exact).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kbsim.envs.data import F_USD_PER_TOKEN, FITTED, I_TOKENS, SYNTHETIC
from kbsim.envs.fitted import fitted_arm_means, fitted_neighbours, fitted_pick, rescale_features
from kbsim.envs.synthetic import syn_arm_means, syn_features, syn_hw, syn_step
from kbsim.envs.tape import tape_arm_means, tape_pick
from kbsim.policies.state import pool_add
from kbsim.strategies import N_STRATEGIES


@njit(cache=True)
def env_init(kind, env, task, pool, scratch, n_init) -> float:
    """Add the task's n_init initial kernels (k0 first); returns k0's runtime in ms."""
    scratch.hw[:] = np.nan
    if kind == SYNTHETIC:
        first = env.task_kstart[task]
        for i in range(n_init):
            row = first + i
            ms = env.k_ms[row]
            label = i % env.syn_base.shape[1]
            syn_features(env, task, label, env.k_phi[row], ms, scratch.child_prof9,
                         scratch.child_rt6)
            pool_add(pool, env.k_phi[row], scratch.hw, scratch.child_prof9, scratch.child_rt6,
                     ms, label)
        return env.k_ms[first]
    row = env.task_k0[task]
    pool_add(pool, env.k_phi[row], scratch.hw, env.k_prof9[row], env.k_rt6[row], env.k_ms[row],
             row)
    return env.k_ms[row]


@njit(cache=True)
def env_on_add(kind, env, task, pool, scratch, idx) -> float:
    """Fill scratch.means[idx] with the mean reward of each arm (idx, s); returns their max."""
    row = scratch.means[idx]
    if kind == SYNTHETIC:
        syn_arm_means(env, task, pool.key[idx], pool.phi[idx], row)
    elif kind == FITTED:
        fitted_neighbours(env, task, pool.phi[idx], idx, scratch)
        fitted_arm_means(env, scratch, idx, row)
    else:
        tape_arm_means(env, pool.key[idx], row)
    best = np.nan
    for s in range(N_STRATEGIES):
        mean = row[s]
        if not np.isnan(mean) and (np.isnan(best) or mean > best):
            best = mean
    return best


@njit(cache=True)
def _copy_recorded(env, row, scratch) -> None:
    scratch.child_phi[:] = env.k_phi[row]
    scratch.child_prof9[:] = env.k_prof9[row]
    scratch.child_rt6[:] = env.k_rt6[row]


@njit(cache=True)
def env_step(kind, env, task, pool, scratch, parent, s, rng):
    """One attempt -> (status, child_ms, child_key, tokens, cost_usd); see the module doc."""
    if kind == SYNTHETIC:
        tokens = env.iparams[I_TOKENS]
        cost = tokens * env.fparams[F_USD_PER_TOKEN]
        scratch.served[0] += 1
        ok, child_ms, label = syn_step(env, task, pool.key[parent], pool.phi[parent],
                                       pool.ms[parent], s, rng, scratch.child_phi)
        if not ok:
            return 0, np.nan, -1, tokens, cost
        syn_features(env, task, label, scratch.child_phi, child_ms, scratch.child_prof9,
                     scratch.child_rt6)
        return 1, child_ms, label, tokens, cost
    if kind == FITTED:
        row = fitted_pick(env, scratch, parent, s, rng)
        own = False
    else:
        row, own, fresh, truncate = tape_pick(env, task, pool.key[parent], s, scratch.cursor,
                                              rng)
        if truncate:
            return -1, np.nan, -1, 0, 0.0
        if fresh:
            scratch.served[0] += 1
    if row < 0:
        return 0, np.nan, -1, 0, 0.0
    if kind == FITTED:
        scratch.served[0] += 1
    tokens = env.o_tokens[row]
    cost = env.o_cost[row]
    if not env.o_success[row]:
        return 0, np.nan, -1, tokens, cost
    if own:
        child_ms = env.o_child_ms[row]
    else:
        child_ms = pool.ms[parent] * (env.o_child_ms[row] / env.o_parent_ms[row])
    child = env.o_child[row]
    _copy_recorded(env, child, scratch)
    if kind == FITTED:
        rescale_features(scratch.child_phi, scratch.child_rt6, child_ms)
    return 1, child_ms, child, tokens, cost


@njit(cache=True)
def env_reveal_hw(kind, env, task, pool, idx) -> None:
    """Write the hardware signature of pool member idx (NaN if the data never profiled it)."""
    if kind == SYNTHETIC:
        syn_hw(env, task, pool.key[idx], pool.hw[idx])
    else:
        pool.hw[idx, :] = env.k_hw[pool.key[idx]]
