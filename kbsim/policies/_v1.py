"""Compiled KernelBand v1: three-term UCB with the logistic compatibility prior, incremental
k-means++ on the runtime vector. The math is documented in `kbsim.policies.reference`."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kbsim._jit import inner_njit
from kbsim.policies._kmeans import assign_nearest_t, kmeanspp_seed_t
from kbsim.policies._na import is_na
from kbsim.policies.spec import F_ALPHA, F_LR, I_K, I_SGD, I_WARM, I_WARMUP
from kbsim.rng import rand_int, rand_uniform

#: index into the 9-dim profile of the resource each hardware dim stands for:
#: SM -> sm_util_pct (2), DRAM -> dram_bw_pct (1), L2 -> l2_hit_rate_pct (0)
PROFILE_OF_HW = np.array([2, 1, 0], dtype=np.int64)
#: slope of the synthetic warm-start success curve (see reference.warm_start_ref)
WARM_SLOPE = 6.0


@inner_njit(_nrt=False)
def sigmoid(z) -> float:
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@njit(cache=True, _nrt=False)
def profile_features(prof9, k, out) -> bool:
    """Normalised 9-dim profile of kernel k plus a bias 1 into out[:10]; False if unknown.
    Percentages / 100, registers / 255, bank conflicts log1p(x) / 10."""
    for j in range(9):
        if not prof9[k, j] == prof9[k, j]:
            return False
    for j in range(9):
        out[j] = prof9[k, j] / 100.0
    out[5] = prof9[k, 5] / 255.0
    out[6] = math.log1p(max(prof9[k, 6], 0.0)) / 10.0
    out[9] = 1.0
    return True


@njit(cache=True, _nrt=False)
def psi(w, s, x) -> float:
    """psi(s, x) = sigmoid(w_s . x) (x includes the bias feature)."""
    z = 0.0
    for j in range(x.shape[0]):
        z += w[s, j] * x[j]
    return sigmoid(z)


@inner_njit(_nrt=False)
def sgd_step(w, s, x, y, lr) -> None:
    """One logistic-loss SGD step on (x, y) for strategy s: w_s -= lr (psi - y) x."""
    g = psi(w, s, x) - y
    for j in range(x.shape[0]):
        w[s, j] -= lr * g * x[j]


@inner_njit(_nrt=False)
def warm_start_v1(fparams, iparams, state, rng) -> None:
    """SGD over `warm` synthetic (strategy, profile, success) triples drawn from the rng."""
    S = state.target.shape[0]
    x = state.sc_x
    lr = fparams[F_LR]
    for _ in range(iparams[I_WARM]):
        s = rand_int(rng, S)
        for j in range(9):
            x[j] = rand_uniform(rng)
        x[9] = 1.0
        load = x[PROFILE_OF_HW[state.target[s]]]
        p = sigmoid(WARM_SLOPE * (0.5 - load))
        y = 1.0 if rand_uniform(rng) < p else 0.0
        sgd_step(state.w, s, x, y, lr)
    state.warmed[0] = 1


@inner_njit(_nrt=False)
def _v1_add(state, idx, c) -> None:
    state.assign[idx] = c
    state.members[c, state.size[c]] = idx
    state.size[c] += 1


@inner_njit(_nrt=False)
def _scaled_d2(state, i, c, count) -> float:
    d2 = 0.0
    for d in range(state.xrt.shape[1]):
        var = state.zstd[d] / count
        sd = math.sqrt(var) if var > 0.0 else 1.0
        diff = (state.xrt[i, d] - state.centroids[c, d]) / sd
        d2 += diff * diff
    return d2


@inner_njit(_nrt=False)
def prepare_v1(fparams, iparams, state, pool, rng) -> None:
    """Ingest new members: NaN runtime entries -> running mean; Welford running moments; once
    seeded, nearest centre (z-scaled by the running std) and an online centre update; the pool
    reaching K members triggers k-means++ seeding over all members."""
    n = pool.n[0]
    K = iparams[I_K]
    D = state.xrt.shape[1]
    for i in range(state.n_seen[0], n):
        count = i + 1.0
        for d in range(D):
            v = pool.rt6[i, d]
            if not v == v:
                v = state.zmean[d]
            state.xrt[i, d] = v
            delta = v - state.zmean[d]
            state.zmean[d] += delta / count
            state.zstd[d] += delta * (v - state.zmean[d])
        if state.clustered[0] == 1:
            best = 0
            best_d2 = np.inf
            for c in range(K):
                d2 = _scaled_d2(state, i, c, count)
                if d2 < best_d2:
                    best_d2 = d2
                    best = c
            state.cent_count[best] += 1.0
            for d in range(D):
                state.centroids[best, d] += (
                    state.xrt[i, d] - state.centroids[best, d]
                ) / state.cent_count[best]
            _v1_add(state, i, best)
        else:
            _v1_add(state, i, 0)
    state.n_seen[0] = n
    if state.clustered[0] == 0 and n >= K:
        _seed_v1(iparams, state, n, rng)


@inner_njit(_nrt=False)
def _seed_v1(iparams, state, n, rng) -> None:
    K = iparams[I_K]
    D = state.xrt.shape[1]
    zt = state.sc_zt
    sd = state.sc_x  # first D entries
    for d in range(D):
        var = state.zstd[d] / n
        sd[d] = math.sqrt(var) if var > 0.0 else 1.0
        for i in range(n):
            zt[d, i] = (state.xrt[i, d] - state.zmean[d]) / sd[d]
    kmeanspp_seed_t(zt, n, K, state.sc_cent, state.sc_f, state.sc_dist[0], rng)
    labels = state.sc_i
    for i in range(n):
        labels[i] = -1
    assign_nearest_t(zt, n, K, state.sc_cent, state.sc_dist, labels)
    state.size[:] = 0
    state.cent_count[:] = 0.0
    state.centroids[:, :] = 0.0
    for i in range(n):
        c = labels[i]
        _v1_add(state, i, c)
        state.cent_count[c] += 1.0
        for d in range(D):
            state.centroids[c, d] += state.xrt[i, d]
    for c in range(K):
        for d in range(D):
            if state.cent_count[c] > 0.0:
                state.centroids[c, d] /= state.cent_count[c]
            else:
                state.centroids[c, d] = state.sc_cent[c, d] * sd[d] + state.zmean[d]
    state.clustered[0] = 1


@inner_njit(_nrt=False)
def select_v1(fparams, iparams, state, pool, rng):
    """Warm start once; ingest; warm-up (round robin over strategies on the fastest kernel for
    warmup*|S| pulls); then argmax over (kernel, strategy) of
    mu[c(k), s] + sqrt(2 ln t / n[c(k), s]) + alpha * psi(s, phi9(k))."""
    if state.warmed[0] == 0:
        warm_start_v1(fparams, iparams, state, rng)
    prepare_v1(fparams, iparams, state, pool, rng)
    S = state.target.shape[0]
    t = state.t[0]
    any_na = state.na_n[0] > 0
    if t < iparams[I_WARMUP] * S:
        if any_na:
            return _warmup_na(state, pool, S, t)
        best = 0
        for k in range(1, pool.n[0]):
            if pool.ms[k] < pool.ms[best]:
                best = k
        return state.assign[best], t % S, best, 1.0
    log_t = math.log(max(t, 1))
    alpha = fparams[F_ALPHA]
    x = state.sc_x
    best_v = -np.inf
    bk = -1
    bs = -1
    for k in range(pool.n[0]):
        known = profile_features(pool.prof9, k, x)
        c = state.assign[k]
        for s in range(S):
            if any_na and is_na(state, k, s):
                continue
            prior = psi(state.w, s, x) if known else 0.5
            n_cs = state.cnt[c, s]
            bonus = math.sqrt(2.0 * log_t / n_cs) if n_cs > 0.0 else np.inf
            v = state.mu[c, s] + bonus + alpha * prior
            if v > best_v:
                best_v = v
                bk = k
                bs = s
    if bk < 0:  # every (kernel, strategy) pair is known not applicable
        return -1, -1, -1, np.nan
    return state.assign[bk], bs, bk, 1.0


@inner_njit(_nrt=False)
def _warmup_na(state, pool, S, t):
    """Warm-up with not-applicable pairs known: the fastest member with an applicable
    strategy, and the first applicable strategy from t mod S on, cyclically."""
    full = (1 << S) - 1
    best = -1
    for k in range(pool.n[0]):
        if state.na[k] != full and (best < 0 or pool.ms[k] < pool.ms[best]):
            best = k
    if best < 0:
        return -1, -1, -1, np.nan
    for j in range(S):
        s = (t + j) % S
        if not is_na(state, best, s):
            return state.assign[best], s, best, 1.0
    return -1, -1, -1, np.nan


@inner_njit(_nrt=False)
def v1_reward(parent_ms, child_ms, success) -> float:
    """r = 1 - T(child) / T(parent); failures (or unusable times) give -1."""
    if not success or not parent_ms > 0.0 or not child_ms == child_ms:
        return -1.0
    return 1.0 - child_ms / parent_ms


@inner_njit(_nrt=False)
def update_v1(fparams, iparams, state, pool, cluster, strategy, parent, child_ms, success,
              reward) -> None:
    """Cluster-strategy mean update; if the parent has a profile, push (profile, strategy,
    improved) into the ring buffer, one SGD step on it, then `sgd_steps` steps replayed from
    the buffer in cyclic order."""
    state.cnt[cluster, strategy] += 1.0
    state.mu[cluster, strategy] += (reward - state.mu[cluster, strategy]) / state.cnt[
        cluster, strategy
    ]
    x = state.sc_x
    if not profile_features(pool.prof9, parent, x):
        return
    y = 1.0 if (success and child_ms < pool.ms[parent]) else 0.0
    B = state.buf_y.shape[0]
    pos = state.buf_n[1]
    for j in range(9):
        state.buf_x[pos, j] = x[j]
    state.buf_s[pos] = strategy
    state.buf_y[pos] = y
    state.buf_n[1] = (pos + 1) % B
    if state.buf_n[0] < B:
        state.buf_n[0] += 1
    lr = fparams[F_LR]
    sgd_step(state.w, strategy, x, y, lr)
    for _ in range(iparams[I_SGD]):
        j = state.buf_n[2] % state.buf_n[0]
        for d in range(9):
            x[d] = state.buf_x[j, d]
        x[9] = 1.0
        sgd_step(state.w, state.buf_s[j], x, state.buf_y[j], lr)
        state.buf_n[2] = (j + 1) % state.buf_n[0]

