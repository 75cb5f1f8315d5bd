"""Cluster validity separates planted clusters from arbitrary ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.clusters import anova, cluster_validity, summarise_validity


def _planted(rng: np.random.Generator, n_per: int = 40) -> tuple[np.ndarray, np.ndarray]:
    centres = np.array([[0, 0, 0, 0, 0], [6, 0, 0, 0, 0], [0, 6, 0, 0, 0]], dtype=float)
    phi = np.concatenate([c + rng.normal(0, 0.7, (n_per, 5)) for c in centres])
    cluster = np.repeat(np.arange(3), n_per)
    return phi, cluster


def test_planted_clusters_are_valid_at_true_k() -> None:
    rng = np.random.default_rng(0)
    phi, cluster = _planted(rng)
    idx = np.arange(phi.shape[0])
    reward_by_cluster = np.array([0.1, 0.4, 0.7])
    rewards = {
        "tiling": (idx, reward_by_cluster[cluster] + rng.normal(0, 0.05, idx.size)),
        "fusion": (idx, rng.normal(0.3, 0.05, idx.size)),  # ignores clusters
    }
    table = cluster_validity(phi, rewards, rng=rng)
    assert set(table["k"]) == set(range(1, 9))
    at3 = table[table["k"] == 3].set_index("strategy")
    assert at3.loc["tiling", "p_value"] < 1e-10
    assert at3.loc["tiling", "eta_sq"] > 0.9
    assert at3.loc["fusion", "p_value"] > 0.001
    sil = table.drop_duplicates("k").set_index("k")["silhouette_phi"]
    assert sil.idxmax() == 3
    assert np.isnan(table[table["k"] == 1]["f_stat"]).all()


def test_anova_matches_scipy() -> None:
    from scipy import stats

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, 60)
    values = rng.normal(size=60) + labels * 0.3
    ours = anova(labels, values)
    f_ref, p_ref = stats.f_oneway(*[values[labels == g] for g in range(4)])
    assert ours["f_stat"] == pytest.approx(f_ref)
    assert ours["p_value"] == pytest.approx(p_ref)


def test_summary_combines_tasks() -> None:
    rows = pd.DataFrame({
        "task_id": ["a", "b"], "strategy": ["tiling", "tiling"], "k": [3, 3],
        "n_kernels": [10, 12], "ss_within": [1.0, 1.0], "ss_between": [1.0, 1.0],
        "f_stat": [4.0, 6.0], "p_value": [0.01, 0.02], "eta_sq": [0.5, 0.5],
        "silhouette_phi": [0.4, 0.6],
    })
    summary = summarise_validity(rows).iloc[0]
    assert summary["n_tasks"] == 2 and summary["n_kernels"] == 22
    assert summary["combined_p"] < 0.01  # two weak signals combine into a stronger one
    assert summary["median_f"] == pytest.approx(5.0)
