"""The compiled form of every replay environment: one NamedTuple of plain arrays.

All three environment kinds (synthetic, tape, fitted) compile to the same `EnvData` type, so the
replay engine is one numba function whatever the environment; `kind` (an int passed beside it)
selects the branch. Arrays an environment does not use are empty. Tasks are packed: the recorded
(or initial) kernels of task ``t`` are rows ``task_kstart[t]:task_kstart[t + 1]`` of the ``k_*``
arrays, and the outcomes of kernel ``k`` under strategy ``s`` are rows
``tape_start[k * S + s]:tape_start[k * S + s + 1]`` of the ``o_*`` arrays, in recorded order.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kbsim.strategies import N_STRATEGIES, PHI_DIMS, PROFILE_DIMS, RUNTIME_DIMS

SYNTHETIC, TAPE, FITTED = 0, 1, 2
#: an environment's answer to an attempt: 1 a correct child, 0 a failure, -1 truncated (tape,
#: ``stop``), NA_STATUS the strategy is not applicable to that parent (no step is spent)
NA_STATUS = 2
ENV_KINDS: dict[str, int] = {"synthetic": SYNTHETIC, "tape": TAPE, "fitted": FITTED}

#: what to do when a tape runs out (tape env)
ON_EXHAUST: dict[str, int] = {"resample": 0, "nearest": 1, "stop": 2}
RESAMPLE, NEAREST, STOP = 0, 1, 2

#: when a replayed v2 sees a representative's Nsight Compute signature (`kbsim.envs.reveal`):
#: at once when first asked (before issue 15), at the step the recorded run showed it, after a
#: delay drawn from the recorded delays, or after a fixed lag; before that its roofline one
REVEAL_MODES: dict[str, int] = {"at-once": 0, "recorded": 1, "delays": 2, "lag": 3}
REVEAL_AT_ONCE, REVEAL_RECORDED, REVEAL_DELAYS, REVEAL_LAG = 0, 1, 2, 3
#: `k_shown` of a kernel whose Nsight Compute signature the recorded run never showed
NEVER_SHOWN = 1 << 62

# indices into EnvData.iparams
I_ON_EXHAUST, I_KNN, I_DIM, I_K, I_GROW, I_TOKENS, I_MAX_TASK_KERNELS = 0, 1, 2, 3, 4, 5, 6
I_REVEAL, I_REVEAL_LAG = 7, 8  # a REVEAL_MODES value; the lag in steps (REVEAL_LAG)
I_BERNOULLI = 9  # synthetic: 1 = Bernoulli arms (success probability b[j, s], gain gmax)
N_IPARAMS = 10
# indices into EnvData.fparams
F_L, F_NOISE, F_FAIL, F_STEP, F_JUMP, F_GMAX, F_USD_PER_TOKEN, F_SPREAD, F_GMIN = range(9)
F_FLOOR = 9  # synthetic: the planted floor (roofline) runtime in ms, 0 = no floor
N_FPARAMS = 10


class EnvData(NamedTuple):
    """Arrays of one environment over many tasks (see the module docstring for the packing)."""

    task_k0: np.ndarray  # (NT,) int64: global kernel row of each task's k0
    task_kstart: np.ndarray  # (NT + 1,) int64
    task_scale: np.ndarray  # (NT, 5) float64: per-dim std of recorded phi (for distances)
    task_floor_ms: np.ndarray  # (NT,) tape, fitted: fastest correct runtime recorded (D46, D47)
    k_phi: np.ndarray  # (NK, 5)
    k_hw: np.ndarray  # (NK, 3), NaN = never profiled
    k_roof: np.ndarray  # (NK, 3) roofline signature (trace column roofline_sig), NaN = none
    k_shown: np.ndarray  # (NK,) int64 recorded step its Nsight signature was first shown
    reveal_delay: np.ndarray  # (ND,) int64 recorded shown_step - asked_step (REVEAL_DELAYS)
    k_prof9: np.ndarray  # (NK, 9)
    k_rt6: np.ndarray  # (NK, 6)
    k_ms: np.ndarray  # (NK,)
    tape_start: np.ndarray  # (NK * S + 1,) int64
    o_success: np.ndarray  # (NO,) bool
    o_na: np.ndarray  # (NO,) bool, recorded not_applicable (all False under the legacy rule)
    o_child: np.ndarray  # (NO,) int64 global kernel row of the child, -1 for failures
    o_child_ms: np.ndarray  # (NO,) float64, NaN for failures
    o_parent_ms: np.ndarray  # (NO,) float64 the parent's recorded runtime
    o_reward: np.ndarray  # (NO,) float64 v2 reward max(0, (Tp - Tc) / Tp), failures 0
    o_tokens: np.ndarray  # (NO,) int64 prompt + completion tokens
    o_cost: np.ndarray  # (NO,) float64 USD
    tape_mean: np.ndarray  # (NK, S) mean o_reward of each tape, NaN if empty
    tape_nn: np.ndarray  # (NK, S) int64 nearest other kernel (phi) with outcomes for s, or -1
    fit_nbr: np.ndarray  # (NK, S, knn) int64 fitted env: k nearest recorded parents with data
    fit_nbr_n: np.ndarray  # (NK, S) int64 how many of fit_nbr are set
    fit_mean: np.ndarray  # (NK, S) fitted env: mean reward of the model at each kernel
    fit_min_ratio: np.ndarray  # (NK, S) fitted env: least Tc / Tp among the neighbours' outcomes
    syn_centers: np.ndarray  # (NT, K, dim) planted cluster centres
    syn_base: np.ndarray  # (NT, K, S) planted per-cluster x strategy mean improvement
    syn_hw: np.ndarray  # (NT, K, 3) planted hardware signature of each cluster
    iparams: np.ndarray  # (N_IPARAMS,) int64
    fparams: np.ndarray  # (N_FPARAMS,) float64


def empty_env(n_tasks: int) -> dict[str, np.ndarray]:
    """Field -> array with every field empty but correctly typed (builders fill what they use)."""
    s = N_STRATEGIES
    return {
        "task_k0": np.full(n_tasks, -1, np.int64),
        "task_kstart": np.zeros(n_tasks + 1, np.int64),
        "task_scale": np.ones((n_tasks, len(PHI_DIMS))),
        "task_floor_ms": np.zeros(n_tasks),
        "k_phi": np.zeros((0, len(PHI_DIMS))),
        "k_hw": np.zeros((0, 3)),
        "k_roof": np.zeros((0, 3)),
        "k_shown": np.zeros(0, np.int64),
        "reveal_delay": np.zeros(0, np.int64),
        "k_prof9": np.zeros((0, len(PROFILE_DIMS))),
        "k_rt6": np.zeros((0, len(RUNTIME_DIMS))),
        "k_ms": np.zeros(0),
        "tape_start": np.zeros(1, np.int64),
        "o_success": np.zeros(0, np.bool_),
        "o_na": np.zeros(0, np.bool_),
        "o_child": np.zeros(0, np.int64),
        "o_child_ms": np.zeros(0),
        "o_parent_ms": np.zeros(0),
        "o_reward": np.zeros(0),
        "o_tokens": np.zeros(0, np.int64),
        "o_cost": np.zeros(0),
        "tape_mean": np.zeros((0, s)),
        "tape_nn": np.zeros((0, s), np.int64),
        "fit_nbr": np.zeros((0, s, 1), np.int64),
        "fit_nbr_n": np.zeros((0, s), np.int64),
        "fit_mean": np.zeros((0, s)),
        "fit_min_ratio": np.zeros((0, s)),
        "syn_centers": np.zeros((n_tasks, 1, 1)),
        "syn_base": np.zeros((n_tasks, 1, s)),
        "syn_hw": np.zeros((n_tasks, 1, 3)),
        "iparams": np.zeros(N_IPARAMS, np.int64),
        "fparams": np.zeros(N_FPARAMS),
    }


def make_env(fields: dict[str, np.ndarray]) -> EnvData:
    """An EnvData with every array C-contiguous and of the dtype the engine expects."""
    template = empty_env(1)
    out = {}
    for name in EnvData._fields:
        arr = np.ascontiguousarray(fields[name], dtype=template[name].dtype)
        if arr.ndim != template[name].ndim:
            raise ValueError(f"EnvData.{name} must have {template[name].ndim} dims, not {arr.ndim}")
        out[name] = arr
    return EnvData(**out)


class Env(NamedTuple):
    """A compiled environment and what the engine and the results need to know about it."""

    name: str  # "synthetic" | "tape" | "fitted"
    kind: int
    data: EnvData
    task_ids: tuple[str, ...]
    n_init: tuple[int, ...]  # initial pool size per task
    grows: bool  # whether correct children join the pool
    description: str  # the spec or trace it came from
    #: when the policy sees Nsight Compute signatures (trace envs: `kbsim.envs.reveal`)
    reveal: str = "at-once"


class Scratch(NamedTuple):
    """Per-worker working arrays the environments use during one episode (reset per episode)."""

    means: np.ndarray  # (max_pool, S) mean reward of every arm (pool member, strategy)
    cursor: np.ndarray  # (max_task_kernels, S) int64 next unread outcome of each tape
    child_phi: np.ndarray  # (5,)
    child_prof9: np.ndarray  # (9,)
    child_rt6: np.ndarray  # (6,)
    hw: np.ndarray  # (3,)
    served: np.ndarray  # (1,) int64 steps served fresh from a tape (tape env) or by data
    reps: np.ndarray  # (64,) int64 representatives to profile (room for the largest K)
    # signature timing (REVEAL_MODES other than at-once), per pool member, reset per episode
    sig_asked: np.ndarray  # (max_pool,) int64 step it was first asked for, -1 never
    sig_due: np.ndarray  # (max_pool,) int64 step from which Nsight's signature shows
    sig_prov: np.ndarray  # (max_pool,) int64 1 = shows its roofline signature, to be replaced


def new_scratch(env: EnvData, max_pool: int) -> Scratch:
    """Working arrays sized for `env` and pools of at most `max_pool` members."""
    s = N_STRATEGIES
    n_kernels = max(1, int(env.iparams[I_MAX_TASK_KERNELS]))
    return Scratch(
        means=np.full((max_pool, s), np.nan),
        cursor=np.zeros((n_kernels, s), np.int64),
        child_phi=np.zeros(len(PHI_DIMS)),
        child_prof9=np.zeros(len(PROFILE_DIMS)),
        child_rt6=np.zeros(len(RUNTIME_DIMS)),
        hw=np.full(3, np.nan),
        served=np.zeros(1, np.int64),
        reps=np.zeros(64, np.int64),
        sig_asked=np.full(max_pool, -1, np.int64),
        sig_due=np.zeros(max_pool, np.int64),
        sig_prov=np.zeros(max_pool, np.int64),
    )
