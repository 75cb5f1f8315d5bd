r"""Reference KernelBand v1 (first arXiv version), twin of `_v1`.

Arms are (kernel k, strategy s); statistics are shared per (cluster c(k), strategy s):

    value(k, s) = mu[c(k), s] + sqrt(2 ln t / n[c(k), s]) + alpha * psi(s, phi9(k))

with t the updates so far (unpulled cluster-strategy pairs have an infinite bonus; ties: lowest
kernel, then strategy) after a warm-up of `warmup * |S|` pulls that cycle through the strategies
on the fastest kernel.

- psi(s, x) = sigmoid(w_s . [x, 1]): a per-strategy online logistic model of "strategy s
  improves a kernel with profile x" (NOTE (D32): "succeeds" read as correct *and* faster than
  its parent). x is the 9-dim profile
  normalised (percentages / 100, registers / 255, bank conflicts log1p / 10); unknown profile:
  psi = 0.5 and no training sample.
- Warm start (once, at the first select, from the episode's RNG): `warm` synthetic triples
  (s uniform, x ~ U[0,1]^9, success ~ Bernoulli(sigmoid(6 (0.5 - x[load(s)])))), where load(s)
  is the profile entry of the resource strategy s targets (SM -> sm_util, DRAM -> dram_bw,
  L2 -> l2_hit_rate): strategies succeed more often when their resource has headroom. One
  logistic SGD step per triple.
- Online training: each update with a profiled parent pushes (x, s, improved) into a ring buffer
  of size B, takes one SGD step on it, then `sgd_steps` steps on buffer entries in cyclic order
  (NOTE (D32): deterministic replay, so `update` needs no RNG).
- Clustering on the 6-dim runtime vector (NaN entries replaced by the running mean), distances
  scaled by the running (Welford) std (NOTE (D33): the raw dims differ by orders of
  magnitude): incremental k-means++ -- once the pool reaches K members, k-means++ picks K
  seeds, every member joins its nearest seed and centres become member means; every later
  kernel joins its nearest centre, which moves by (x - centre) / count.
- reward r = 1 - T(child) / T(parent); failures -1 (and never enter the pool).
- not applicable (DESIGN.md): pairs (k, s) known not applicable are skipped by the argmax; the
  warm-up takes the fastest member with an applicable strategy and the first applicable
  strategy from t mod |S| on, cyclically; none left: (-1, -1, -1, NaN).
"""

from __future__ import annotations

import math

import numpy as np

from kbsim.policies._v1 import PROFILE_OF_HW, WARM_SLOPE
from kbsim.policies.reference import kmeanspp_ref, nearest_ref, seqsum
from kbsim.policies.spec import PolicySpec
from kbsim.policies.state import PolicyState, Pool
from kbsim.rng import py_rand_int, py_rand_uniform


def sigmoid_ref(z: float) -> float:
    """Numerically stable logistic function."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def profile_features_ref(prof9: np.ndarray) -> np.ndarray | None:
    """Normalised profile plus bias (10 values), or None when any entry is unknown."""
    if np.isnan(prof9).any():
        return None
    x = np.append(prof9 / 100.0, 1.0)
    x[5] = prof9[5] / 255.0
    x[6] = math.log1p(max(prof9[6], 0.0)) / 10.0
    return x


def psi_ref(w: np.ndarray, s: int, x: np.ndarray) -> float:
    """psi(s, x) = sigmoid(w_s . x)."""
    return sigmoid_ref(seqsum(w[s] * x))


def _psi_all(w: np.ndarray, prof9: np.ndarray) -> np.ndarray:
    """psi(s, phi9(k)) for every kernel k and strategy s (0.5 where the profile is unknown);
    the same sequential dot products as `psi_ref`, batched."""
    known = ~np.isnan(prof9).any(axis=1)
    x = np.zeros((len(prof9), 10))
    x[:, :9] = prof9 / 100.0
    x[:, 5] = prof9[:, 5] / 255.0
    x[:, 6] = [math.log1p(max(v, 0.0)) / 10.0 if ok else 0.0
               for v, ok in zip(prof9[:, 6], known, strict=True)]
    x[:, 9] = 1.0
    logits = np.cumsum(x[:, None, :] * w[None, :, :], axis=2)[:, :, -1]
    prior = np.array([[sigmoid_ref(z) for z in row] for row in logits]).reshape(logits.shape)
    return np.where(known[:, None], prior, 0.5)


def sgd_step_ref(w: np.ndarray, s: int, x: np.ndarray, y: float, lr: float) -> None:
    """Logistic loss gradient step: w_s -= lr * (psi(s, x) - y) * x."""
    g = psi_ref(w, s, x) - y
    w[s] -= lr * g * x


def warm_start_ref(spec: PolicySpec, state: PolicyState, rng: np.ndarray) -> None:
    """Train psi on `warm` synthetic (strategy, profile, success) triples."""
    n_strategies = len(state.target)
    for _ in range(spec.params["warm"]):
        s = py_rand_int(rng, n_strategies)
        x = np.array([py_rand_uniform(rng) for _ in range(9)] + [1.0])
        load = x[PROFILE_OF_HW[state.target[s]]]
        y = 1.0 if py_rand_uniform(rng) < sigmoid_ref(WARM_SLOPE * (0.5 - load)) else 0.0
        sgd_step_ref(state.w, s, x, y, spec.params["lr"])
    state.warmed[0] = 1


def _running_sd(state: PolicyState, count: float) -> np.ndarray:
    var = state.zstd / count  # zstd holds the running sum of squared deviations (Welford M2)
    return np.where(var > 0.0, np.sqrt(np.maximum(var, 0.0)), 1.0)


def _join(state: PolicyState, i: int, c: int) -> None:
    state.assign[i] = c
    state.members[c, state.size[c]] = i
    state.size[c] += 1


def prepare_v1_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray) -> None:
    """Ingest members added since the last call; seed k-means++ once the pool has K members."""
    n = int(pool.n[0])
    k = spec.params["K"]
    for i in range(int(state.n_seen[0]), n):
        count = i + 1.0
        x = np.where(pool.rt6[i] == pool.rt6[i], pool.rt6[i], state.zmean)
        state.xrt[i] = x
        delta = x - state.zmean
        state.zmean[:] += delta / count
        state.zstd[:] += delta * (x - state.zmean)
        if state.clustered[0]:
            diff = (x - state.centroids) / _running_sd(state, count)
            c = int(np.argmin(np.cumsum(diff * diff, axis=1)[:, -1]))
            state.cent_count[c] += 1.0
            state.centroids[c] += (x - state.centroids[c]) / state.cent_count[c]
            _join(state, i, c)
        else:
            _join(state, i, 0)
    state.n_seen[0] = n
    if not state.clustered[0] and n >= k:
        sd = _running_sd(state, float(n))
        z = (state.xrt[:n] - state.zmean) / sd
        seeds = kmeanspp_ref(z, k, rng)
        labels = nearest_ref(z, seeds)
        state.size[:] = 0
        for i in range(n):
            _join(state, i, int(labels[i]))
        for c in range(k):
            rows = state.xrt[:n][labels == c]
            state.cent_count[c] = float(len(rows))
            if len(rows):
                state.centroids[c] = np.cumsum(rows, axis=0)[-1] / len(rows)
            else:
                state.centroids[c] = seeds[c] * sd + state.zmean
        state.clustered[0] = 1


def select_v1_ref(spec: PolicySpec, state: PolicyState, pool: Pool, rng: np.ndarray):
    """(cluster, strategy, parent, propensity 1: the rule is deterministic given the state)."""
    if not state.warmed[0]:
        warm_start_ref(spec, state, rng)
    prepare_v1_ref(spec, state, pool, rng)
    n = int(pool.n[0])
    n_strategies = len(state.target)
    t = int(state.t[0])
    na = np.array([[(int(state.na[k]) >> s) & 1 == 1 for s in range(n_strategies)]
                   for k in range(n)]).reshape(n, n_strategies)
    if t < spec.params["warmup"] * n_strategies:
        usable = ~na.all(axis=1)
        if not usable.any():
            return -1, -1, -1, math.nan
        best = int(np.argmin(np.where(usable, pool.ms[:n], np.inf)))
        cycle = [(t + j) % n_strategies for j in range(n_strategies)]
        s = next(s for s in cycle if not na[best, s])
        return int(state.assign[best]), s, best, 1.0
    log_t = math.log(max(t, 1))
    pulled = state.cnt > 0.0
    bonus = np.full(state.cnt.shape, np.inf)
    bonus[pulled] = np.sqrt(2.0 * log_t / state.cnt[pulled])
    prior = _psi_all(state.w, pool.prof9[:n])  # (kernels, strategies)
    clusters = state.assign[:n]
    value = state.mu[clusters] + bonus[clusters] + spec.params["alpha"] * prior
    value = np.where(na, -np.inf, value)
    if na.all():
        return -1, -1, -1, math.nan
    k, s = np.unravel_index(np.argmax(value), value.shape)
    return int(state.assign[k]), int(s), int(k), 1.0


def v1_reward_ref(parent_ms: float, child_ms: float, success: bool) -> float:
    """r = 1 - T(child) / T(parent); failures give -1."""
    if not success or not parent_ms > 0.0 or math.isnan(child_ms):
        return -1.0
    return 1.0 - child_ms / parent_ms


def update_v1_ref(spec: PolicySpec, state: PolicyState, pool: Pool, cluster: int,
                  strategy: int, parent: int, child_ms: float, success: bool) -> float:
    """Cluster-strategy mean update and online training of psi; returns the reward."""
    parent_ms = float(pool.ms[parent])
    reward = v1_reward_ref(parent_ms, child_ms, success)
    arm = (cluster, strategy)
    state.cnt[arm] += 1.0
    state.mu[arm] += (reward - state.mu[arm]) / state.cnt[arm]
    x = profile_features_ref(pool.prof9[parent])
    if x is None:
        return reward
    y = 1.0 if (success and child_ms < parent_ms) else 0.0
    size = len(state.buf_y)
    entries, pos, cursor = (int(v) for v in state.buf_n)
    state.buf_x[pos], state.buf_s[pos], state.buf_y[pos] = x[:9], strategy, y
    entries = min(entries + 1, size)
    lr = spec.params["lr"]
    sgd_step_ref(state.w, strategy, x, y, lr)
    for _ in range(spec.params["sgd_steps"]):
        j = cursor % entries
        sgd_step_ref(state.w, int(state.buf_s[j]), np.append(state.buf_x[j], 1.0),
                     float(state.buf_y[j]), lr)
        cursor = (j + 1) % entries
    state.buf_n[:] = (entries, (pos + 1) % size, cursor)
    return reward
