"""The compiled environment interface, dispatched on the env kind.

- `env_init`: put the task's initial kernels in the pool (k0 first); returns k0's runtime;
- `env_on_add`: after a kernel joined the pool, write the mean reward of its arms into
  scratch.means[idx]; returns the best of them (NaN if none is known);
- `env_step`: one attempt on (parent, strategy) -> (status, child_ms, child_key, tokens, cost_usd)
  with status 1 = correct child (features written to scratch.child_*), 0 = failure,
  -1 = episode truncated (tape env, ``stop``);
- `env_reveal_hw`: "profile" a pool member: write its hardware signature into pool.hw.

Pool keys: the synthetic env stores each kernel's planted cluster label; tape and fitted store
the recorded kernel row the member's features come from.

The env rng is separate from the policy rng, so environment draws never shift the policy's random
stream (this is what makes a tape replay of the logging policy exact).

These take whole NamedTuples and suit step-by-step callers (`kbsim.replay.record`); the engine's
hot loop calls the `*_arrays` kernels underneath with only the arrays they read. `env_init`,
`env_on_add`, `env_reveal_hw` and `recorded_outcome` are inlined into the engine
(``inline="always"``), which is compiled per environment kind: the other kinds' branches are
pruned before typing (issue #16).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kbsim.envs.data import (
    F_USD_PER_TOKEN,
    FITTED,
    I_ON_EXHAUST,
    I_TOKENS,
    STOP,
    SYNTHETIC,
)
from kbsim.envs.fitted import fitted_arm_means_arrays, fitted_pick_arrays, rescale_features
from kbsim.envs.synthetic import (
    syn_arm_means_arrays,
    syn_features_arrays,
    syn_hw,
    syn_step_arrays,
)
from kbsim.envs.tape import tape_arm_means_arrays, tape_pick
from kbsim.policies.state import pool_add


@njit(cache=True)
def row_max(row: np.ndarray) -> float:
    """Largest non-NaN value of a row (NaN if all are NaN)."""
    best = np.nan
    for value in row:
        if not np.isnan(value) and (np.isnan(best) or value > best):
            best = value
    return best


@njit(cache=True, inline="always")
def env_init(kind, env, task, pool, scratch, n_init) -> float:
    """Add the task's n_init initial kernels (k0 first); returns k0's runtime in ms."""
    scratch.hw[:] = np.nan
    if kind == SYNTHETIC:
        first = env.task_kstart[task]
        for i in range(n_init):
            row = first + i
            ms = env.k_ms[row]
            label = i % env.syn_base.shape[1]
            syn_features_arrays(env.syn_hw, env.iparams, task, label, env.k_phi[row], ms,
                                scratch.child_prof9, scratch.child_rt6)
            pool_add(pool, env.k_phi[row], scratch.hw, scratch.child_prof9, scratch.child_rt6,
                     ms, label)
        return env.k_ms[first]
    row = env.task_k0[task]
    pool_add(pool, env.k_phi[row], scratch.hw, env.k_prof9[row], env.k_rt6[row], env.k_ms[row],
             row)
    return env.k_ms[row]


@njit(cache=True, inline="always")
def env_on_add(kind, env, task, pool, scratch, idx) -> float:
    """Fill scratch.means[idx] with the mean reward of each arm (idx, s); returns their max."""
    row = scratch.means[idx]
    key = pool.key[idx]
    if kind == SYNTHETIC:
        syn_arm_means_arrays(env.syn_centers, env.syn_base, env.fparams, env.iparams, task, key,
                             pool.phi[idx], pool.ms[idx], row)
    elif kind == FITTED:
        fitted_arm_means_arrays(env.fit_mean, env.fit_min_ratio, env.fit_nbr, env.fit_nbr_n,
                                env.tape_start, env.o_success, env.o_child_ms, env.o_parent_ms,
                                key, pool.ms[idx], env.task_floor_ms[task], row)
    else:
        tape_arm_means_arrays(env.tape_mean, env.tape_nn, env.tape_start, env.o_success,
                              env.o_child_ms, env.o_parent_ms, env.iparams[I_ON_EXHAUST] == STOP,
                              key, pool.ms[idx], env.task_floor_ms[task], row)
    return row_max(row)


@njit(cache=True, inline="always")
def recorded_outcome(
    o_success, o_child, o_child_ms, o_parent_ms, o_tokens, o_cost, k_phi, k_prof9, k_rt6,
    row, own, rescale, parent_ms, floor_ms, child_phi, child_prof9, child_rt6,
):
    """(status, child_ms, child_key, tokens, cost) of recorded outcome `row` for a parent running
    in parent_ms: the recorded runtime on its own tape, else the recorded runtime ratio applied
    to parent_ms, never below floor_ms (NOTE D46 fitted, D47 tape; 0: no floor); the child's
    features are the recorded child's (rescaled to the new runtime when `rescale`)."""
    if row < 0:
        return 0, np.nan, -1, 0, 0.0
    tokens = o_tokens[row]
    cost = o_cost[row]
    if not o_success[row]:
        return 0, np.nan, -1, tokens, cost
    if own:
        child_ms = o_child_ms[row]
    else:
        child_ms = max(parent_ms * (o_child_ms[row] / o_parent_ms[row]), floor_ms)
    child = o_child[row]
    for d in range(child_phi.shape[0]):  # element loops: no temporary (the engine runs these
        child_phi[d] = k_phi[child, d]  # without numba's allocator, `_nrt=False`)
    for d in range(child_prof9.shape[0]):
        child_prof9[d] = k_prof9[child, d]
    for d in range(child_rt6.shape[0]):
        child_rt6[d] = k_rt6[child, d]
    if rescale:
        rescale_features(child_phi, child_rt6, child_ms)
    return 1, child_ms, child, tokens, cost


@njit(cache=True)
def env_step(kind, env, task, pool, scratch, parent, s, rng):
    """One attempt -> (status, child_ms, child_key, tokens, cost_usd); see the module doc."""
    if kind == SYNTHETIC:
        tokens = env.iparams[I_TOKENS]
        cost = tokens * env.fparams[F_USD_PER_TOKEN]
        scratch.served[0] += 1
        ok, child_ms, label = syn_step_arrays(
            env.syn_centers, env.syn_base, env.fparams, env.iparams, task, pool.key[parent],
            pool.phi[parent], pool.ms[parent], s, rng, scratch.child_phi,
        )
        if not ok:
            return 0, np.nan, -1, tokens, cost
        syn_features_arrays(env.syn_hw, env.iparams, task, label, scratch.child_phi, child_ms,
                            scratch.child_prof9, scratch.child_rt6)
        return 1, child_ms, label, tokens, cost
    if kind == FITTED:
        row = fitted_pick_arrays(env.fit_nbr, env.fit_nbr_n, env.tape_start, pool.key[parent], s,
                                 rng)
        own = False
        if row >= 0:
            scratch.served[0] += 1
    else:
        row, own, fresh, truncate = tape_pick(env, task, pool.key[parent], s, scratch.cursor,
                                              rng)
        if truncate:
            return -1, np.nan, -1, 0, 0.0
        if fresh:
            scratch.served[0] += 1
    return recorded_outcome(
        env.o_success, env.o_child, env.o_child_ms, env.o_parent_ms, env.o_tokens, env.o_cost,
        env.k_phi, env.k_prof9, env.k_rt6, row, own, kind == FITTED, pool.ms[parent],
        env.task_floor_ms[task], scratch.child_phi,
        scratch.child_prof9, scratch.child_rt6,
    )


@njit(cache=True, inline="always")
def env_reveal_hw(kind, env, task, pool, idx) -> None:
    """Write the hardware signature of pool member idx (NaN if the data never profiled it)."""
    if kind == SYNTHETIC:
        syn_hw(env, task, pool.key[idx], pool.hw[idx])
    else:
        key = pool.key[idx]
        for d in range(3):
            pool.hw[idx, d] = env.k_hw[key, d]
