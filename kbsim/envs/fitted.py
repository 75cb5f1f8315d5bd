"""Fitted environment: a nearest-neighbour generative model of outcomes, for unlimited horizons.

For a pool member with behaviour vector phi and a strategy s, the model takes the k nearest
recorded parents (z-scored phi distance, per task) that have outcomes for s; an attempt draws one
of them uniformly, then one of its recorded outcomes uniformly (env rng). A failure stays a
failure (with its tokens and cost); a success yields a child running in
T_child = T_parent * (Tc' / Tp') (the recorded runtime ratio, applied to this parent), with the
recorded child's features, its phi[0] = log1p(T_child) and runtime vector[0] = log(T_child)
rescaled to the new runtime. Success probability and the runtime-ratio distribution are thereby
those of the neighbours. The exact mean reward of an arm under the model is the average of the
neighbours' tape means, so pseudo-regret is exact for the fitted model. A strategy with no
recorded outcome in the task fails at once with no tokens (mean 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from numba import njit

from kbsim.envs.data import FITTED, I_KNN, Env, make_env
from kbsim.envs.recorded import compile_recorded
from kbsim.rng import rand_int
from kbsim.strategies import N_STRATEGIES


def build_fitted(
    steps: pa.Table,
    kernels: pa.Table,
    *,
    knn: int = 5,
    tasks: Sequence[str] | None = None,
    description: str = "trace",
) -> Env:
    """The fitted environment of a trace's steps and kernels tables (k = `knn` neighbours)."""
    if knn < 1:
        raise ValueError(f"knn must be >= 1, got {knn}.")
    fields, task_ids = compile_recorded(steps, kernels, tasks)
    fields["iparams"][I_KNN] = knn
    return Env(
        name="fitted",
        kind=FITTED,
        data=make_env(fields),
        task_ids=task_ids,
        n_init=(1,) * len(task_ids),
        grows=True,
        description=description,
    )


@njit(cache=True)
def fitted_neighbours(env, task: int, phi: np.ndarray, member: int, scratch) -> None:
    """Fill scratch.nbr[member] / nbr_n[member] with the k nearest recorded parents per strategy."""
    k_lo, k_hi = env.task_kstart[task], env.task_kstart[task + 1]
    n = k_hi - k_lo
    dist = scratch.dist[:n]
    for j in range(n):
        d2 = 0.0
        for d in range(5):
            diff = (phi[d] - env.k_phi[k_lo + j, d]) / env.task_scale[task, d]
            d2 += diff * diff
        dist[j] = d2
    order = np.argsort(dist, kind="mergesort")
    knn = env.iparams[I_KNN]
    for s in range(N_STRATEGIES):
        count = 0
        for idx in order:
            row = k_lo + idx
            slot = row * N_STRATEGIES + s
            if env.tape_start[slot + 1] > env.tape_start[slot]:
                scratch.nbr[member, s, count] = row
                count += 1
                if count == knn:
                    break
        scratch.nbr_n[member, s] = count


@njit(cache=True)
def fitted_arm_mean(env, scratch, member: int, s: int) -> float:
    count = scratch.nbr_n[member, s]
    if count == 0:
        return 0.0
    total = 0.0
    for i in range(count):
        total += env.tape_mean[scratch.nbr[member, s, i], s]
    return total / count


@njit(cache=True)
def fitted_arm_means(env, scratch, member: int, out: np.ndarray) -> None:
    """out[s] = fitted_arm_mean(env, scratch, member, s) for every strategy."""
    mean_table, nbr, nbr_n = env.tape_mean, scratch.nbr, scratch.nbr_n
    for s in range(out.shape[0]):
        count = nbr_n[member, s]
        total = 0.0
        for i in range(count):
            total += mean_table[nbr[member, s, i], s]
        out[s] = total / count if count > 0 else 0.0


@njit(cache=True)
def fitted_pick(env, scratch, member: int, s: int, rng: np.ndarray) -> int:
    """Outcome row drawn from the model for (pool member, strategy), -1 if there is no data."""
    count = scratch.nbr_n[member, s]
    if count == 0:
        return -1
    row = scratch.nbr[member, s, rand_int(rng, count)]
    slot = row * N_STRATEGIES + s
    lo, hi = env.tape_start[slot], env.tape_start[slot + 1]
    return lo + rand_int(rng, hi - lo)


@njit(cache=True)
def rescale_features(phi: np.ndarray, rt6: np.ndarray, child_ms: float) -> None:
    phi[0] = math.log1p(child_ms)
    rt6[0] = math.log(child_ms)
