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

Not-applicable outcomes (DESIGN.md): a drawn recorded ``not_applicable`` outcome is answered as
such (no step; the policy marks the pair), so an attempt on an arm not yet known unavailable is
not applicable with the share of ``not_applicable`` among the neighbours' outcomes: the model's
P(not applicable | strategy, phi(parent)). Arm means (for pseudo-regret) keep the recorded
rewards, a ``not_applicable`` outcome counting 0 (NOTE D62). ``not_applicable="failure"``
replays the rule before issue #18 (a failure spending a step).

NOTE (D44): a pool member's neighbours are those of the recorded kernel its features come from
(k0, or the recorded child an outcome was drawn from), found once at build time in that kernel's
recorded phi; they are not searched again for the member's rescaled runtime (phi[0]). This keeps
a step O(1) (the ablation-grid target) at the cost of ignoring the runtime shift in the distance.

NOTE (D46): a generative model should not extrapolate far past its data, and with D44 the
recorded ratios would compound without limit (11x in 40 steps on a synthetic trace). A child's
runtime is therefore bounded below by the task's floor, the fastest correct runtime recorded for
the task (k0's included, no margin): T_child = max(T_parent * Tc' / Tp', floor). The arm means
stay exact: a member whose runtime times the least ratio among its neighbours' outcomes
(`fit_min_ratio`) stays above the floor keeps the precomputed `fit_mean`; otherwise its means
are computed once, when it joins the pool, by averaging the clamped rewards over the neighbours'
outcomes (`fitted_arm_means_arrays`). A member at the floor earns reward 0 from every arm.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from numba import njit

from kbsim._jit import inner_njit
from kbsim.envs.data import FITTED, I_KNN, Env, make_env
from kbsim.envs.recorded import apply_na_rule, compile_recorded
from kbsim.envs.reveal import apply_reveal
from kbsim.rng import rand_int
from kbsim.strategies import N_STRATEGIES
from kbsim.trace.reveals import Reveal


def build_fitted(
    steps: pa.Table,
    kernels: pa.Table,
    *,
    knn: int = 5,
    tasks: Sequence[str] | None = None,
    description: str = "trace",
    not_applicable: str = "unavailable",
    reveals: Sequence[Reveal] | None = None,
    reveal: str | None = None,
) -> Env:
    """The fitted environment of a trace's steps and kernels tables (k = `knn` neighbours)."""
    if knn < 1:
        raise ValueError(f"knn must be >= 1, got {knn}.")
    fields, task_ids = compile_recorded(steps, kernels, tasks, knn=knn)
    apply_na_rule(fields, not_applicable)
    timing = apply_reveal(fields, fields["kernel_rows"], reveals, reveal)
    fields["iparams"][I_KNN] = knn
    return Env(
        name="fitted",
        kind=FITTED,
        data=make_env(fields),
        task_ids=task_ids,
        n_init=(1,) * len(task_ids),
        grows=True,
        description=description,
        reveal=timing,
    )


@njit(cache=True)
def fitted_pick_arrays(fit_nbr, fit_nbr_n, tape_start, key, s, rng) -> int:
    """Outcome row drawn from the model for (member with kernel row `key`, strategy), or -1."""
    count = fit_nbr_n[key, s]
    if count == 0:
        return -1
    row = fit_nbr[key, s, rand_int(rng, count)]
    slot = row * N_STRATEGIES + s
    lo, hi = tape_start[slot], tape_start[slot + 1]
    return lo + rand_int(rng, hi - lo)


@njit(cache=True)
def fitted_arm_means_arrays(
    fit_mean, fit_min_ratio, fit_nbr, fit_nbr_n, tape_start, o_success, o_child_ms,
    o_parent_ms, key, ms, floor_ms, out,
) -> None:
    """out[s] = exact mean reward under the model of strategy s on a member with kernel row
    `key` running in ms, children clamped at floor_ms (NOTE D46)."""
    for s in range(out.shape[0]):
        if ms * fit_min_ratio[key, s] >= floor_ms:
            out[s] = fit_mean[key, s]
            continue
        count = fit_nbr_n[key, s]
        total = 0.0
        for i in range(count):
            slot = fit_nbr[key, s, i] * N_STRATEGIES + s
            lo, hi = tape_start[slot], tape_start[slot + 1]
            acc = 0.0
            for o in range(lo, hi):
                if o_success[o]:
                    child_ms = max(ms * (o_child_ms[o] / o_parent_ms[o]), floor_ms)
                    acc += max(0.0, (ms - child_ms) / ms)
            total += acc / (hi - lo)
        out[s] = total / max(count, 1)


@inner_njit
def rescale_features(phi: np.ndarray, rt6: np.ndarray, child_ms: float) -> None:
    phi[0] = math.log1p(child_ms)
    rt6[0] = math.log(child_ms)
