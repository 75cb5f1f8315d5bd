"""THE compiled policy: `select`, `update`, `representatives`, `prepare`, dispatched on kind.

Replay calls these in a compiled loop; the live runner calls the very same functions one step at
a time, so what replay verifies is what live runs. Arguments are plain arrays
(`spec.fparams`, `spec.iparams`, a `PolicyState`, a `Pool`, an RNG state from `kbsim.rng`).

Per step the caller does::

    cluster, strategy, parent, propensity = select(kind, fparams, iparams, state, pool, rng)
    ... evaluate a child of pool[parent] under strategy ...
    reward = update(kind, fparams, iparams, state, pool, cluster, strategy, parent,
                    child_ms, success)
    if success: pool_add(pool, ...child features...)   # only correct children enter the pool

`cluster` is -1 for policies without clusters. `propensity` is the probability the policy gave
this (parent, strategy) pair (NaN where not computable: Thompson sampling).

A proposal that is ``not_applicable`` (DESIGN.md) is no step: the caller calls
`mark_na(state, parent, strategy)` instead of `update` and selects again; no statistic changes,
and `select` never returns a pair known not applicable. With no applicable pair left `select`
returns parent -1 (and cluster, strategy -1, propensity NaN): the task stops.

Speed notes. Every kernel is compiled with ``_nrt=False`` (NOTE (D35): a private numba option,
checked with numba 0.68; no reference counting, no allocation except in `representatives`):
numba would otherwise incref/decref each of the ~50 arrays of the state and pool on every call,
which costs microseconds. `select` / `update` are safe from any compiled or Python caller; LLVM
inlines them into compiled callers (`kbsim._byref.inline_into_callers`): a call not inlined
passes the tuples' ~480 words on the stack, copied word by word, which some layouts of the
caller's frame make 5-10x slower (4K aliasing: the copy's loads wait for its own stores 4 KiB
away), ~0.2-1.5 us a call. `select_inline` /
`update_inline` are the same code inlined by numba into the caller; use them in a hot loop
compiled with ``@njit(_nrt=False)`` (inlined into a caller *with* NRT they bring the reference
counting back, ~100x slower). NOTE (D34): the parent-softmax weights are cached per (cluster,
dim): a member's `pool.hw` may be written before the member is first seen by `select` /
`prepare`, or for the indices `representatives` returned; a later change goes through
`show_signature`, which invalidates what depends on it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kbsim._byref import inline_into_callers, ref_of_value
from kbsim.policies._flat import select_flat, update_flat
from kbsim.policies._na import mark_na_inline
from kbsim.policies._v1 import prepare_v1, select_v1, update_v1, v1_reward
from kbsim.policies._v2 import (
    prepare_due_v2,
    prepare_v2,
    representatives_into_v2,
    select_v2,
    show_signature_v2,
    update_v2,
    v2_reward,
)
from kbsim.policies.spec import (
    FAMILY_FLAT,
    FAMILY_V1,
    FAMILY_V2,
    KIND_EPS_GREEDY,
    KIND_THOMPSON,
    KIND_V1,
    KIND_V2,
    KIND_V2_NOMASK,
)


@njit(cache=True, inline="always")
def family_of(kind) -> int:
    """`spec.policy_family(kind)` in compiled code."""
    if kind == KIND_V2 or kind == KIND_V2_NOMASK or kind == KIND_EPS_GREEDY or (
        kind == KIND_THOMPSON
    ):
        return FAMILY_V2
    if kind == KIND_V1:
        return FAMILY_V1
    return FAMILY_FLAT


# The policy code per family, written once, in the `*_in_v2` / `*_in_v1` / `*_in_flat`
# functions below, and the dispatch on the family over them in `*_in_family`. The replay engine,
# compiled per family (`kbsim.replay.engine`), calls its family's functions in branches on a
# compile-time constant that numba prunes before inlining, so the other families' code is never
# copied, typed or compiled there (issue #16). The `*_inline` / plain entry points compute the
# family from the kind at run time.
#
# The functions compiled on their own (not inlined) that this code calls with the state or the
# pool get them through `ref_of_value` at the call: the replay engine holds references (no
# code), the step-by-step entry points hold the tuples by value (a copy in the stack frame,
# made only when such a call is made: none on the v2 family's usual path). Either way those
# functions are compiled once, for references, and the entry points' own code (inlined into
# their compiled callers by LLVM: `inline_into_callers`) reads the fields of the tuples it was
# given directly.


# One family's `prepare` / `select` / `update` / `representatives_into`, each inlined (only
# inside ``_nrt=False`` functions). A caller compiled per family (the replay engine) calls its
# family's directly, in branches on the family that numba prunes before it inlines anything, so
# only that family's code is copied into it: numba inlines by copying the callee's whole IR,
# nested inlines included, and the `*_in_family` dispatch below holds every family's.


@njit(cache=True, _nrt=False, inline="always")
def prepare_in_v2(kind, fparams, iparams, state, pool, rng) -> None:
    """`prepare` for the v2 family: re-cluster when due."""
    if pool.n[0] > 0 and prepare_due_v2(iparams, state, pool):
        prepare_v2(fparams, iparams, ref_of_value(state), ref_of_value(pool), rng)


@njit(cache=True, _nrt=False, inline="always")
def prepare_in_v1(kind, fparams, iparams, state, pool, rng) -> None:
    """`prepare` for kernelband-v1."""
    if pool.n[0] > 0:
        prepare_v1(fparams, iparams, ref_of_value(state), ref_of_value(pool), rng)


@njit(cache=True, _nrt=False, inline="always")
def select_in_v2(kind, fparams, iparams, state, pool, rng):
    """`select` for the v2 family."""
    if pool.n[0] == 0:
        return -1, -1, -1, np.nan
    return select_v2(kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False, inline="always")
def select_in_v1(kind, fparams, iparams, state, pool, rng):
    """`select` for kernelband-v1."""
    if pool.n[0] == 0:
        return -1, -1, -1, np.nan
    return select_v1(fparams, iparams, ref_of_value(state), ref_of_value(pool), rng)


@njit(cache=True, _nrt=False, inline="always")
def select_in_flat(kind, fparams, iparams, state, pool, rng):
    """`select` for the flat baselines."""
    if pool.n[0] == 0:
        return -1, -1, -1, np.nan
    return select_flat(kind, fparams, state, pool, rng)


@njit(cache=True, _nrt=False, inline="always")
def update_in_v2(kind, fparams, iparams, state, pool, cluster, strategy, parent, child_ms,
                 success) -> float:
    """`update` for the v2 family."""
    reward = v2_reward(pool.ms[parent], child_ms, success)
    update_v2(kind, state, cluster, strategy, reward)
    state.t[0] += 1
    return reward


@njit(cache=True, _nrt=False, inline="always")
def update_in_v1(kind, fparams, iparams, state, pool, cluster, strategy, parent, child_ms,
                 success) -> float:
    """`update` for kernelband-v1."""
    reward = v1_reward(pool.ms[parent], child_ms, success)
    update_v1(fparams, iparams, ref_of_value(state), ref_of_value(pool), cluster, strategy,
              parent, child_ms, success, reward)
    state.t[0] += 1
    return reward


@njit(cache=True, _nrt=False, inline="always")
def update_in_flat(kind, fparams, iparams, state, pool, cluster, strategy, parent, child_ms,
                   success) -> float:
    """`update` for the flat baselines."""
    reward = v2_reward(pool.ms[parent], child_ms, success)
    update_flat(kind, state, parent, strategy, reward)
    state.t[0] += 1
    return reward


@njit(cache=True, _nrt=False, inline="always")
def representatives_in_v2(state, pool, out) -> int:
    """`representatives_into` for the v2 family (the others profile nothing: 0)."""
    return representatives_into_v2(ref_of_value(state), ref_of_value(pool), out)


# The dispatch on the family, for callers that know it only at run time (the entry points
# below compute it from the kind).


@njit(cache=True, _nrt=False, inline="always")
def prepare_in_family(family, kind, fparams, iparams, state, pool, rng) -> None:
    """`prepare` for a policy of `family`, inlined (only inside ``_nrt=False`` functions)."""
    if family == FAMILY_V2:
        prepare_in_v2(kind, fparams, iparams, state, pool, rng)
    elif family == FAMILY_V1:
        prepare_in_v1(kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False, inline="always")
def select_in_family(family, kind, fparams, iparams, state, pool, rng):
    """`select` for a policy of `family`, inlined (only inside ``_nrt=False`` functions)."""
    if family == FAMILY_V2:
        return select_in_v2(kind, fparams, iparams, state, pool, rng)
    if family == FAMILY_V1:
        return select_in_v1(kind, fparams, iparams, state, pool, rng)
    return select_in_flat(kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False, inline="always")
def update_in_family(family, kind, fparams, iparams, state, pool, cluster, strategy, parent,
                     child_ms, success) -> float:
    """`update` for a policy of `family`, inlined (only inside ``_nrt=False`` functions)."""
    if family == FAMILY_V2:
        return update_in_v2(kind, fparams, iparams, state, pool, cluster, strategy, parent,
                            child_ms, success)
    if family == FAMILY_V1:
        return update_in_v1(kind, fparams, iparams, state, pool, cluster, strategy, parent,
                            child_ms, success)
    return update_in_flat(kind, fparams, iparams, state, pool, cluster, strategy, parent,
                          child_ms, success)


@njit(cache=True, _nrt=False, inline="always")
def representatives_in_family(family, state, pool, out) -> int:
    """`representatives_into` for a policy of `family`, inlined."""
    if family == FAMILY_V2:
        return representatives_in_v2(state, pool, out)
    return 0  # v1 reads the 9-dim profile given with each kernel at pool_add; others: none


@njit(cache=True, _nrt=False, inline="always")
def prepare_inline(kind, fparams, iparams, state, pool, rng) -> None:
    """`prepare`, inlined into the caller by numba (only inside ``_nrt=False`` functions)."""
    prepare_in_family(family_of(kind), kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False)
def prepare(kind, fparams, iparams, state, pool, rng) -> None:
    """Bring the clustering up to date (re-cluster when due, assign new members, refresh the
    mask). `select` calls it first; the live runner may call it earlier so that
    `representatives` can be profiled before the arm is chosen. Idempotent within a step."""
    inline_into_callers()
    prepare_inline(kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False, inline="always")
def select_inline(kind, fparams, iparams, state, pool, rng):
    """`select`, inlined into the caller by numba. Use it only inside functions compiled with
    ``_nrt=False`` (see the module docstring); elsewhere call `select`."""
    return select_in_family(family_of(kind), kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False, inline="always")
def update_inline(kind, fparams, iparams, state, pool, cluster, strategy, parent, child_ms,
                  success) -> float:
    """`update`, inlined into the caller by numba (only inside ``_nrt=False`` functions)."""
    return update_in_family(family_of(kind), kind, fparams, iparams, state, pool, cluster,
                            strategy, parent, child_ms, success)


@njit(cache=True, _nrt=False)
def select(kind, fparams, iparams, state, pool, rng):
    """-> (cluster, strategy, parent pool index, propensity); (-1, -1, -1, NaN) on an empty
    pool. May re-cluster / assign new members / refresh the mask first (`prepare`)."""
    inline_into_callers()
    return select_inline(kind, fparams, iparams, state, pool, rng)


@njit(cache=True, _nrt=False)
def update(kind, fparams, iparams, state, pool, cluster, strategy, parent, child_ms,
           success) -> float:
    """Compute the policy's reward for the outcome and update its statistics; returns reward.

    v2 family and baselines: r = max(0, (T_p - T_c) / T_p), failure 0. v1: r = 1 - T_c / T_p,
    failure -1. Call before adding a correct child to the pool."""
    inline_into_callers()
    return update_inline(kind, fparams, iparams, state, pool, cluster, strategy, parent,
                         child_ms, success)


@njit(cache=True, _nrt=False)
def mark_na(state, parent, strategy) -> None:
    """Learn that `strategy` is not applicable to pool member `parent` (every policy; no
    statistic is updated). `mark_na_inline` is the same, for hot loops."""
    mark_na_inline(state, parent, strategy)


@njit(cache=True, _nrt=False)
def representatives_into(kind, state, pool, out) -> int:
    """`representatives` without allocating: writes the pool indices into out[:count] (out
    needs room for K entries) and returns count."""
    inline_into_callers()
    return representatives_in_family(family_of(kind), state, pool, out)


@njit(cache=True, _nrt=False, inline="always")
def show_signature_in_family(family, state, pool, idx, hw) -> bool:
    """`show_signature` for a policy of `family`, inlined."""
    if family == FAMILY_V2:
        return show_signature_v2(ref_of_value(state), ref_of_value(pool), idx, hw)
    changed = False  # the other families read no hw: just keep it
    for d in range(3):
        if not (pool.hw[idx, d] == hw[d] or (pool.hw[idx, d] != pool.hw[idx, d]
                                             and hw[d] != hw[d])):
            changed = True
        pool.hw[idx, d] = hw[d]
    return changed


@njit(cache=True, _nrt=False)
def show_signature(kind, state, pool, idx, hw) -> bool:
    """Show the policy hw (SM, DRAM, L2; NaN = unknown) as pool member idx's hardware
    signature; returns whether it changed. THE way to write a signature the policy may have
    seen before (a representative's roofline signature replaced by Nsight Compute's, issue
    15): a v2-family policy then recomputes its mask and the member's cluster's parent
    weights (NOTE D34). A first signature behaves exactly like writing pool.hw[idx]."""
    inline_into_callers()
    return show_signature_in_family(family_of(kind), state, pool, idx, hw)


@njit(cache=True)
def representatives(kind, state, pool) -> np.ndarray:
    """Pool indices whose hardware signature the policy wants profiled now (v2 family: cluster
    representatives without one; others: none). The caller profiles them and writes
    pool.hw[idx] before the next select (replay environments fill hw from data)."""
    out = np.empty(max(state.rep.shape[0], 1), dtype=np.int64)
    count = representatives_into(kind, state, pool, out)
    return out[:count].copy()
