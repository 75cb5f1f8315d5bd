"""Compiled KernelBand v2 family: clustering, masks, arm rules (UCB, eps-greedy, Thompson),
parent rules (the headroom softmax; the fastest member and a speed softmax as ablations). The
math is documented in `kbsim.policies.reference`."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kbsim._byref import ref_of_value
from kbsim._jit import inner_njit
from kbsim.policies._branchless import select_unpredictable
from kbsim.policies._kmeans import (
    kmeanspp_seed_dist,
    lloyd_dist,
    match_labels,
    nearest_row,
    sqdist_to_centre,
    zscore_t,
)
from kbsim.policies._na import is_na
from kbsim.policies.spec import (
    F_C,
    F_EPS,
    F_PARENT_TEMPERATURE,
    F_TEMPERATURE,
    F_THETA,
    I_FRONTIER,
    I_ITERS,
    I_K,
    I_MASK,
    I_PARENT,
    I_TAU,
    KIND_EPS_GREEDY,
    KIND_THOMPSON,
    PARENT_FASTEST,
    PARENT_HEADROOM,
    PARENT_SPEED,
)
from kbsim.rng import rand_beta, rand_int, rand_uniform


@inner_njit(_nrt=False)
def _add_member(state, idx, c) -> None:
    state.assign[idx] = c
    state.members[c, state.size[c]] = idx
    state.size[c] += 1
    if state.rep[c] < 0:
        state.rep[c] = idx
        state.mask_dirty[0] = 1


@inner_njit(_nrt=False)
def recluster_v2(iparams, state, pool, rng) -> None:
    """k-means++ then Lloyd on z-scored phi of the whole pool; relabel to follow old clusters;
    representatives = member nearest its centre."""
    n = pool.n[0]
    K = iparams[I_K]
    D = state.zmean.shape[0]
    had = state.clustered[0] == 1
    old = state.centroids
    if had:  # old centres to raw phi space, before the z-scoring changes
        for c in range(K):
            for d in range(D):
                old[c, d] = old[c, d] * state.zstd[d] + state.zmean[d]
    zt = state.sc_zt
    zscore_t(pool.phi, n, state.zmean, state.zstd, zt)
    if had:  # ... and into the new z-space
        for c in range(K):
            for d in range(D):
                old[c, d] = (old[c, d] - state.zmean[d]) / state.zstd[d]
    cent = state.sc_cent
    labels = state.sc_i
    dist = state.sc_dist
    kmeanspp_seed_dist(zt, n, K, cent, dist, state.sc_f, rng)
    # Lloyd's scratch for the new labels: state.assign, rewritten for every member below
    current = lloyd_dist(zt, n, K, cent, labels, dist, state.sc_f, state.assign, state.sc_k[:K],
                         state.sc_cnt, state.sc_acc, iparams[I_ITERS])
    perm = state.sc_k[:K]
    for j in range(K):
        perm[j] = j
    if had:
        match_labels(cent, old, K, perm, state.sc_k[K : 2 * K], state.sc_k[2 * K : 3 * K])
    for j in range(K):
        for d in range(D):
            state.centroids[perm[j], d] = cent[j, d]
    state.size[:] = 0
    state.rep[:] = -1
    best = state.sc_f  # per new cluster: distance of its representative so far
    for j in range(K):
        best[j] = np.inf
    if not current:  # the centres moved after the last distances: recompute them
        for j in range(K):
            sqdist_to_centre(zt, n, cent, j, dist[j])
    for i in range(n):  # members in index order; the first nearest member is the rep
        j = labels[i]
        c = perm[j]
        state.assign[i] = c
        state.members[c, state.size[c]] = i
        state.size[c] += 1
        d2 = dist[j, i]
        if d2 < best[j]:
            best[j] = d2
            state.rep[c] = i
    state.n_seen[0] = n
    state.clustered[0] = 1
    state.last_cluster_t[0] = state.t[0]
    state.mask_dirty[0] = 1
    state.pc_n[:, :] = 0


@inner_njit(_nrt=False)
def compute_mask_v2(fparams, iparams, state, pool) -> None:
    """M[i,s] = 0 where rep(i)'s h[target(s)] >= theta_sat (NaN: open); a non-empty cluster with
    every arm closed reopens the strategies whose target is least saturated; empty: closed."""
    K, S = state.mask.shape
    masking = iparams[I_MASK] == 1
    pending = 0
    for c in range(K):
        if state.size[c] == 0:
            for s in range(S):
                state.mask[c, s] = 0
            continue
        r = state.rep[c]
        hw_known = False  # profiled: at least one dim known (a profiler may miss metrics)
        for d in range(3):
            if pool.hw[r, d] == pool.hw[r, d]:
                hw_known = True
        if masking and not hw_known:
            pending = 1
        # the representative's signature may have been filled in since: its cluster's parent
        # weights are stale when (rep, profiled) changed
        key = 2 * r + (1 if hw_known else 0)
        if state.pc_rep[c] != key:
            state.pc_rep[c] = key
            for d in range(3):
                state.pc_n[c, d] = 0
        n_open = 0
        dead = 0  # bit s: every member of c is known not applicable for s (a closed arm)
        if state.na_n[0] > 0:
            dead = _dead_arms(state, c, S)
        for s in range(S):
            dim = state.target[s]
            closed = (masking and pool.hw[r, dim] >= fparams[F_THETA + dim]) or (
                (dead >> s) & 1 == 1)
            state.mask[c, s] = 0 if closed else 1
            n_open += state.mask[c, s]
        if n_open == 0:  # the safety rule: reopen the least-saturated applicable strategies
            least = np.inf
            for s in range(S):
                dim = state.target[s]
                over = pool.hw[r, dim] - fparams[F_THETA + dim]
                if (dead >> s) & 1 == 0 and over < least:
                    least = over
            for s in range(S):
                dim = state.target[s]
                if (dead >> s) & 1 == 0 and pool.hw[r, dim] - fparams[F_THETA + dim] == least:
                    state.mask[c, s] = 1
    state.mask_dirty[0] = 2 if pending == 1 else 0


@inner_njit(_nrt=False)
def _dead_arms(state, c, S) -> int:
    """Bitmask of the strategies known not applicable to every member of cluster c."""
    dead = (1 << S) - 1
    for j in range(state.size[c]):
        dead &= state.na[state.members[c, j]]
    return dead


@njit(cache=True, _nrt=False, inline="always")
def prepare_due_v2(iparams, state, pool) -> bool:
    """Whether `prepare_v2` has anything to do (cheap check on the hot path)."""
    n = pool.n[0]
    if state.n_seen[0] < n or state.mask_dirty[0] == 1:
        return True
    K = iparams[I_K]
    if state.mask_dirty[0] == 2:  # waiting for representatives' signatures: any arrived?
        for c in range(K):
            r = state.rep[c]
            if state.size[c] > 0 and state.pc_rep[c] & 1 == 0:
                for d in range(3):
                    if pool.hw[r, d] == pool.hw[r, d]:
                        return True
    due = state.clustered[0] == 0 or state.t[0] - state.last_cluster_t[0] >= iparams[I_TAU]
    return n >= 2 * K and due


@inner_njit(_nrt=False)
def prepare_v2(fparams, iparams, state, pool, rng) -> None:
    """Re-cluster when due (pool >= 2K and tau steps since the last one), else assign members
    added since the last call to their nearest centre (cluster 0 before the first clustering);
    then refresh the mask if needed."""
    n = pool.n[0]
    K = iparams[I_K]
    due = state.clustered[0] == 0 or state.t[0] - state.last_cluster_t[0] >= iparams[I_TAU]
    if n >= 2 * K and due:
        recluster_v2(iparams, state, pool, rng)
    elif state.n_seen[0] < n:
        D = state.zmean.shape[0]
        zrow = state.sc_acc  # row 0 as scratch
        for i in range(state.n_seen[0], n):
            c = 0
            if state.clustered[0] == 1:
                for d in range(D):
                    v = pool.phi[i, d]
                    zrow[0, d] = (v - state.zmean[d]) / state.zstd[d] if v == v else 0.0
                # a run-time row 0 (np.int64): no variant compiled for a literal index
                c = nearest_row(zrow, np.int64(0), state.centroids, K)
            _add_member(state, i, c)
        state.n_seen[0] = n
        if state.na_n[0] > 0:  # a new member may reopen an arm closed as not applicable
            state.mask_dirty[0] = 1
    if state.mask_dirty[0] != 0:
        compute_mask_v2(fparams, iparams, state, pool)


@njit(cache=True, _nrt=False, inline="always")
def _ucb_arm(fparams, state):
    K, S = state.mu.shape
    cs = fparams[F_C] * math.sqrt(math.log(state.t[0] + 1.0))
    best = -np.inf
    bc = -1
    bs = -1
    if S == 6:  # the six built-in strategies: a fixed inner trip count, unrolled (~15 % faster)
        for i in range(K):
            for s in (0, 1, 2, 3, 4, 5):
                if state.mask[i, s] == 1:
                    v = state.mu[i, s] + cs * state.isq[i, s]
                    if v > best:
                        best = v
                        bc = i
                        bs = s
        return bc, bs, 1.0
    for i in range(K):
        for s in range(S):
            if state.mask[i, s] == 1:
                v = state.mu[i, s] + cs * state.isq[i, s]
                if v > best:
                    best = v
                    bc = i
                    bs = s
    return bc, bs, 1.0


@inner_njit(_nrt=False)
def _eps_arm(fparams, state, rng):
    K, S = state.mu.shape
    eps = fparams[F_EPS]
    n_open = 0
    best = -np.inf
    gc = -1
    gs = -1
    for i in range(K):
        for s in range(S):
            if state.mask[i, s] == 1:
                n_open += 1
                if state.mu[i, s] > best:
                    best = state.mu[i, s]
                    gc = i
                    gs = s
    if n_open == 0:
        return -1, -1, np.nan
    u = rand_uniform(rng)
    bc = gc
    bs = gs
    if u < eps:
        j = rand_int(rng, n_open)
        for i in range(K):
            for s in range(S):
                if state.mask[i, s] == 1:
                    if j == 0:
                        bc = i
                        bs = s
                    j -= 1
    p = eps / n_open + ((1.0 - eps) if (bc == gc and bs == gs) else 0.0)
    return bc, bs, p


@inner_njit(_nrt=False)
def _thompson_arm(state, rng):
    K, S = state.mu.shape
    best = -np.inf
    bc = -1
    bs = -1
    for i in range(K):
        for s in range(S):
            if state.mask[i, s] == 1:
                v = rand_beta(rng, state.beta_a[i, s], state.beta_b[i, s])
                if v > best:
                    best = v
                    bc = i
                    bs = s
    return bc, bs, np.nan


@njit(cache=True, _nrt=False, inline="always")
def _member_weight(state, k, dim, score, top) -> float:
    """exp(score - top) for member k, reused from the member's last computation when it had
    the same score and top (a re-clustering mostly keeps each cluster's top)."""
    if state.pc_mtop[k, dim] == top and state.pc_mscore[k, dim] == score:
        return state.pc_mw[k, dim]
    w = math.exp(score - top)
    state.pc_mw[k, dim] = w
    state.pc_mscore[k, dim] = score
    state.pc_mtop[k, dim] = top
    return w


@inner_njit(_nrt=False)
def _refresh_parent_cache(fparams, state, pool, c, dim) -> None:
    m = state.size[c]
    theta = fparams[F_THETA + dim]
    temp = fparams[F_TEMPERATURE]
    fast = state.members[c, 0]
    top = -np.inf
    signed = 0
    for j in range(m):
        k = state.members[c, j]
        if pool.ms[k] < pool.ms[fast]:
            fast = k
        h = pool.hw[k, dim]
        score = 0.0
        if h == h:
            signed = 1
            score = (theta - h) / temp
        state.pc_w[c, dim, j] = score
        if score > top:
            top = score
    total = 0.0
    if signed == 1:
        for j in range(m):
            w = _member_weight(state, state.members[c, j], dim, state.pc_w[c, dim, j], top)
            state.pc_w[c, dim, j] = w
            total += w
            state.pc_cum[c, dim, j] = total
    state.pc_fast[c, dim] = fast
    state.pc_sig[c, dim] = signed
    state.pc_top[c, dim] = top
    state.pc_tot[c, dim] = total
    state.pc_n[c, dim] = m


@inner_njit(_nrt=False)
def update_parent_cache_v2(fparams, state, pool, c, dim) -> None:
    """Bring the softmax weights of cluster c for hardware dim `dim` up to date: append members
    that joined since (same max score: identical to recomputing), else recompute them all."""
    m = state.size[c]
    start = state.pc_n[c, dim]
    if start > 0 and state.pc_sig[c, dim] == 1:
        theta = fparams[F_THETA + dim]
        temp = fparams[F_TEMPERATURE]
        top = state.pc_top[c, dim]
        total = state.pc_tot[c, dim]
        fast = state.pc_fast[c, dim]
        for j in range(start, m):
            k = state.members[c, j]
            h = pool.hw[k, dim]
            score = (theta - h) / temp if h == h else 0.0
            if score > top:
                _refresh_parent_cache(fparams, state, pool, c, dim)
                return
            w = _member_weight(state, k, dim, score, top)
            state.pc_w[c, dim, j] = w
            total += w
            state.pc_cum[c, dim, j] = total
            if pool.ms[k] < pool.ms[fast]:
                fast = k
        state.pc_tot[c, dim] = total
        state.pc_fast[c, dim] = fast
        state.pc_n[c, dim] = m
        return
    _refresh_parent_cache(fparams, state, pool, c, dim)


@njit(cache=True, _nrt=False, inline="always")
def choose_parent_v2(fparams, state, pool, c, s, rng):
    """Softmax over members of cluster c of (theta_sat - h(k)[target(s)]) / temperature;
    members without a signature score 0; no signature in the cluster: its fastest member.
    Returns (parent pool index, its probability). Weights are cached per (cluster, dim)."""
    m = state.size[c]
    if m == 1:
        return state.members[c, 0], 1.0
    dim = state.target[s]
    if state.pc_n[c, dim] != m:
        update_parent_cache_v2(fparams, ref_of_value(state), ref_of_value(pool), c, dim)
    if state.pc_sig[c, dim] == 0:
        return state.pc_fast[c, dim], 1.0
    total = state.pc_tot[c, dim]
    u = rand_uniform(rng) * total
    # the weights are >= 0, so cum is non-decreasing and the first j with u < cum[j] (else
    # m - 1) is the number of j < m - 1 with cum[j] <= u: counted without a branch (an early
    # exit is a coin flip for the branch predictor) in a loop LLVM vectorises
    pick = 0
    for j in range(m - 1):
        pick += state.pc_cum[c, dim, j] <= u
    return state.members[c, pick], state.pc_w[c, dim, pick] / total


@njit(cache=True, _nrt=False, inline="always")
def select_v2(kind, fparams, iparams, state, pool, rng):
    """prepare, arm by the kind's rule over open arms, parent by the spec's rule (default:
    the headroom softmax, cached); propensity of the
    (parent, strategy) pair = P(arm) * P(parent | arm) (NaN for Thompson)."""
    # functions compiled on their own get references (`kbsim.policies.kernels`)
    if prepare_due_v2(iparams, state, pool):
        prepare_v2(fparams, iparams, ref_of_value(state), ref_of_value(pool), rng)
    if kind == KIND_EPS_GREEDY:
        c, s, p_arm = _eps_arm(fparams, ref_of_value(state), rng)
    elif kind == KIND_THOMPSON:
        c, s, p_arm = _thompson_arm(ref_of_value(state), rng)
    else:
        c, s, p_arm = _ucb_arm(fparams, state)
    # the default rule's cached path, unless an ablation's rule or a frontier is set or some
    # member is known not applicable for s (then the uncached one, which skips such members)
    uncached = iparams[I_PARENT] != PARENT_HEADROOM or iparams[I_FRONTIER] > 0
    if state.na_n[0] > 0:  # not-applicable pairs known: no arm left, or skip such parents
        if c < 0:
            return -1, -1, -1, np.nan
        uncached = uncached or _some_member_na(ref_of_value(state), c, s)
    if uncached:
        parent, p_parent = choose_parent_any_v2(fparams, iparams, ref_of_value(state),
                                                ref_of_value(pool), c, s, rng)
    else:
        parent, p_parent = choose_parent_v2(fparams, state, pool, c, s, rng)
    return c, s, parent, p_arm * p_parent


@inner_njit(_nrt=False)
def _some_member_na(state, c, s) -> bool:
    for j in range(state.size[c]):
        if is_na(state, state.members[c, j], s):
            return True
    return False


@inner_njit(_nrt=False)
def _parent_score(fparams, pool, rule, dim, k) -> float:
    """Member k's softmax score under `rule` (NaN: no signature, for headroom)."""
    if rule == PARENT_SPEED:  # log speedup over k0; a runtime that is no positive number: 0
        ratio = pool.ms[0] / pool.ms[k]
        if ratio > 0.0 and ratio < np.inf:
            return math.log(ratio) / fparams[F_PARENT_TEMPERATURE]
        return 0.0
    h = pool.hw[k, dim]
    return (fparams[F_THETA + dim] - h) / fparams[F_TEMPERATURE] if h == h else np.nan


@inner_njit(_nrt=False)
def choose_parent_any_v2(fparams, iparams, state, pool, c, s, rng):
    """The parent rule of the spec (`iparams[I_PARENT]`) over the candidates of cluster c: its
    members to which s is not known not applicable, and of those only the `frontier` fastest
    (ties: the earlier member) when `iparams[I_FRONTIER]` > 0. Uncached: `choose_parent_v2`
    is the default rule's fast path (no not-applicable pair known, no frontier). A single
    candidate is the parent (no draw); `fastest`: the fastest candidate (the earlier on ties);
    `headroom`: softmax of (theta_sat - h[target(s)]) / temperature, unsigned members 0, the
    fastest when no candidate has a signature; `speed`: softmax of log(T(k0) / T(k)) /
    parent_temperature. Returns (parent pool index, its probability)."""
    dim = state.target[s]
    rule = iparams[I_PARENT]
    frontier = iparams[I_FRONTIER]
    ids = state.sc_i
    cum = state.sc_f
    m = 0
    for j in range(state.size[c]):
        k = state.members[c, j]
        if state.na_n[0] > 0 and is_na(state, k, s):
            continue
        ids[m] = k
        m += 1
    if frontier > 0 and m > frontier:  # keep the `frontier` fastest, in member order
        for j in range(m):  # cum[j]: candidates faster than ids[j], or as fast and earlier
            ahead = 0
            for i in range(m):
                if pool.ms[ids[i]] < pool.ms[ids[j]] or (
                        pool.ms[ids[i]] == pool.ms[ids[j]] and i < j):
                    ahead += 1
            cum[j] = ahead
        kept = 0
        for j in range(m):
            if cum[j] < frontier:
                ids[kept] = ids[j]
                kept += 1
        m = kept
    if m == 1:
        return ids[0], 1.0
    fast = ids[0]
    for j in range(1, m):
        if pool.ms[ids[j]] < pool.ms[fast]:
            fast = ids[j]
    if rule == PARENT_FASTEST:
        return fast, 1.0
    signed = rule == PARENT_SPEED
    top = -np.inf
    for j in range(m):
        score = _parent_score(fparams, pool, rule, dim, ids[j])
        if score == score:
            signed = True
        else:
            score = 0.0
        if score > top:
            top = score
    if not signed:
        return fast, 1.0
    total = 0.0
    for j in range(m):
        score = _parent_score(fparams, pool, rule, dim, ids[j])
        total += math.exp((score if score == score else 0.0) - top)
        cum[j] = total
    u = rand_uniform(rng) * total
    pick = m - 1
    for j in range(m):
        if u < cum[j]:
            pick = j
            break
    score = _parent_score(fparams, pool, rule, dim, ids[pick])
    weight = math.exp((score if score == score else 0.0) - top)
    return ids[pick], weight / total


@njit(cache=True, _nrt=False, inline="always")
def v2_reward(parent_ms, child_ms, success) -> float:
    """r = max(0, (T(parent) - T(child)) / T(parent)); failures (or unusable times) give 0."""
    if not parent_ms > 0.0 or not child_ms == child_ms:
        return 0.0
    r = (parent_ms - child_ms) / parent_ms
    # one select, no branch: success and the sign of r are coin flips for the branch predictor,
    # and a mispredicted branch on r would wait for the division
    return select_unpredictable(bool(success) & (r > 0.0), r, 0.0)


@njit(cache=True, _nrt=False, inline="always")
def update_v2(kind, state, cluster, strategy, reward) -> None:
    """N += 1; mu += (r - mu) / N; 1/sqrt(N) kept for the UCB index (Thompson also:
    a += r, b += 1 - r)."""
    n = state.cnt[cluster, strategy] + 1.0
    state.cnt[cluster, strategy] = n
    state.mu[cluster, strategy] += (reward - state.mu[cluster, strategy]) / n
    state.isq[cluster, strategy] = 1.0 / math.sqrt(n)
    if kind == KIND_THOMPSON:
        state.beta_a[cluster, strategy] += reward
        state.beta_b[cluster, strategy] += 1.0 - reward


@inner_njit(_nrt=False)
def representatives_into_v2(state, pool, out) -> int:
    """Representatives of non-empty clusters that have no hardware signature yet (all three
    dims NaN), written into out[:count]; returns count."""
    K = state.rep.shape[0]
    n = 0
    for c in range(K):
        r = state.rep[c]
        if state.size[c] > 0 and r >= 0:
            missing = True
            for d in range(3):
                if pool.hw[r, d] == pool.hw[r, d]:
                    missing = False
            if missing:
                out[n] = r
                n += 1
    return n


@inner_njit(_nrt=False)
def show_signature_v2(state, pool, idx, hw) -> bool:
    """Write hw as pool member idx's hardware signature; returns whether it changed. A member
    that already showed a signature and is shown another (its roofline signature replaced by
    Nsight Compute's: docs/profiling-and-memory.md) marks the mask for recomputation and drops
    its cluster's parent-softmax cache (NOTE D34), so the next `prepare` / `select` see it; a
    first signature (all dims NaN before) takes the usual path (`mask_dirty` 2)."""
    known = False
    changed = False
    for d in range(3):
        old = pool.hw[idx, d]
        new = hw[d]
        if old == old:
            known = True
        if not (old == new or (old != old and new != new)):
            changed = True
    if not changed:
        return False
    for d in range(3):
        pool.hw[idx, d] = hw[d]
    if known:
        state.mask_dirty[0] = 1
        c = state.assign[idx]
        if c >= 0:
            for d in range(3):
                state.pc_n[c, d] = 0
    return True
