"""Synthetic environment: kernels as points in a feature space with planted clusters.

A kernel is a point x in [0, 1]^dim (dim <= 5) with a planted cluster label j (its pool key);
its behaviour vector is phi[d] = x[d mod dim].
Instance (per task, drawn from ``seed``): K cluster centres c_j, a hardware signature h_j per
cluster (SM, DRAM, L2 % of peak) and a base improvement b[j, s] per cluster x strategy; strategies
whose target resource is saturated in cluster j (h_j[target(s)] >= theta) get a small b.

Mean improvement of strategy s on kernel (x, j) (planted Lipschitz constant L within a cluster,
in the Euclidean norm; clusters differ by their planted b, the paper's cluster assumption):

    m(x, j, s) = max(0, b[j, s] - L * ||x - c_j||)

Each task has a planted floor (roofline) runtime F = T_k0 / roofline (T_k0 = 1 ms; roofline=0:
no floor, F = 0). An attempt fails with probability ``fail``; otherwise the improvement is
g = clip(m(x, s) + noise * Z, gmin, gmax), Z ~ N(0, 1), applied to the parent's headroom above
the floor: the child runs in T_child = F + (T_parent - F) * (1 - g), so runtimes never fall
below F (best speedup <= roofline) and gains shrink as a kernel nears it. The v2 reward is
max(0, (T_parent - T_child) / T_parent) = h * max(0, g) with h = (T_parent - F) / T_parent the
parent's relative headroom. Its exact mean, known in closed form, makes pseudo-regret exact:

    mu(x, s, T) = h(T) * (1 - fail) * (G(m) - G(m - gmax)),
    G(mu) = mu * Phi(mu / noise) + noise * pdf(mu / noise)

(E[clip(X, 0, a)] = E[max(0, X)] - E[max(0, X - a)] for X ~ N(m, noise^2)). Arm means thus
depend on the member's runtime, fixed once it joins the pool. Without a floor (h = 1) the gaps
are stationary but a greedy policy compounds improvements without limit (speedups of 1e48 at
T=1000). The child's point is
x_parent + step * N(0, I) in the parent's cluster, or, with probability ``jump``, a fresh point
c_j + spread * N(0, I) of a uniformly drawn cluster j. A kernel's hardware signature is its
cluster's.

**Bernoulli arms** (``means=p1/p2/...``, the base ``bernoulli``): the classic K-armed
Bernoulli bandit, K = len(means) <= 6, as strategies 0..K-1 of one fixed kernel k0 (pool=1,
K=1, L=0, noise=0, jump=0, fail=0, roofline=0): an attempt of strategy s succeeds with
probability p_s and then the child runs in (1 - gmax) of the parent's time (gmax=0.5: reward
1/2), else it fails (reward 0); strategies past K are not applicable (they are no arms). The
rewards are gmax * Bernoulli(p_s), in [0, 1], and the exact means gmax * p_s (times 1 - fail
and the headroom h as above), so UCB1's finite-time bound (Auer et al. 2002, Theorem 1) applies
with gaps gmax * (p* - p_s): an outside check of the regret machinery (docs/benchmarks.md,
*Regret cross-check against UCB1*). A gain of 1 (reward 1) would need a child of runtime 0.

Spec strings (``--synthetic SPEC``) are a comma list of ``key=value``, optionally starting with a
named base: ``default``, ``fixed-pool`` (pool=100, roofline=0), ``minimax`` (gap=minimax, L=0,
jump=0, roofline=0), ``fixed-gap`` (gap=0.1, L=0, jump=0, roofline=0), ``bernoulli`` (means
0.9/0.8/0.7/0.6/0.5/0.4 and the settings above). The presets disable the floor because their
guarantees (the regret-slope and clusters-versus-pool experiments, UCB1's bound) need
stationary per-arm gaps; a fixed pool cannot compound anyway. Add ``roofline=R`` to them to get a
floor. Keys (defaults in SyntheticSpec):

- roofline: the floor's speedup ceiling over k0 (default 8; 0 = no floor; else > 1);
- na: the share of planted not-applicable pairs (default 0): each (cluster, strategy) of a task
  is not applicable with probability na (drawn at build time from (seed, task), apart from the
  instance's other draws); an attempt of strategy s on a member of that cluster answers
  ``not_applicable`` (no step, no tokens, no env draw). Stored as NaN in the planted base b, so
  such arms have no mean (they are not actions) and are left out of the best arm;

- K clusters, dim, L, noise, fail, spread, step, jump, gmax, theta (saturation used for planting),
  tokens (per attempt), usd_per_mtok, tasks (instances, task ids ``syn-000``...), seed;
- n0: initial pool size (k0 plus n0 - 1 members spread over the clusters; the pool then grows);
- means=p1/p2/...: Bernoulli arms (above);
- pool=n: a *fixed* pool of n kernels in K clusters (children are scored but never join), for the
  clusters-versus-pool-size experiment;
- gap=g: controlled gaps, b[0, 0] = mu_best and every other b[j, s] = mu_best - g (all clusters
  unsaturated); gap=minimax: g = sqrt(K * S * ln(horizon) / horizon) (the minimax regime, with
  K * S arms), capped at mu_best. With L=0 every kernel of cluster j has exactly b[j, s], so the
  arms (cluster, strategy) have exactly these gaps (before failures and clipping).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np
from numba import njit

from kbsim.envs.data import (
    F_FAIL,
    F_FLOOR,
    F_GMAX,
    F_GMIN,
    F_JUMP,
    F_L,
    F_NOISE,
    F_SPREAD,
    F_STEP,
    F_USD_PER_TOKEN,
    I_BERNOULLI,
    I_DIM,
    I_GROW,
    I_K,
    I_MAX_TASK_KERNELS,
    I_TOKENS,
    SYNTHETIC,
    Env,
    empty_env,
    make_env,
)
from kbsim.rng import rand_int, rand_normal, rand_uniform
from kbsim.strategies import N_STRATEGIES, TARGET


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of a synthetic instance (see the module docstring)."""

    K: int = 3
    dim: int = 5
    n0: int = 1
    pool: int = 0
    L: float = 1.0
    noise: float = 0.1
    fail: float = 0.2
    spread: float = 0.05
    step: float = 0.03
    jump: float = 0.3
    gmax: float = 0.9
    theta: float = 75.0
    gap: float = -1.0  # < 0: no controlled gap
    horizon: int = 40  # for gap=minimax
    mu_best: float = 0.3
    roofline: float = 8.0  # speedup ceiling over k0 (floor runtime = T_k0 / roofline); 0: none
    tokens: int = 3000
    usd_per_mtok: float = 10.0
    tasks: int = 1
    seed: int = 0
    na: float = 0.0
    means: str = ""  # Bernoulli arms: success probabilities "p1/p2/..." ("" = no)
    text: str = field(default="default", compare=False)

    def __post_init__(self) -> None:
        checks = [
            (1 <= self.K <= 64, "K must be in 1..64"),
            (1 <= self.dim <= 5, "dim must be in 1..5"),
            (self.n0 >= 1, "n0 must be >= 1"),
            (self.pool >= 0, "pool must be >= 0 (0 = a growing pool)"),
            (self.L >= 0, "L must be >= 0"),
            (self.noise >= 0, "noise must be >= 0"),
            (0 <= self.fail < 1, "fail must be in [0, 1)"),
            (self.spread >= 0 and self.step >= 0, "spread and step must be >= 0"),
            (0 <= self.jump <= 1, "jump must be in [0, 1]"),
            (0 < self.gmax < 1, "gmax must be in (0, 1)"),
            (self.horizon >= 2, "horizon must be >= 2"),
            (0 < self.mu_best < 1, "mu_best must be in (0, 1)"),
            (self.tokens >= 0 and self.usd_per_mtok >= 0, "tokens and usd_per_mtok must be >= 0"),
            (self.tasks >= 1, "tasks must be >= 1"),
            (0 <= self.na <= 1, "na must be in [0, 1]"),
            (self.roofline == 0 or self.roofline > 1, "roofline must be 0 (no floor) or > 1"),
        ]
        if self.means:
            probs = self.arm_probabilities()
            checks += [
                (2 <= len(probs) <= N_STRATEGIES,
                 f"means needs 2 to {N_STRATEGIES} success probabilities separated by '/'"),
                (all(0.0 <= p <= 1.0 for p in probs), "means must be probabilities in [0, 1]"),
                (self.pool == 1 and self.K == 1,
                 "Bernoulli arms (means) need pool=1 and K=1: the arms are strategies of k0"),
            ]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"bad synthetic spec {self.text!r}: {message}.")

    def arm_probabilities(self) -> list[float]:
        """The Bernoulli arms' success probabilities (``means``); NaN for a bad entry."""
        out = []
        for item in self.means.split("/"):
            try:
                out.append(float(item))
            except ValueError:
                out.append(math.nan)
        return out

    @property
    def n_init(self) -> int:
        return self.pool if self.pool > 0 else self.n0

    @property
    def floor_ms(self) -> float:
        """The planted floor runtime in ms (k0 runs in 1 ms); 0 without a floor."""
        return 1.0 / self.roofline if self.roofline > 0 else 0.0

    def gap_value(self) -> float:
        """The planted gap between b[0, 0] and every other base (negative: no gap planted)."""
        return self.gap


_BASES: dict[str, dict[str, str]] = {
    "default": {},
    "fixed-pool": {"pool": "100", "roofline": "0"},
    "minimax": {"gap": "minimax", "L": "0", "jump": "0", "roofline": "0"},
    "fixed-gap": {"gap": "0.1", "L": "0", "jump": "0", "roofline": "0"},
    "bernoulli": {"means": "0.9/0.8/0.7/0.6/0.5/0.4", "pool": "1", "K": "1", "L": "0",
                  "noise": "0", "jump": "0", "fail": "0", "roofline": "0", "gmax": "0.5"},
}


def parse_synthetic(text: str) -> SyntheticSpec:
    """Parse a spec like ``default``, ``minimax,horizon=200`` or ``K=3,n0=1,L=1.0,noise=0.1``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    values: dict[str, str] = {}
    if items and "=" not in items[0]:
        base = items.pop(0)
        if base not in _BASES:
            raise ValueError(
                f"unknown synthetic base {base!r}; expected one of {', '.join(_BASES)} "
                "or key=value pairs."
            )
        values.update(_BASES[base])
    types = {f.name: f.type for f in fields(SyntheticSpec) if f.name != "text"}
    for item in items:
        if "=" not in item:
            raise ValueError(f"bad synthetic spec item {item!r}: expected key=value.")
        key, raw = (s.strip() for s in item.split("=", 1))
        if key not in types:
            raise ValueError(
                f"unknown synthetic parameter {key!r}; expected one of {', '.join(types)}."
            )
        values[key] = raw
    parsed: dict[str, object] = {}
    for key, raw in values.items():
        if (key == "gap" and raw == "minimax") or types[key] == "str":
            parsed[key] = raw
            continue
        try:
            parsed[key] = int(raw) if types[key] == "int" else float(raw)
        except ValueError:
            raise ValueError(
                f"bad value {raw!r} for synthetic parameter {key!r}: expected a {types[key]}."
            ) from None
    gap = parsed.pop("gap", -1.0)
    spec = SyntheticSpec(text=text, **parsed)  # type: ignore[arg-type]
    if gap == "minimax":
        arms = spec.K * N_STRATEGIES
        gap = min(spec.mu_best, math.sqrt(arms * math.log(spec.horizon) / spec.horizon))
    return replace(spec, gap=float(gap))


def _instance(spec: SyntheticSpec, task: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centres (K, dim), base (K, S), hw (K, 3)) of one task, from (seed, task) only."""
    gen = np.random.default_rng(np.random.SeedSequence([spec.seed, task]))
    centres = gen.uniform(0.0, 1.0, size=(spec.K, spec.dim))
    if spec.means:  # Bernoulli arms: b holds success probabilities, no arm past them
        hw = np.full((spec.K, 3), 50.0)
        base = np.full((spec.K, N_STRATEGIES), np.nan)
        probs = spec.arm_probabilities()
        base[:, : len(probs)] = probs
        return centres, base, hw
    if spec.gap >= 0:
        hw = np.full((spec.K, 3), 50.0)
        base = np.full((spec.K, N_STRATEGIES), max(0.0, spec.mu_best - spec.gap))
        base[0, 0] = spec.mu_best
        return centres, base, hw
    hw = gen.uniform(20.0, 95.0, size=(spec.K, 3))
    base = gen.uniform(0.05, 0.3, size=(spec.K, N_STRATEGIES))
    saturated = hw[:, TARGET] >= spec.theta  # (K, S)
    base[saturated] = gen.uniform(0.0, 0.03, size=int(saturated.sum()))
    return centres, base, hw


def build_synthetic(spec: SyntheticSpec | str) -> Env:
    """Compile a synthetic spec (string or parsed) into an Env of ``spec.tasks`` instances."""
    if isinstance(spec, str):
        spec = parse_synthetic(spec)
    n_tasks, n_init = spec.tasks, spec.n_init
    fields_ = empty_env(n_tasks)
    centres = np.zeros((n_tasks, spec.K, spec.dim))
    base = np.zeros((n_tasks, spec.K, N_STRATEGIES))
    hw = np.zeros((n_tasks, spec.K, 3))
    for t in range(n_tasks):
        centres[t], base[t], hw[t] = _instance(spec, t)
        if spec.na > 0:  # planted not-applicable pairs, from their own stream
            gen = np.random.default_rng(np.random.SeedSequence([spec.seed, t, 2]))
            base[t][gen.random((spec.K, N_STRATEGIES)) < spec.na] = np.nan
    fields_.update(syn_centers=centres, syn_base=base, syn_hw=hw)
    fields_["iparams"][[I_DIM, I_K, I_GROW, I_TOKENS, I_MAX_TASK_KERNELS, I_BERNOULLI]] = [
        spec.dim,
        spec.K,
        0 if spec.pool > 0 else 1,
        spec.tokens,
        n_init,
        1 if spec.means else 0,
    ]
    fp = fields_["fparams"]
    fp[F_L], fp[F_NOISE], fp[F_FAIL], fp[F_STEP] = spec.L, spec.noise, spec.fail, spec.step
    fp[F_JUMP], fp[F_GMAX], fp[F_GMIN], fp[F_SPREAD] = spec.jump, spec.gmax, -1.0, spec.spread
    fp[F_USD_PER_TOKEN] = spec.usd_per_mtok / 1e6
    fp[F_FLOOR] = spec.floor_ms
    # initial members: k0 first, then member i in cluster i mod K, near its centre
    phi = np.zeros((n_tasks * n_init, 5))
    for t in range(n_tasks):
        gen = np.random.default_rng(np.random.SeedSequence([spec.seed, t, 1]))
        for i in range(n_init):
            x = centres[t, i % spec.K] + spec.spread * gen.standard_normal(spec.dim)
            phi[t * n_init + i] = x[np.arange(5) % spec.dim]
    fields_["k_phi"] = phi
    fields_["k_ms"] = np.ones(n_tasks * n_init)
    fields_["task_kstart"] = np.arange(n_tasks + 1, dtype=np.int64) * n_init
    fields_["task_k0"] = np.arange(n_tasks, dtype=np.int64) * n_init
    env = make_env(fields_)
    return Env(
        name="synthetic",
        kind=SYNTHETIC,
        data=env,
        task_ids=tuple(f"syn-{t:03d}" for t in range(n_tasks)),
        n_init=(n_init,) * n_tasks,
        grows=spec.pool == 0,
        description=spec.text,
    )


# ------------------------------------------------------------------------------ compiled part


@njit(cache=True)
def _std_normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@njit(cache=True)
def _pos_part_mean(mu: float, sd: float) -> float:
    """E[max(0, X)] for X ~ N(mu, sd^2)."""
    if sd <= 0.0:
        return max(mu, 0.0)
    z = mu / sd
    return mu * _std_normal_cdf(z) + sd * math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


@njit(cache=True)
def clip_normal_mean(mu: float, sd: float, hi: float) -> float:
    """E[clip(X, 0, hi)] for X ~ N(mu, sd^2)."""
    return _pos_part_mean(mu, sd) - _pos_part_mean(mu - hi, sd)


@njit(cache=True)
def _improvement(centers, base, lipschitz, dim, task, label, phi, s) -> float:
    d2 = 0.0
    for d in range(dim):
        diff = phi[d] - centers[task, label, d]
        d2 += diff * diff
    return max(0.0, base[task, label, s] - lipschitz * math.sqrt(d2))


@njit(cache=True)
def syn_improvement(env, task: int, label: int, phi: np.ndarray, s: int) -> float:
    """m(x, j, s) = max(0, b[j, s] - L ||x - c_j||)."""
    return _improvement(env.syn_centers, env.syn_base, env.fparams[F_L], env.iparams[I_DIM],
                        task, label, phi, s)


@njit(cache=True)
def headroom(floor_ms: float, ms: float) -> float:
    """h = (ms - floor) / ms: the share of a kernel's runtime above the floor (1 with no floor)."""
    if floor_ms <= 0.0:
        return 1.0
    return max(0.0, (ms - floor_ms) / ms)


@njit(cache=True)
def syn_arm_mean(env, task: int, label: int, phi: np.ndarray, s: int, ms: float = 1.0) -> float:
    """Exact mean v2 reward of strategy s on the kernel (phi, cluster label) running in ms."""
    fp = env.fparams
    h = headroom(fp[F_FLOOR], ms)
    if env.iparams[I_BERNOULLI] == 1:
        return h * (1.0 - fp[F_FAIL]) * env.syn_base[task, label, s] * fp[F_GMAX]
    m = syn_improvement(env, task, label, phi, s)
    return h * (1.0 - fp[F_FAIL]) * clip_normal_mean(m, fp[F_NOISE], fp[F_GMAX])


# The *_arrays kernels take only the arrays they read: every array crossing a compiled call
# boundary costs a reference-count increment and decrement, so the engine's per-step path
# passes a few arrays rather than the whole EnvData (see kbsim.replay.engine).


@njit(cache=True)
def syn_arm_means_arrays(centers, base, fp, ip, task, label, phi, ms, out) -> None:
    """out[s] = exact mean v2 reward of every strategy s on the kernel (phi, label) running in
    ms."""
    dim = ip[I_DIM]
    scale = headroom(fp[F_FLOOR], ms) * (1.0 - fp[F_FAIL])
    if ip[I_BERNOULLI] == 1:  # success probability times the gain
        for s in range(out.shape[0]):
            out[s] = scale * base[task, label, s] * fp[F_GMAX]
        return
    d2 = 0.0
    for d in range(dim):
        diff = phi[d] - centers[task, label, d]
        d2 += diff * diff
    penalty = fp[F_L] * math.sqrt(d2)  # the distance is the same for every strategy
    for s in range(out.shape[0]):
        m = max(0.0, base[task, label, s] - penalty)  # = _improvement(...), computed once
        out[s] = scale * clip_normal_mean(m, fp[F_NOISE], fp[F_GMAX])


@njit(cache=True)
def syn_arm_means(
    env, task: int, label: int, phi: np.ndarray, ms: float, out: np.ndarray
) -> None:
    syn_arm_means_arrays(env.syn_centers, env.syn_base, env.fparams, env.iparams, task, label,
                         phi, ms, out)


@njit(cache=True)
def syn_hw(env, task: int, label: int, out_hw: np.ndarray) -> None:
    for d in range(3):
        out_hw[d] = env.syn_hw[task, label, d]


@njit(cache=True)
def syn_features_arrays(hw_table, ip, task, label, phi, ms, out_prof9, out_rt6) -> None:
    """v1's 9-dim profile and 6-dim runtime vector of a synthetic kernel (plain functions of x)."""
    dim = ip[I_DIM]
    sm, dram, l2 = hw_table[task, label, 0], hw_table[task, label, 1], hw_table[task, label, 2]
    out_prof9[0] = 100.0 - 0.5 * l2
    out_prof9[1] = dram
    out_prof9[2] = sm
    out_prof9[3] = 90.0
    out_prof9[4] = 50.0 + 40.0 * phi[0]
    out_prof9[5] = 32.0 + 64.0 * phi[1 % dim]
    out_prof9[6] = 0.0
    out_prof9[7] = 100.0 - 0.3 * dram
    out_prof9[8] = 0.0
    out_rt6[0] = math.log(ms)
    for d in range(1, 6):
        out_rt6[d] = phi[(d - 1) % dim]


@njit(cache=True)
def syn_features(
    env, task: int, label: int, phi: np.ndarray, ms: float, out_prof9: np.ndarray,
    out_rt6: np.ndarray,
) -> None:
    syn_features_arrays(env.syn_hw, env.iparams, task, label, phi, ms, out_prof9, out_rt6)


@njit(cache=True, inline="always")
def syn_not_applicable(base, task, label, s) -> bool:
    """Whether strategy s is a planted not-applicable pair for members of cluster `label`."""
    b = base[task, label, s]
    return b != b


@njit(cache=True)
def syn_step_arrays(centers, base, fp, ip, task, label, parent_phi, parent_ms, s, rng, out_phi):
    """One attempt: (success, child_ms, child label); writes the child's phi into out_phi.

    Draws, in order: one uniform (failure), one normal (noise), one uniform (jump) and, for a
    jump, one integer (cluster), then dim normals (position). Bernoulli arms: one uniform
    (failure), one uniform (success with probability b[j, s]); the child keeps the parent's
    point.
    """
    dim = ip[I_DIM]
    if rand_uniform(rng) < fp[F_FAIL]:
        return False, np.nan, -1
    if ip[I_BERNOULLI] == 1:
        if not rand_uniform(rng) < base[task, label, s]:
            return False, np.nan, -1
        floor_ms = fp[F_FLOOR]
        for d in range(5):
            out_phi[d] = parent_phi[d]
        return True, floor_ms + (parent_ms - floor_ms) * (1.0 - fp[F_GMAX]), label
    g = _improvement(centers, base, fp[F_L], dim, task, label, parent_phi, s)
    g = min(max(g + fp[F_NOISE] * rand_normal(rng), fp[F_GMIN]), fp[F_GMAX])
    floor_ms = fp[F_FLOOR]
    child_ms = floor_ms + (parent_ms - floor_ms) * (1.0 - g)
    child_label = label
    if rand_uniform(rng) < fp[F_JUMP]:
        j = rand_int(rng, ip[I_K])
        child_label = j
        for d in range(dim):
            out_phi[d] = centers[task, j, d] + fp[F_SPREAD] * rand_normal(rng)
    else:
        for d in range(dim):
            out_phi[d] = parent_phi[d] + fp[F_STEP] * rand_normal(rng)
    for d in range(dim, 5):
        out_phi[d] = out_phi[d % dim]
    return True, child_ms, child_label


@njit(cache=True)
def syn_step(env, task, label, parent_phi, parent_ms, s, rng, out_phi):
    """`syn_step_arrays` on an EnvData."""
    return syn_step_arrays(env.syn_centers, env.syn_base, env.fparams, env.iparams, task, label,
                           parent_phi, parent_ms, s, rng, out_phi)
