"""Compiled not-applicable bookkeeping shared by every policy (DESIGN.md, "Not-applicable
proposals"): per pool member a bitmask of the strategies known not applicable to it.

A `not_applicable` proposal costs nothing, so it is not a step: the caller marks the pair with
`mark_na` and selects again; no statistic is updated. Every policy skips pairs known not
applicable; with none left, `select` returns parent -1 and the task stops. Policies read
``state.na_n[0] == 0`` first, so a run without not-applicable proposals takes exactly the code
path (and the random draws) it took before the rule.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, _nrt=False, inline="always")
def is_na(state, k, s) -> bool:
    """Whether strategy s is known not applicable to pool member k."""
    return (state.na[k] >> s) & 1 == 1


@njit(cache=True, _nrt=False, inline="always")
def n_applicable(state, k, S) -> int:
    """How many of the S strategies are not known not applicable to member k."""
    n = 0
    for s in range(S):
        if (state.na[k] >> s) & 1 == 0:
            n += 1
    return n


@njit(cache=True, _nrt=False, inline="always")
def nth_applicable(state, k, S, j) -> int:
    """The j-th (0-based) strategy applicable to member k (-1 if there are fewer)."""
    for s in range(S):
        if (state.na[k] >> s) & 1 == 0:
            if j == 0:
                return s
            j -= 1
    return -1


@njit(cache=True, _nrt=False, inline="always")
def mark_na_inline(state, parent, strategy) -> None:
    """Learn that `strategy` is not applicable to pool member `parent` (idempotent); the v2
    family's mask is recomputed before the next select (an arm may have closed)."""
    bit = 1 << strategy
    if state.na[parent] & bit == 0:
        state.na[parent] |= bit
        state.na_n[0] += 1
        state.mask_dirty[0] = 1
