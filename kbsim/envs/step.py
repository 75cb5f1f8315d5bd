"""The compiled environment interface, dispatched on the env kind.

- `env_init`: put the task's initial kernels in the pool (k0 first); returns k0's runtime;
- `env_on_add`: after a kernel joined the pool, write the mean reward of its arms into
  scratch.means[idx]; returns the best of them (NaN if none is known);
- `env_step`: one attempt on (parent, strategy) -> (status, child_ms, child_key, tokens, cost_usd)
  with status 1 = correct child (features written to scratch.child_*), 0 = failure,
  -1 = episode truncated (tape env, ``stop``), NA_STATUS (2) = the strategy is not applicable
  to that parent (tape / fitted: a recorded ``not_applicable``; synthetic: a planted pair);
- `env_reveal_hw`: "profile" a pool member: write its hardware signature into pool.hw.

Pool keys: the synthetic env stores each kernel's planted cluster label; tape and fitted store
the recorded kernel row the member's features come from.

The env rng is separate from the policy rng, so environment draws never shift the policy's random
stream (this is what makes a tape replay of the logging policy exact).

An attempt is answered by each kind's own function (`synthetic_answer`, `fitted_answer`,
`tape_answer`), a new member's arm means by `env_arm_means`; both are inlined
(``inline="always"``) into their callers: the replay engine's hot loop (`kbsim.replay.engine`,
compiled without reference counting) and the step-by-step `env_step` / `env_on_add` here
(`kbsim.replay.record`), which dispatch on the kind through `env_answer`. `env_init`,
`env_on_add`, `env_reveal_hw` and `recorded_outcome` are inlined into the engine too; the engine
is compiled per environment kind and calls the kind's answer, and these with a literal kind, in
branches pruned before inlining, so the other kinds' code is never copied or typed there
(numba inlines a callee's whole IR: issue #16, NOTE (D64)).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kbsim.envs.data import (
    F_USD_PER_TOKEN,
    FITTED,
    I_ON_EXHAUST,
    I_TOKENS,
    NA_STATUS,
    STOP,
    SYNTHETIC,
)
from kbsim.envs.fitted import fitted_arm_means_arrays, fitted_pick_arrays, rescale_features
from kbsim.envs.synthetic import (
    syn_arm_means_arrays,
    syn_features_arrays,
    syn_hw,
    syn_not_applicable,
    syn_step_arrays,
)
from kbsim.envs.tape import tape_arm_means_arrays, tape_pick_arrays
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
def env_arm_means(kind, env, task, stop, key, phi, ms, floor_ms, out) -> float:
    """THE mean reward of each arm (member with pool key `key`, features phi, runtime ms; s)
    into out[s], dispatched on the env kind (inlined into the engine and `env_on_add`);
    returns their max (NaN if none is known)."""
    if kind == SYNTHETIC:
        syn_arm_means_arrays(env.syn_centers, env.syn_base, env.fparams, env.iparams, task, key,
                             phi, ms, out)
    elif kind == FITTED:
        fitted_arm_means_arrays(env.fit_mean, env.fit_min_ratio, env.fit_nbr, env.fit_nbr_n,
                                env.tape_start, env.o_success, env.o_child_ms, env.o_parent_ms,
                                key, ms, floor_ms, out)
    else:
        tape_arm_means_arrays(env.tape_mean, env.tape_nn, env.tape_start, env.o_success,
                              env.o_child_ms, env.o_parent_ms, stop, key, ms, floor_ms, out)
    return row_max(out)


@njit(cache=True, inline="always")
def env_on_add(kind, env, task, pool, scratch, idx) -> float:
    """Fill scratch.means[idx] with the mean reward of each arm (idx, s); returns their max."""
    stop = env.iparams[I_ON_EXHAUST] == STOP
    return env_arm_means(kind, env, task, stop, pool.key[idx], pool.phi[idx], pool.ms[idx],
                         env.task_floor_ms[task], scratch.means[idx])


@njit(cache=True, inline="always")
def recorded_outcome(
    o_success, o_na, o_child, o_child_ms, o_parent_ms, o_tokens, o_cost, k_phi, k_prof9, k_rt6,
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
    if o_na[row]:
        return NA_STATUS, np.nan, -1, tokens, cost
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


@njit(cache=True, inline="always")
def synthetic_answer(env, task, k_first, mode, floor_ms, parent_key, parent_phi, parent_ms, s,
                     cursor, rng, child_phi, child_prof9, child_rt6):
    """`env_answer` of the synthetic environment."""
    if syn_not_applicable(env.syn_base, task, parent_key, s):
        return NA_STATUS, np.nan, -1, 0, 0.0, 0
    eip = env.iparams
    tokens = eip[I_TOKENS]
    cost = tokens * env.fparams[F_USD_PER_TOKEN]
    ok, child_ms, label = syn_step_arrays(env.syn_centers, env.syn_base, env.fparams, eip,
                                          task, parent_key, parent_phi, parent_ms, s, rng,
                                          child_phi)
    if not ok:
        return 0, np.nan, -1, tokens, cost, 1
    syn_features_arrays(env.syn_hw, eip, task, label, child_phi, child_ms, child_prof9,
                        child_rt6)
    return 1, child_ms, label, tokens, cost, 1


@njit(cache=True, inline="always")
def fitted_answer(env, task, k_first, mode, floor_ms, parent_key, parent_phi, parent_ms, s,
                  cursor, rng, child_phi, child_prof9, child_rt6):
    """`env_answer` of the fitted environment: a neighbour's recorded outcome, its runtime
    ratio applied to the parent's."""
    row = fitted_pick_arrays(env.fit_nbr, env.fit_nbr_n, env.tape_start, parent_key, s, rng)
    status, child_ms, child_key, tokens, cost = recorded_outcome(
        env.o_success, env.o_na, env.o_child, env.o_child_ms, env.o_parent_ms, env.o_tokens,
        env.o_cost, env.k_phi, env.k_prof9, env.k_rt6, row, False, True, parent_ms, floor_ms,
        child_phi, child_prof9, child_rt6,
    )
    return status, child_ms, child_key, tokens, cost, 1 if row >= 0 else 0


@njit(cache=True, inline="always")
def tape_answer(env, task, k_first, mode, floor_ms, parent_key, parent_phi, parent_ms, s,
                cursor, rng, child_phi, child_prof9, child_rt6):
    """`env_answer` of the tape environment: the next recorded outcome of the pair."""
    row, own, fresh, truncate = tape_pick_arrays(env.tape_start, env.tape_nn, k_first, mode,
                                                 parent_key, s, cursor, rng)
    if truncate:
        return -1, np.nan, -1, 0, 0.0, 0
    status, child_ms, child_key, tokens, cost = recorded_outcome(
        env.o_success, env.o_na, env.o_child, env.o_child_ms, env.o_parent_ms, env.o_tokens,
        env.o_cost, env.k_phi, env.k_prof9, env.k_rt6, row, own, False, parent_ms, floor_ms,
        child_phi, child_prof9, child_rt6,
    )
    return status, child_ms, child_key, tokens, cost, 1 if fresh else 0


@njit(cache=True, inline="always")
def env_answer(kind, env, task, k_first, mode, floor_ms, parent_key, parent_phi, parent_ms, s,
               cursor, rng, child_phi, child_prof9, child_rt6):
    """THE environment's answer to one attempt, dispatched on the env kind (inlined into
    `env_step`; the engine's loop, compiled per kind, calls the kind's own function, with the
    values it keeps per episode) -> (status, child_ms, child_key, tokens, cost_usd, served)
    with status as in the module doc and served 1 when data served the attempt (synthetic:
    every applicable attempt; fitted: a neighbour's outcome; tape: a fresh tape outcome)."""
    if kind == SYNTHETIC:
        return synthetic_answer(env, task, k_first, mode, floor_ms, parent_key, parent_phi,
                                parent_ms, s, cursor, rng, child_phi, child_prof9, child_rt6)
    if kind == FITTED:
        return fitted_answer(env, task, k_first, mode, floor_ms, parent_key, parent_phi,
                             parent_ms, s, cursor, rng, child_phi, child_prof9, child_rt6)
    return tape_answer(env, task, k_first, mode, floor_ms, parent_key, parent_phi, parent_ms,
                       s, cursor, rng, child_phi, child_prof9, child_rt6)


@njit(cache=True)
def env_step(kind, env, task, pool, scratch, parent, s, rng):
    """One attempt -> (status, child_ms, child_key, tokens, cost_usd); see the module doc."""
    floor_ms = env.task_floor_ms[task] if kind != SYNTHETIC else 0.0  # NOTE D46, D47
    status, child_ms, child_key, tokens, cost, served = env_answer(
        kind, env, task, env.task_kstart[task], env.iparams[I_ON_EXHAUST], floor_ms,
        pool.key[parent], pool.phi[parent], pool.ms[parent], s, scratch.cursor, rng,
        scratch.child_phi, scratch.child_prof9, scratch.child_rt6,
    )
    scratch.served[0] += served
    return status, child_ms, child_key, tokens, cost


@njit(cache=True, inline="always")
def env_reveal_hw(kind, env, task, pool, idx) -> None:
    """Write the hardware signature of pool member idx (NaN if the data never profiled it)."""
    if kind == SYNTHETIC:
        syn_hw(env, task, pool.key[idx], pool.hw[idx])
    else:
        key = pool.key[idx]
        for d in range(3):
            pool.hw[idx, d] = env.k_hw[key, d]
