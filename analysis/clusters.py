"""Cluster validity: do φ-space clusters separate per-strategy rewards? (an open limitation)

KernelBand shares one arm estimate per (cluster, strategy). That is sound when kernels of a
cluster respond alike to a strategy: the per-strategy mean reward varies little *within* clusters
compared to *between* them. For K = 1..8 clusters (k-means++ on z-scored φ, as the policy does),
this module reports for each strategy a one-way ANOVA of per-kernel mean reward on cluster
label — sums of squares within and between, F = (SS_b/(K−1)) / (SS_w/(n−K)), its p-value and
η² = SS_b / SS_total — and the silhouette of the clustering itself in φ-space. A small p and a
large η² at the policy's K support the clustering; p ≈ uniform says the clusters are arbitrary
with respect to that strategy's reward.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

VALIDITY_COLUMNS = [
    "strategy", "k", "n_kernels", "ss_within", "ss_between", "f_stat", "p_value", "eta_sq",
    "silhouette_phi",
]


def zscore(points: np.ndarray) -> np.ndarray:
    """Column-wise z-scores; constant columns become 0."""
    pts = np.asarray(points, dtype=np.float64)
    sd = pts.std(axis=0)
    return (pts - pts.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


def kmeans_labels(points: np.ndarray, k: int, *, rng: np.random.Generator) -> np.ndarray:
    """k-means++ labels of z-scored ``points`` (k is capped at the number of distinct points)."""
    pts = zscore(points)
    distinct = np.unique(pts, axis=0).shape[0]
    k_eff = max(1, min(k, distinct))
    if k_eff == 1:
        return np.zeros(pts.shape[0], dtype=np.int64)
    model = KMeans(n_clusters=k_eff, init="k-means++", n_init=4,
                   random_state=int(rng.integers(2**31 - 1)))
    return model.fit_predict(pts).astype(np.int64)


def anova(labels: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """One-way ANOVA of ``values`` on ``labels``: ss_within, ss_between, f_stat, p_value, eta_sq."""
    lab = np.asarray(labels)
    y = np.asarray(values, dtype=np.float64)
    groups, inverse = np.unique(lab, return_inverse=True)
    n, k = y.size, groups.size
    grand = y.mean() if n else float("nan")
    counts = np.bincount(inverse)
    means = np.bincount(inverse, weights=y) / counts
    ss_within = float(np.sum((y - means[inverse]) ** 2))
    ss_between = float(np.sum(counts * (means - grand) ** 2)) if k > 1 else 0.0
    total = ss_within + ss_between
    nan = float("nan")
    if k < 2 or n <= k:
        f_stat = p_value = nan
    elif ss_within <= 0:
        f_stat, p_value = (float("inf"), 0.0) if ss_between > 0 else (nan, nan)
    else:
        f_stat = (ss_between / (k - 1)) / (ss_within / (n - k))
        p_value = float(stats.f.sf(f_stat, k - 1, n - k))
    return {
        "ss_within": ss_within,
        "ss_between": ss_between,
        "f_stat": float(f_stat),
        "p_value": float(p_value),
        "eta_sq": ss_between / total if total > 0 else nan,
    }


def cluster_validity(
    phi: np.ndarray,
    rewards: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    rng: np.random.Generator,
    ks: Iterable[int] = range(1, 9),
) -> pd.DataFrame:
    """Validity table for one pool of kernels (one task).

    ``phi`` is (n, d); ``rewards[strategy] = (kernel_indices, mean_reward)`` gives the mean
    reward of that strategy on the kernels it was tried on. One clustering per K is shared by
    every strategy (as in the policy). Returns VALIDITY_COLUMNS rows.
    """
    pts = np.asarray(phi, dtype=np.float64)
    rows = []
    for k in ks:
        labels = kmeans_labels(pts, k, rng=rng)
        n_labels = np.unique(labels).size
        sil = float("nan")
        if 2 <= n_labels < pts.shape[0]:
            sil = float(silhouette_score(zscore(pts), labels))
        for strategy, (idx, reward) in rewards.items():
            idx_arr = np.asarray(idx, dtype=np.int64)
            row = {"strategy": strategy, "k": int(k), "n_kernels": int(idx_arr.size),
                   "silhouette_phi": sil}
            row.update(anova(labels[idx_arr], reward))
            rows.append(row)
    return pd.DataFrame(rows, columns=VALIDITY_COLUMNS)


def summarise_validity(per_task: pd.DataFrame) -> pd.DataFrame:
    """Combine per-task validity rows per (strategy, k): Fisher-combined p-value, medians.

    Expects VALIDITY_COLUMNS plus ``task_id``. Returns strategy, k, n_tasks, n_kernels,
    median_f, combined_p, mean_eta_sq, mean_silhouette.
    """
    rows = []
    for (strategy, k), part in per_task.groupby(["strategy", "k"], sort=True):
        p = part["p_value"].to_numpy(dtype=np.float64)
        p = p[np.isfinite(p)]
        combined = float(stats.combine_pvalues(np.clip(p, 1e-300, 1.0), method="fisher")[1]) \
            if p.size else float("nan")
        rows.append({
            "strategy": strategy,
            "k": int(k),
            "n_tasks": int(part["task_id"].nunique()),
            "n_kernels": int(part["n_kernels"].sum()),
            "median_f": float(np.nanmedian(part["f_stat"])) if part["f_stat"].notna().any()
            else float("nan"),
            "combined_p": combined,
            "mean_eta_sq": float(part["eta_sq"].mean()),
            "mean_silhouette": float(part["silhouette_phi"].mean()),
        })
    return pd.DataFrame(rows)
