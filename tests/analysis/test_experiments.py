"""The clusters-versus-pool preset: β fits on planted data, and on the synthetic environment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.experiments import PoolExperiment, fit_pool_beta, pool_analysis


def _planted_runs(rng: np.random.Generator, exponent: float, policy: str) -> pd.DataFrame:
    sizes = np.array([10, 30, 100, 300, 1000, 3000, 10000])
    rows = []
    for seed in range(10):
        scale = rng.uniform(0.8, 1.2)
        for n in sizes:
            rows.append((policy, int(n), seed, 50 * scale * n**exponent * rng.lognormal(0, 0.05)))
    return pd.DataFrame(rows, columns=["policy", "n_kernels", "seed", "regret"])


def test_beta_recovers_planted_exponents() -> None:
    rng = np.random.default_rng(0)
    runs = pd.concat([_planted_runs(rng, 0.0, "clustered"), _planted_runs(rng, 0.3, "flat")])
    points, betas = fit_pool_beta(runs, rng=rng, n_boot=500)
    betas = betas.set_index("policy")
    assert betas.loc["clustered", "ci_low"] <= 0.0 <= betas.loc["clustered", "ci_high"]
    assert betas.loc["flat", "beta"] == pytest.approx(0.3, abs=0.03)
    assert betas.loc["flat", "ci_low"] > 0.2
    assert len(points) == 14 and (points["lo"] <= points["mean"]).all()


def test_pool_analysis_has_tables_and_figure() -> None:
    rng = np.random.default_rng(1)
    exp = PoolExperiment(pool_sizes=(10, 30, 100, 300, 1000, 3000, 10000), seeds=10)
    out = pool_analysis(_planted_runs(rng, 0.1, "p"), exp, rng=rng, n_boot=100)
    assert set(out.tables) == {"pool_beta", "pool_points", "pool_runs"}
    assert out.figures["pool"][:4] == b"\x89PNG"
    assert out.context["instance"].startswith("fixed-gap,pool=n")


@pytest.mark.slow
def test_preset_on_synthetic_environment() -> None:
    """Acceptance: β ≈ 0 (CI holds 0) for clustered KernelBand, > 0 for flat UCB.

    Slow: compiles the replay engine (about a minute cold) and runs the full preset (n = 10 →
    10,000, T = 5000, 8 seeds: about 25 s warm on 2 cores).
    """
    pytest.importorskip("kbsim.replay.sweep")
    from analysis.experiments import simulate_pool_experiment

    runs = simulate_pool_experiment(PoolExperiment())
    _, betas = fit_pool_beta(runs, rng=np.random.default_rng(0), n_boot=1000)
    betas = betas.set_index("policy")
    clustered, flat = betas.loc["kernelband-v2:c=0.5"], betas.loc["ucb-flat:c=0.5"]
    assert clustered["ci_low"] <= 0.0 <= clustered["ci_high"]
    assert abs(clustered["beta"]) < 0.05
    assert flat["ci_low"] > 0.0 and flat["ci_low_seeds_only"] > 0.1
    assert flat["beta"] > clustered["ci_high"]
