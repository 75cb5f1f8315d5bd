"""Plain-array state of the policies: the candidate pool and the policy state (NamedTuples).

Both are NamedTuples of numpy arrays so numba compiles one `select` / `update` for every policy
(one state type; fields a policy does not use are allocated with size 0). Scalars live in arrays
of shape (1,) so the compiled kernels can update them in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from kbsim.policies.spec import (
    F_PRIOR_A,
    F_PRIOR_B,
    I_BUFFER,
    I_K,
    KIND_THOMPSON,
    KIND_UCB_FLAT,
    KIND_V1,
    PolicySpec,
    is_v2_family,
)
from kbsim.strategies import N_STRATEGIES, TARGET

PHI_DIM = 5  # behaviour vector phi(k) of v2
HW_DIM = 3  # hardware signature (SM, DRAM, L2) in % of peak
PROF_DIM = 9  # v1 profile
RT_DIM = 6  # v1 runtime vector
V1_FEAT = PROF_DIM + 1  # v1 logistic weights: 9 features + bias


class Pool(NamedTuple):
    """The candidate pool (every member a correct kernel), owned by the caller."""

    phi: np.ndarray  # (max_pool, 5) float64, behaviour vector (kbsim.strategies.PHI_DIMS)
    hw: np.ndarray  # (max_pool, 3) float64, (SM, DRAM, L2) % of peak; NaN = not profiled
    prof9: np.ndarray  # (max_pool, 9) float64, v1 profile; NaN = unknown
    rt6: np.ndarray  # (max_pool, 6) float64, v1 runtime vector
    ms: np.ndarray  # (max_pool,) float64, aggregate runtime
    key: np.ndarray  # (max_pool,) int64, the caller's id of the kernel
    n: np.ndarray  # (1,) int64, current size


def new_pool(max_pool: int) -> Pool:
    """An empty pool with room for `max_pool` kernels (hw and prof9 start as NaN)."""
    if max_pool < 1:
        raise ValueError(f"max_pool must be >= 1, got {max_pool}")
    nan = np.nan
    return Pool(
        phi=np.zeros((max_pool, PHI_DIM)),
        hw=np.full((max_pool, HW_DIM), nan),
        prof9=np.full((max_pool, PROF_DIM), nan),
        rt6=np.zeros((max_pool, RT_DIM)),
        ms=np.full(max_pool, nan),
        key=np.full(max_pool, -1, dtype=np.int64),
        n=np.zeros(1, dtype=np.int64),
    )


@njit(cache=True, _nrt=False)
def pool_add(pool, phi, hw, prof9, rt6, ms, key) -> int:
    """Append a kernel; returns its pool index, or -1 when the pool is full."""
    i = pool.n[0]
    if i >= pool.ms.shape[0]:
        return -1
    for d in range(phi.shape[0]):
        pool.phi[i, d] = phi[d]
    for d in range(hw.shape[0]):
        pool.hw[i, d] = hw[d]
    for d in range(prof9.shape[0]):
        pool.prof9[i, d] = prof9[d]
    for d in range(rt6.shape[0]):
        pool.rt6[i, d] = rt6[d]
    pool.ms[i] = ms
    pool.key[i] = key
    pool.n[0] = i + 1
    return i


class PolicyState(NamedTuple):
    """Everything a policy learns; sized by (spec, n_strategies, max_pool). See `new_state`."""

    t: np.ndarray  # (1,) int64, updates so far
    target: np.ndarray  # (S,) int64, hardware dim each strategy targets
    # arm statistics over (cluster, strategy)
    mu: np.ndarray  # (K, S) float64, mean reward (v2 family init 0.5; v1 init 0)
    cnt: np.ndarray  # (K, S) float64, pulls N (v2 family init 1; v1 init 0)
    isq: np.ndarray  # (K, S) float64, 1 / sqrt(N) (v2 family)
    mask: np.ndarray  # (K, S) int64, 1 = arm open
    beta_a: np.ndarray  # (K, S) float64, thompson Beta posterior (size 0 otherwise)
    beta_b: np.ndarray
    # clustering
    assign: np.ndarray  # (max_pool,) int64, cluster of each member (-1 not seen yet)
    members: np.ndarray  # (K, max_pool) int64, member pool indices per cluster
    size: np.ndarray  # (K,) int64
    rep: np.ndarray  # (K,) int64, representative pool index (-1 none)
    centroids: np.ndarray  # (K, D) float64 (v2: z-space of phi, D=5; v1: raw rt6, D=6)
    cent_count: np.ndarray  # (K,) float64, v1 online centroid counts
    zmean: np.ndarray  # (D,) float64, v2 z-score mean of the last clustering; v1 running mean
    zstd: np.ndarray  # (D,) float64, v2 z-score std; v1 running sum of squared deviations
    n_seen: np.ndarray  # (1,) int64, pool members already assigned
    clustered: np.ndarray  # (1,) int64, 1 once the first (re-)clustering / seeding ran
    last_cluster_t: np.ndarray  # (1,) int64, t of the last re-clustering
    mask_dirty: np.ndarray  # (1,) int64, 1 = recompute the mask, 2 = when a rep gets its hw
    # not-applicable proposals (DESIGN.md): strategies known not applicable to each member
    na: np.ndarray  # (max_pool,) int64, bit s set = strategy s not applicable to the member
    na_n: np.ndarray  # (1,) int64, number of (member, strategy) pairs known not applicable
    # flat (kernel, strategy) statistics of ucb-flat
    fmu: np.ndarray  # (max_pool, S) float64
    fcnt: np.ndarray  # (max_pool, S) float64
    # v1 compatibility prior psi: per-strategy logistic model and its bounded buffer
    w: np.ndarray  # (S, 10) float64, weights of 9 features + bias
    buf_x: np.ndarray  # (B, 9) float64, normalised parent profiles
    buf_s: np.ndarray  # (B,) int64, strategy
    buf_y: np.ndarray  # (B,) float64, 1 = improved
    buf_n: np.ndarray  # (3,) int64: entries, next write position, replay cursor
    warmed: np.ndarray  # (1,) int64, 1 once the synthetic warm start ran
    xrt: np.ndarray  # (max_pool, 6) float64, v1 cleaned runtime vectors
    # scratch (no allocation in the hot path)
    sc_f: np.ndarray  # (max_pool,) float64
    sc_i: np.ndarray  # (max_pool,) int64
    sc_zt: np.ndarray  # (D, max_pool) float64, z-scored points as columns
    sc_dist: np.ndarray  # (K, max_pool) float64
    sc_cent: np.ndarray  # (K, D) float64
    sc_acc: np.ndarray  # (K, D) float64
    sc_cnt: np.ndarray  # (K,) float64
    sc_x: np.ndarray  # (10,) float64
    sc_k: np.ndarray  # (3K,) int64
    # v2 parent-softmax cache per (cluster, hardware dim), covering the first pc_n members
    # (0 = invalid); members that join later are appended while their score stays <= pc_top
    pc_w: np.ndarray  # (K, 3, max_pool) float64, softmax weights exp(score - top) per member
    pc_cum: np.ndarray  # (K, 3, max_pool) float64, their running sums
    pc_tot: np.ndarray  # (K, 3) float64, total weight
    pc_top: np.ndarray  # (K, 3) float64, max score
    pc_sig: np.ndarray  # (K, 3) int64, 1 = some member has a signature in that dim
    pc_fast: np.ndarray  # (K, 3) int64, fastest member
    pc_n: np.ndarray  # (K, 3) int64, members covered
    pc_rep: np.ndarray  # (K,) int64, 2 * rep + (1 if rep profiled) when the mask was computed
    # per (member, dim): the last softmax weight computed, exp(score - top), with its score and
    # top, reused when a refresh meets the same pair again (same inputs: the same weight)
    pc_mw: np.ndarray  # (max_pool, 3) float64
    pc_mscore: np.ndarray  # (max_pool, 3) float64
    pc_mtop: np.ndarray  # (max_pool, 3) float64, NaN = none yet


def new_state(
    spec: PolicySpec,
    max_pool: int,
    n_strategies: int = N_STRATEGIES,
    target: np.ndarray | None = None,
) -> PolicyState:
    """Fresh state for `spec` over a pool of at most `max_pool` kernels and `n_strategies`.

    `target` (hardware dim per strategy) defaults to `kbsim.strategies.TARGET` and must be given
    when `n_strategies` differs from the six built-in strategies.
    """
    if max_pool < 1:
        raise ValueError(f"max_pool must be >= 1, got {max_pool}")
    if not 1 <= n_strategies <= 62:
        raise ValueError(f"n_strategies must be in 1..62 (a bitmask per member), got "
                         f"{n_strategies}")
    if target is None:
        if n_strategies != N_STRATEGIES:
            raise ValueError(
                f"target (hardware dim per strategy) is needed for {n_strategies} strategies"
            )
        target = TARGET
    target = np.ascontiguousarray(target, dtype=np.int64)
    if target.shape != (n_strategies,) or target.min() < 0 or target.max() >= HW_DIM:
        raise ValueError(f"target must hold {n_strategies} values in 0..2, got {target}")
    kind = spec.kind
    S = n_strategies
    v2 = is_v2_family(kind)
    v1 = kind == KIND_V1
    K = int(spec.iparams[I_K]) if (v2 or v1) else 1
    D = PHI_DIM if v2 else (RT_DIM if v1 else 0)
    B = int(spec.iparams[I_BUFFER]) if v1 else 0
    P = max_pool
    mu = np.full((K, S), 0.5 if v2 else 0.0)
    cnt = np.full((K, S), 1.0 if v2 else 0.0)
    th = kind == KIND_THOMPSON
    flat = kind == KIND_UCB_FLAT
    one = lambda v=0: np.full(1, v, dtype=np.int64)
    return PolicyState(
        t=one(),
        target=target.copy(),
        mu=mu,
        cnt=cnt,
        isq=1.0 / np.sqrt(np.maximum(cnt, 1.0)),
        mask=np.zeros((K, S), dtype=np.int64),
        beta_a=np.full((K if th else 0, S), float(spec.fparams[F_PRIOR_A])),
        beta_b=np.full((K if th else 0, S), float(spec.fparams[F_PRIOR_B])),
        assign=np.full(P, -1, dtype=np.int64),
        members=np.full((K, P), -1, dtype=np.int64),
        size=np.zeros(K, dtype=np.int64),
        rep=np.full(K, -1, dtype=np.int64),
        centroids=np.zeros((K, D)),
        cent_count=np.zeros(K),
        zmean=np.zeros(D),
        zstd=np.ones(D) if v2 else np.zeros(D),
        n_seen=one(),
        clustered=one(),
        last_cluster_t=one(),
        mask_dirty=one(1),
        na=np.zeros(P, dtype=np.int64),
        na_n=one(),
        fmu=np.zeros((P if flat else 0, S)),
        fcnt=np.zeros((P if flat else 0, S)),
        w=np.zeros((S if v1 else 0, V1_FEAT)),
        buf_x=np.zeros((B, PROF_DIM)),
        buf_s=np.zeros(B, dtype=np.int64),
        buf_y=np.zeros(B),
        buf_n=np.zeros(3, dtype=np.int64),
        warmed=one(),
        xrt=np.zeros((P if v1 else 0, RT_DIM)),
        sc_f=np.zeros(P),
        sc_i=np.zeros(P, dtype=np.int64),
        sc_zt=np.zeros((D, P)),
        sc_dist=np.zeros((K, P)),
        sc_cent=np.zeros((K, D)),
        sc_acc=np.zeros((K, D)),
        sc_cnt=np.zeros(K),
        sc_x=np.zeros(V1_FEAT),
        sc_k=np.zeros(3 * K, dtype=np.int64),
        pc_w=np.zeros((K if v2 else 0, HW_DIM, P if v2 else 0)),
        pc_cum=np.zeros((K if v2 else 0, HW_DIM, P if v2 else 0)),
        pc_tot=np.zeros((K if v2 else 0, HW_DIM)),
        pc_top=np.zeros((K if v2 else 0, HW_DIM)),
        pc_sig=np.zeros((K if v2 else 0, HW_DIM), dtype=np.int64),
        pc_fast=np.zeros((K if v2 else 0, HW_DIM), dtype=np.int64),
        pc_n=np.zeros((K if v2 else 0, HW_DIM), dtype=np.int64),
        pc_rep=np.full(K if v2 else 0, -1, dtype=np.int64),
        pc_mw=np.zeros((P if v2 else 0, HW_DIM)),
        pc_mscore=np.zeros((P if v2 else 0, HW_DIM)),
        pc_mtop=np.full((P if v2 else 0, HW_DIM), np.nan),
    )


def copy_state(state: PolicyState) -> PolicyState:
    """A deep copy (every array copied)."""
    return PolicyState(*(a.copy() for a in state))


def copy_pool(pool: Pool) -> Pool:
    """A deep copy (every array copied)."""
    return Pool(*(a.copy() for a in pool))
