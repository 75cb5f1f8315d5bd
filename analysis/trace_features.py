"""From a trace's steps and kernels to the arrays the geometry checks need (pure, pandas in/out).

Per task, φ is z-scored over the task's kernels (tasks differ in scale; rewards of different
tasks are never compared). The reward of strategy s on parent k is the mean v2 reward of the
attempts (k, s), failures included (they give 0): the arm mean the bandit estimates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.clusters import cluster_validity, summarise_validity, zscore
from analysis.covering import covering_dimension, zooming_dimension
from analysis.lipschitz import estimate_lipschitz, pooled_noise_sd

#: fewest kernels a task needs before its geometry is estimated
MIN_KERNELS = 12


def task_phi(kernels: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per task: kernel_id index → z-scored φ columns phi0..phi4 (kernels without φ dropped)."""
    out: dict[str, pd.DataFrame] = {}
    usable = kernels[kernels["phi"].notna()]
    for task, part in usable.groupby("task_id", sort=True):
        part = part.drop_duplicates("kernel_id")
        phi = np.stack([np.asarray(v, dtype=np.float64) for v in part["phi"]])
        finite = np.all(np.isfinite(phi), axis=1)
        if finite.sum() == 0:
            continue
        frame = pd.DataFrame(zscore(phi[finite]), index=part["kernel_id"].to_numpy()[finite])
        frame.columns = [f"phi{i}" for i in range(phi.shape[1])]
        out[str(task)] = frame
    return out


def arm_samples(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (task, parent, strategy): mean reward, attempts (n)."""
    return steps.groupby(["task_id", "parent_id", "strategy"], sort=True).agg(
        reward=("reward", "mean"), n=("reward", "size")
    ).reset_index()


def lipschitz_table(
    steps: pd.DataFrame, kernels: pd.DataFrame, *, rng: np.random.Generator
) -> pd.DataFrame:
    """Per strategy: Lipschitz estimates of mean reward in z-scored φ-space (pairs within tasks)."""
    phis = task_phi(kernels)
    noise = pooled_noise_sd(
        steps["reward"].to_numpy(dtype=np.float64),
        (steps["task_id"] + "\x1f" + steps["parent_id"] + "\x1f" + steps["strategy"]).to_numpy(),
    )
    arms = arm_samples(steps)
    rows = []
    for strategy, part in arms.groupby("strategy", sort=True):
        pts, ys, ns, groups = [], [], [], []
        for task, task_part in part.groupby("task_id"):
            phi = phis.get(str(task))
            if phi is None:
                continue
            known = task_part[task_part["parent_id"].isin(phi.index)]
            pts.append(phi.loc[known["parent_id"]].to_numpy())
            ys.append(known["reward"].to_numpy(dtype=np.float64))
            ns.append(known["n"].to_numpy(dtype=np.float64))
            groups.append(np.full(len(known), str(task), dtype=object))
        if not pts or sum(len(y) for y in ys) < 3:
            continue
        est = estimate_lipschitz(
            np.concatenate(pts), np.concatenate(ys), rng=rng, n_obs=np.concatenate(ns),
            noise_sd=noise, groups=np.concatenate(groups),
        )
        rows.append({"strategy": strategy, "lipschitz": est.max_slope_corrected,
                     "lipschitz_raw_max": est.max_slope_raw, "lipschitz_extreme_value":
                     est.extreme_value, "noise_sd": est.noise_sd, "d_min": est.d_min,
                     "n_parents": est.n_points, "n_pairs": est.n_pairs})
    return pd.DataFrame(rows)


def covering_tables(
    steps: pd.DataFrame,
    kernels: pd.DataFrame,
    *,
    rng: np.random.Generator,
    lipschitz: float | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-task dimensions, long-form N(ε) curves) of the correct kernels' z-scored φ.

    The zooming dimension needs a per-kernel mean reward: a parent's best per-strategy mean;
    it is computed only where ``lipschitz`` is given and at least MIN_KERNELS parents have one.
    """
    phis = task_phi(kernels[kernels["correct"]])
    arms = arm_samples(steps)
    best = arms.groupby(["task_id", "parent_id"])["reward"].max()
    rows, curves = [], []
    for task, phi in phis.items():
        if len(phi) < MIN_KERNELS:
            continue
        fit = covering_dimension(phi.to_numpy(), rng=rng, min_balls=4, max_frac=0.5)
        row = {"task_id": task, "n_kernels": len(phi), "covering_dim": fit.dimension,
               "eps_min": fit.eps_min, "eps_max": fit.eps_max, "zooming_dim": float("nan")}
        curves.append(fit.curve.assign(task_id=task, kind="covering"))
        if lipschitz is not None and np.isfinite(lipschitz) and lipschitz > 0 and task in \
                best.index.get_level_values(0):
            mu = best.loc[task]
            known = phi.index.intersection(mu.index)
            if len(known) >= MIN_KERNELS:
                zoom = zooming_dimension(phi.loc[known].to_numpy(),
                                         mu.loc[known].to_numpy(dtype=np.float64),
                                         lipschitz=lipschitz, rng=rng)
                row["zooming_dim"] = zoom.dimension
                curves.append(zoom.curve.assign(task_id=task, kind="zooming"))
        rows.append(row)
    curve = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(
        columns=["eps", "n_balls", "used", "task_id", "kind"])
    return pd.DataFrame(rows), curve


def validity_tables(
    steps: pd.DataFrame, kernels: pd.DataFrame, *, rng: np.random.Generator
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-task validity rows, per-(strategy, K) summary) over the parents of each task."""
    phis = task_phi(kernels)
    arms = arm_samples(steps)
    frames = []
    for task, part in arms.groupby("task_id", sort=True):
        phi = phis.get(str(task))
        if phi is None:
            continue
        parents = phi.index.intersection(part["parent_id"].unique())
        if len(parents) < MIN_KERNELS:
            continue
        position = pd.Series(np.arange(len(parents)), index=parents)
        rewards = {}
        for strategy, s_part in part[part["parent_id"].isin(parents)].groupby("strategy"):
            rewards[str(strategy)] = (position.loc[s_part["parent_id"]].to_numpy(),
                                      s_part["reward"].to_numpy(dtype=np.float64))
        table = cluster_validity(phi.loc[parents].to_numpy(), rewards, rng=rng)
        frames.append(table.assign(task_id=task))
    if not frames:
        return pd.DataFrame(), pd.DataFrame()
    per_task = pd.concat(frames, ignore_index=True)
    return per_task, summarise_validity(per_task)
