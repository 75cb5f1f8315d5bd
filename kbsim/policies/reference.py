r"""Reference policies in plain Python / numpy: the math, written to be read.

Same operations as the compiled kernels (`kbsim.policies.kernels`), on the same `PolicyState` and
`Pool`, drawing the same random numbers in the same order (`kbsim.rng.py_*`), so that tests can
hold the two step-for-step identical. Two habits keep the floats bit-identical:
- sums run left to right (`seqsum`, `rowsum`: cumulative sums), never numpy's pairwise sums;
- transcendental functions come from `math` (libm, like numba), never numpy's SIMD versions.

KernelBand v2 (ICML version), arms (cluster i, strategy s):

- clustering: k-means++ on the z-scored behaviour vectors phi(k) of the pool, K clusters,
  re-run every tau steps once |pool| >= 2K (Lloyd iterations capped at `iters`). New members in
  between join their nearest centre; before the first clustering every member is in cluster 0.
  After each re-clustering new labels are matched greedily to the nearest old centres so that
  the arm statistics keep following similar clusters (NOTE (D30): the paper leaves this open).
- representative rep(i): the member nearest the centre of cluster i; it is the one profiled.
- mask:  M[i,s] = 0  iff  h(rep(i))[target(s)] >= theta_sat[target(s)]; a non-empty cluster keeps
  at least its least-saturated strategies open; empty clusters are closed; unknown h: open.
- arm:   (i*, s*) = argmax_{M[i,s]=1}  mu[i,s] + c * sqrt(ln t / N[i,s]),  mu=0.5, N=1 initially,
  t = updates so far + 1 (ties: lowest (i, s) in row-major order). NOTE (D36): evaluated as
  (c * sqrt(ln t)) * (1 / sqrt(N)) with 1 / sqrt(N) kept per arm, equal in exact arithmetic.
- parent: P(k | i, s) = softmax_k( (theta_sat[target(s)] - h(k)[target(s)]) / temperature ) over
  members k of cluster i; members without a signature score 0; if no member has one, the fastest
  (``parent=headroom``, the authors' rule). Ablations: ``parent=fastest`` (the fastest member of
  cluster i), ``parent=speed`` (softmax_k log(T(k0) / T(k)) / parent_temperature); ``frontier=N``
  keeps only the N fastest members as candidates.
- reward: r = max(0, (T(parent) - T(child)) / T(parent)), failure 0;  N += 1, mu += (r - mu)/N.

Not-applicable proposals (DESIGN.md; every policy, this module and the others): `mark_na_ref`
records that strategy s cannot be applied to member k (a bit of ``state.na[k]``); no statistic
changes and the caller selects again. v2 family: a member known not applicable for s is never
the parent for s (the softmax runs over the others); an arm whose members are all known not
applicable is closed like a masked arm, and the safety rule reopens the least-saturated
*applicable* strategies; no open arm anywhere: select returns (-1, -1, -1, NaN), the task stops.

Ablations on the same machinery (NOTE (D31): eps-greedy and Thompson choose among v2's
(cluster, strategy) arms, with its masks and parent rule, so that only the arm rule differs):
`kernelband-v2-nomask` (M = 1 on non-empty clusters),
`eps-greedy` (with probability eps a uniformly random open arm, else argmax mu), `thompson`
(Beta posteriors, theta ~ Beta(a, b) per open arm, argmax; a += r, b += 1 - r: the fractional
Bernoulli update, exact for 0/1 rewards). Baselines without clusters are in `_ref_flat`, v1 in
`reference_v1`.
"""

from __future__ import annotations

import math

import numpy as np

from kbsim.policies.spec import (
    I_MASK,
    KIND_EPS_GREEDY,
    KIND_THOMPSON,
    KIND_UCB_FLAT,
    KIND_V1,
    PolicySpec,
    is_v2_family,
)
from kbsim.policies.state import PolicyState, Pool
from kbsim.rng import py_rand_beta, py_rand_int, py_rand_uniform

_THETA_KEYS = ("theta_sat_sm", "theta_sat_dram", "theta_sat_l2")


# ---------------------------------------------------------------------------- helpers


def seqsum(values: np.ndarray) -> float:
    """Left-to-right sum (what a compiled loop computes); 0.0 for no values."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def rowsum(values: np.ndarray) -> np.ndarray:
    """Left-to-right sum of each row."""
    return np.cumsum(values, axis=1)[:, -1]


def sqdist_to(points: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Squared Euclidean distance of each row of `points` to `centre`."""
    diff = points - centre
    return rowsum(diff * diff)


def theta_sat(spec: PolicySpec) -> np.ndarray:
    """theta_sat per hardware dim (SM, DRAM, L2)."""
    return np.array([spec.params[k] for k in _THETA_KEYS])


def first_hit(cumulative: np.ndarray, u: float, default: int) -> int:
    """First index whose cumulative weight exceeds u (inverse-CDF sampling)."""
    hits = np.nonzero(u < cumulative)[0]
    return int(hits[0]) if len(hits) else default


# ---------------------------------------------------------------------------- k-means


def zscore_ref(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(z, mean, std) per column over the finite entries; NaN -> 0; constant column: std 1."""
    n, dims = data.shape
    z = np.zeros((n, dims))
    mean = np.zeros(dims)
    std = np.ones(dims)
    for d in range(dims):
        col = data[:, d]
        ok = col == col
        count = int(ok.sum())
        m = seqsum(col[ok]) / count if count else 0.0
        s = math.sqrt(seqsum((col[ok] - m) * (col[ok] - m)) / count) if count else 0.0
        s = s if s > 0.0 else 1.0
        mean[d], std[d] = m, s
        z[:, d] = np.where(ok, (col - m) / s, 0.0)
    return z, mean, std


def kmeanspp_ref(z: np.ndarray, k: int, rng: np.ndarray) -> np.ndarray:
    """k-means++ seeding (Arthur and Vassilvitskii 2007): the first centre uniform, then each
    point with probability D(x)^2 / sum D^2 (uniform if every D is 0)."""
    n = len(z)
    cent = np.zeros((k, z.shape[1]))
    cent[0] = z[py_rand_int(rng, n)]
    d2 = sqdist_to(z, cent[0])
    for j in range(1, k):
        total = seqsum(d2)
        if total > 0.0:
            u = py_rand_uniform(rng) * total
            positive = np.nonzero(d2 > 0.0)[0]
            pick = first_hit(np.cumsum(d2), u, int(positive[-1]))
        else:
            pick = py_rand_int(rng, n)
        cent[j] = z[pick]
        d2 = np.minimum(d2, sqdist_to(z, cent[j]))
    return cent


def nearest_ref(z: np.ndarray, cent: np.ndarray) -> np.ndarray:
    """Label of the nearest centre for each row (ties: lowest label)."""
    dists = np.stack([sqdist_to(z, c) for c in cent], axis=1)
    return np.argmin(dists, axis=1)


def lloyd_ref(z: np.ndarray, cent: np.ndarray, iters: int) -> np.ndarray:
    """Lloyd's iterations from `cent` (updated in place) until no label changes or `iters`;
    empty clusters keep their centre. Returns the labels."""
    labels = np.full(len(z), -1)
    for _ in range(iters):
        new = nearest_ref(z, cent)
        if (new == labels).all():
            break
        labels = new
        for c in range(len(cent)):
            rows = z[labels == c]
            if len(rows):
                cent[c] = np.cumsum(rows, axis=0)[-1] / len(rows)
    return labels


def match_labels_ref(new_cent: np.ndarray, old_cent: np.ndarray) -> np.ndarray:
    """perm[new label] = old label, greedily pairing the closest (new, old) centres first."""
    k = len(new_cent)
    dist = np.stack([sqdist_to(old_cent, c) for c in new_cent])  # (new, old)
    perm = np.zeros(k, dtype=np.int64)
    for _ in range(k):
        j, i = np.unravel_index(np.argmin(dist), dist.shape)
        perm[j] = i
        dist[j, :] = np.inf
        dist[:, i] = np.inf
    return perm


# ---------------------------------------------------------------------------- v2 family


def na_bits(state: PolicyState, k: int) -> int:
    """Strategies known not applicable to member k, as a bitmask."""
    return int(state.na[k])


def is_na_ref(state: PolicyState, k: int, s: int) -> bool:
    return (na_bits(state, k) >> s) & 1 == 1


def mark_na_ref(state: PolicyState, parent: int, strategy: int) -> None:
    """Twin of `kernels.mark_na`: strategy is not applicable to pool member parent."""
    if not is_na_ref(state, parent, strategy):
        state.na[parent] |= 1 << strategy
        state.na_n[0] += 1
        state.mask_dirty[0] = 1


def _add_member(state: PolicyState, idx: int, c: int) -> None:
    state.assign[idx] = c
    state.members[c, state.size[c]] = idx
    state.size[c] += 1
    if state.rep[c] < 0:
        state.rep[c] = idx
        state.mask_dirty[0] = 1


def recluster_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray) -> None:
    """Re-cluster the whole pool; keep labels close to the previous clusters; pick reps."""
    n = int(pool.n[0])
    k = spec.params["K"]
    had = bool(state.clustered[0])
    old_raw = state.centroids * state.zstd + state.zmean
    z, mean, std = zscore_ref(pool.phi[:n])
    state.zmean[:], state.zstd[:] = mean, std
    old = (old_raw - mean) / std
    cent = kmeanspp_ref(z, k, rng)
    labels = lloyd_ref(z, cent, spec.params["iters"])
    perm = match_labels_ref(cent, old) if had else np.arange(k)
    state.centroids[perm] = cent
    state.size[:] = 0
    state.rep[:] = -1
    for i in range(n):
        c = perm[labels[i]]
        state.assign[i] = c
        state.members[c, state.size[c]] = i
        state.size[c] += 1
    for c in range(k):
        members = state.members[c, : state.size[c]]
        if len(members):
            state.rep[c] = members[np.argmin(sqdist_to(z[members], state.centroids[c]))]
    state.n_seen[0] = n
    state.clustered[0] = 1
    state.last_cluster_t[0] = state.t[0]
    state.mask_dirty[0] = 1


def compute_mask_ref(spec: PolicySpec, state: PolicyState, pool: Pool) -> None:
    """M[i,s] = 0 where rep(i)'s h[target(s)] >= theta_sat; see the module docstring."""
    theta = theta_sat(spec)[state.target]
    masking = spec.iparams[I_MASK] == 1
    state.mask[:] = 0
    pending = 0
    for c in range(len(state.size)):
        if state.size[c] == 0:
            continue
        h = pool.hw[state.rep[c]]
        if masking and np.isnan(h).all():  # not profiled yet (partial signatures count)
            pending = 1
        over = h[state.target] - theta  # per strategy; >= 0 means saturated
        members = state.members[c, : state.size[c]]
        # an arm whose members are all known not applicable is closed
        dead = np.array([all(is_na_ref(state, int(k), s) for k in members)
                         for s in range(len(over))])
        closed = (over >= 0.0) if masking else np.zeros(len(over), dtype=bool)
        closed = closed | dead
        state.mask[c] = ~closed
        if closed.all() and not dead.all():  # reopen the least-saturated applicable ones
            state.mask[c] = ~dead & (over == over[~dead].min())
    state.mask_dirty[0] = 2 if pending else 0  # 2: recompute once a representative is profiled


def prepare_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray) -> None:
    """Twin of `kernels.prepare`."""
    if pool.n[0] == 0:
        return
    if spec.kind == KIND_V1:
        from kbsim.policies.reference_v1 import prepare_v1_ref

        prepare_v1_ref(spec, state, pool, rng)
    elif is_v2_family(spec.kind):
        _prepare_v2_ref(spec, state, pool, rng)


def _prepare_v2_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray) -> None:
    n = int(pool.n[0])
    k = spec.params["K"]
    due = state.clustered[0] == 0 or state.t[0] - state.last_cluster_t[0] >= spec.params["tau"]
    if n >= 2 * k and due:
        recluster_ref(spec, state, pool, rng)
    else:
        for i in range(int(state.n_seen[0]), n):
            c = 0
            if state.clustered[0]:
                phi = pool.phi[i]
                z = np.where(phi == phi, (phi - state.zmean) / state.zstd, 0.0)
                c = int(nearest_ref(z[None, :], state.centroids)[0])
            _add_member(state, i, c)
        state.n_seen[0] = n
        if state.na_n[0] > 0:  # a new member may reopen an arm closed as not applicable
            state.mask_dirty[0] = 1
    if state.mask_dirty[0]:
        compute_mask_ref(spec, state, pool)


def _open_arms(state: PolicyState) -> list[tuple[int, int]]:
    return [(int(i), int(s)) for i, s in zip(*np.nonzero(state.mask == 1), strict=True)]


def _argmax_arm(values: np.ndarray, state: PolicyState) -> tuple[int, int]:
    values = np.where(state.mask == 1, values, -np.inf)
    i, s = np.unravel_index(np.argmax(values), values.shape)
    return int(i), int(s)


def choose_arm_ref(spec: PolicySpec, state: PolicyState, rng: np.ndarray):
    """(cluster, strategy, probability of that arm) under the kind's arm rule."""
    if spec.kind == KIND_EPS_GREEDY:
        eps = spec.params["eps"]
        arms = _open_arms(state)
        if not arms:
            return -1, -1, math.nan
        greedy = _argmax_arm(state.mu, state)
        arm = greedy
        if py_rand_uniform(rng) < eps:
            arm = arms[py_rand_int(rng, len(arms))]
        return (*arm, eps / len(arms) + ((1.0 - eps) if arm == greedy else 0.0))
    if spec.kind == KIND_THOMPSON:
        draws = np.full(state.mu.shape, -np.inf)
        for i, s in _open_arms(state):
            draws[i, s] = py_rand_beta(rng, state.beta_a[i, s], state.beta_b[i, s])
        return (*_argmax_arm(draws, state), math.nan)
    # c * sqrt(ln t / N) computed as (c * sqrt(ln t)) * (1 / sqrt(N)), 1 / sqrt(N) kept per arm
    ucb = state.mu + (spec.params["c"] * math.sqrt(math.log(state.t[0] + 1.0))) * state.isq
    return (*_argmax_arm(ucb, state), 1.0)


def parent_candidates_ref(spec: PolicySpec, state: PolicyState, pool: Pool, c: int,
                          s: int) -> np.ndarray:
    """Members of cluster c to which s is not known not applicable; with ``frontier=N`` > 0
    only the N fastest of them (ties: the earlier member), kept in member order."""
    members = state.members[c, : state.size[c]]
    members = np.array([k for k in members if not is_na_ref(state, int(k), s)], dtype=np.int64)
    frontier = int(spec.params.get("frontier", 0))
    if 0 < frontier < len(members):
        order = np.argsort(pool.ms[members], kind="stable")
        members = members[np.sort(order[:frontier])]
    return members


def parent_scores_ref(spec: PolicySpec, pool: Pool, members: np.ndarray,
                      dim: int) -> np.ndarray:
    """Softmax scores of the parent rule (NaN: no signature, under headroom)."""
    if spec.params.get("parent", "headroom") == "speed":
        ratio = pool.ms[0] / pool.ms[members]
        usable = (ratio > 0.0) & (ratio < np.inf)
        temperature = spec.params["parent_temperature"]
        return np.array([math.log(r) / temperature if ok else 0.0
                         for r, ok in zip(ratio, usable, strict=True)])
    h = pool.hw[members, dim]
    return np.where(h == h, (theta_sat(spec)[dim] - h) / spec.params["temperature"], np.nan)


def choose_parent_ref(spec: PolicySpec, state: PolicyState, pool: Pool, c: int, s: int,
                      rng: np.ndarray) -> tuple[int, float]:
    """The parent inside cluster c for strategy s under the spec's rule; (parent, its
    probability). `headroom` (default): softmax of (theta_sat - h[target(s)]) / temperature,
    members without a signature 0, the fastest when none has one; `fastest`: the fastest
    candidate; `speed`: softmax of log(T(k0) / T(k)) / parent_temperature."""
    members = parent_candidates_ref(spec, state, pool, c, s)
    if len(members) == 1:
        return int(members[0]), 1.0
    fastest = int(members[np.argmin(pool.ms[members])])
    if spec.params.get("parent", "headroom") == "fastest":
        return fastest, 1.0
    score = parent_scores_ref(spec, pool, members, int(state.target[s]))
    if np.isnan(score).all():
        return fastest, 1.0
    score = np.where(np.isnan(score), 0.0, score)
    top = score.max()
    weight = np.array([math.exp(v - top) for v in score])
    total = seqsum(weight)
    pick = first_hit(np.cumsum(weight), py_rand_uniform(rng) * total, len(members) - 1)
    return int(members[pick]), float(weight[pick] / total)


def select_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray):
    """Twin of `kernels.select`: (cluster, strategy, parent, propensity)."""
    if pool.n[0] == 0:
        return -1, -1, -1, math.nan
    if spec.kind == KIND_V1:
        from kbsim.policies.reference_v1 import select_v1_ref

        return select_v1_ref(spec, state, pool, rng)
    if not is_v2_family(spec.kind):
        from kbsim.policies._ref_flat import select_flat_ref

        return select_flat_ref(spec, state, pool, rng)
    _prepare_v2_ref(spec, state, pool, rng)
    c, s, p_arm = choose_arm_ref(spec, state, rng)
    if not (state.mask == 1).any():  # no applicable pair left
        return -1, -1, -1, math.nan
    parent, p_parent = choose_parent_ref(spec, state, pool, c, s, rng)
    return c, s, parent, p_arm * p_parent


def v2_reward_ref(parent_ms: float, child_ms: float, success: bool) -> float:
    """r = max(0, (T(parent) - T(child)) / T(parent)); failures give 0."""
    if not success or not parent_ms > 0.0 or math.isnan(child_ms):
        return 0.0
    return max(0.0, (parent_ms - child_ms) / parent_ms)


def update_ref(spec: PolicySpec, state: PolicyState, pool: Pool, cluster: int, strategy: int,
               parent: int, child_ms: float, success: bool) -> float:
    """Twin of `kernels.update`; returns the policy's reward."""
    parent_ms = float(pool.ms[parent])
    if spec.kind == KIND_V1:
        from kbsim.policies.reference_v1 import update_v1_ref

        reward = update_v1_ref(spec, state, pool, cluster, strategy, parent, child_ms, success)
    else:
        reward = v2_reward_ref(parent_ms, child_ms, success)
        if is_v2_family(spec.kind):
            arm = (cluster, strategy)
            state.cnt[arm] += 1.0
            state.mu[arm] += (reward - state.mu[arm]) / state.cnt[arm]
            state.isq[arm] = 1.0 / math.sqrt(state.cnt[arm])
            if spec.kind == KIND_THOMPSON:
                state.beta_a[arm] += reward
                state.beta_b[arm] += 1.0 - reward
        elif spec.kind == KIND_UCB_FLAT:
            arm = (parent, strategy)
            state.fcnt[arm] += 1.0
            state.fmu[arm] += (reward - state.fmu[arm]) / state.fcnt[arm]
    state.t[0] += 1
    return reward


def representatives_ref(spec: PolicySpec, state: PolicyState, pool: Pool) -> np.ndarray:
    """Twin of `kernels.representatives`."""
    if not is_v2_family(spec.kind):
        return np.empty(0, dtype=np.int64)
    reps = [r for c, r in enumerate(state.rep)
            if state.size[c] > 0 and r >= 0 and np.isnan(pool.hw[r]).all()]
    return np.array(reps, dtype=np.int64)


def show_signature_ref(spec: PolicySpec, state: PolicyState, pool: Pool, idx: int,
                       hw: np.ndarray) -> bool:
    """Twin of `kernels.show_signature`: write the signature; a changed one the policy had
    seen before makes a v2-family policy recompute its mask (no caches here)."""
    old = pool.hw[idx].copy()
    same = all(a == b or (np.isnan(a) and np.isnan(b)) for a, b in zip(old, hw, strict=True))
    if same:
        return False
    pool.hw[idx] = hw
    if is_v2_family(spec.kind) and not np.isnan(old).all():
        state.mask_dirty[0] = 1
    return True
