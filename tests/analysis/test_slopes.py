"""Slope fits and growth classification recover planted regret exponents."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.regret import band, regret_bands, unit_curves
from analysis.slopes import classify_growth, fit_slope, v1_bound


def _minimax_finals(rng: np.random.Generator, horizons: np.ndarray, n_units: int) -> np.ndarray:
    """Final regret at horizon T under gaps sqrt(K ln T / T): c_u * sqrt(K T ln T) * noise."""
    k = 18
    scale = rng.uniform(0.3, 0.6, size=(n_units, 1))
    noise = np.exp(rng.normal(0.0, 0.15, size=(n_units, horizons.size)))
    return scale * np.sqrt(k * horizons * np.log(horizons)) * noise


def test_slope_recovers_half_in_minimax_regime() -> None:
    rng = np.random.default_rng(1)
    horizons = np.array([250, 500, 1000, 2000, 4000, 8000, 16000], dtype=float)
    finals = _minimax_finals(rng, horizons, n_units=40)
    fit = fit_slope(horizons, finals, rng=rng, log_power=0.5, t_min=horizons[0])
    assert abs(fit.slope - 0.5) <= 0.05
    assert fit.ci_low <= 0.5 <= fit.ci_high
    assert fit.ci_high - fit.ci_low < 0.1
    # without dividing out sqrt(ln T) the raw slope is biased up by about 0.5 / ln T
    raw = fit_slope(horizons, finals, rng=rng, log_power=0.0, t_min=horizons[0])
    assert raw.slope > fit.slope + 0.03


def test_fixed_gap_curves_are_reported_logarithmic() -> None:
    rng = np.random.default_rng(2)
    t = np.arange(1, 5001, dtype=float)
    # per-step regret ~ b / t on average: cumulative ~ b ln t, plus run-to-run noise
    units = np.stack(
        [
            3.0 * np.log(t)
            + rng.normal(0, 0.2)
            + 0.05 * np.cumsum(rng.normal(0, 1, t.size)) / np.sqrt(t.size)
            for _ in range(30)
        ]
    )
    growth = classify_growth(t, units.mean(axis=0))
    assert growth.kind == "logarithmic"
    assert growth.slope_second_half < growth.slope_first_half
    assert growth.log_coef == pytest.approx(3.0, rel=0.1)


@pytest.mark.parametrize(
    ("exponent", "kind"), [(0.5, "power"), (0.7, "power"), (1.0, "linear")]
)
def test_power_and_linear_curves_are_not_called_logarithmic(exponent: float, kind: str) -> None:
    t = np.arange(1, 5001, dtype=float)
    growth = classify_growth(t, 2.0 * t**exponent)
    assert growth.kind == kind
    assert growth.power_slope == pytest.approx(exponent, abs=0.01)


def test_flat_curve() -> None:
    t = np.arange(1, 1001, dtype=float)
    assert classify_growth(t, np.full(t.size, 4.0)).kind == "flat"


def test_fit_slope_rejects_bad_input() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="columns"):
        fit_slope(np.arange(2, 10.0), np.ones((3, 4)), rng=rng)
    with pytest.raises(ValueError, match="increasing"):
        fit_slope(np.array([3.0, 2.0, 5.0]), np.ones((2, 3)), rng=rng)


def test_v1_bound_values() -> None:
    t = np.array([1.0, 100.0])
    bound = v1_bound(t, n_clusters=3, n_strategies=6)
    assert bound[0] == 0.0
    assert bound[1] == pytest.approx(18 * np.sqrt(800 * np.log(100)))


def _results(n_seeds: int, n_steps: int, env: str, n_tasks: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for task in range(n_tasks):
        for seed in range(n_seeds):
            inst = rng.uniform(0, 0.2, n_steps)
            cum = np.cumsum(inst)
            rows.append(pd.DataFrame({"policy": "p", "env": env, "task_id": f"t{task}",
                                      "seed": seed, "step": np.arange(n_steps),
                                      "cum_regret": cum}))
    return pd.concat(rows, ignore_index=True)


def test_band_brackets_mean_and_narrows_with_units() -> None:
    rng = np.random.default_rng(3)
    few = band(unit_curves(_results(5, 50, "synthetic")), rng=rng)
    many = band(unit_curves(_results(80, 50, "synthetic")), rng=rng)
    assert np.all(few["lo"] <= few["mean"]) and np.all(few["mean"] <= few["hi"])
    width_few = (few["hi"] - few["lo"]).iloc[-1]
    width_many = (many["hi"] - many["lo"]).iloc[-1]
    assert width_many < width_few / 2
    # the true mean per step is 0.1: the band at t=50 holds 5.0
    assert many["lo"].iloc[-1] <= 5.0 <= many["hi"].iloc[-1]


def test_tape_env_bootstraps_over_tasks() -> None:
    curves = unit_curves(_results(4, 20, "tape", n_tasks=3))
    assert curves.unit == "task" and curves.n_units == 3
    bands = regret_bands(_results(4, 20, "synthetic", n_tasks=3), rng=np.random.default_rng(0))
    assert set(bands["unit"]) == {"seed"} and bands["n_units"].iloc[0] == 12
    assert bands["t"].min() == 1
