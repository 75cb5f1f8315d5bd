"""Lipschitz and covering estimates recover planted constants and dimensions."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.covering import covering_dimension, covering_number, zooming_dimension
from analysis.lipschitz import estimate_lipschitz, pooled_noise_sd


@pytest.mark.parametrize(
    ("n_points", "dim", "noise_sd", "repeats", "seed"),
    [(300, 3, 0.02, 5, 0), (400, 5, 0.05, 4, 1), (200, 2, 0.05, 2, 2), (300, 2, 0.0, 1, 3)],
)
def test_lipschitz_within_ten_percent_of_planted(
    n_points: int, dim: int, noise_sd: float, repeats: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    planted = 2.5
    x = rng.uniform(size=(n_points, dim))
    centre = rng.uniform(0.3, 0.7, dim)
    mu = planted * np.linalg.norm(x - centre, axis=1)
    samples = mu[:, None] + rng.normal(0.0, noise_sd, (n_points, repeats))
    groups = np.repeat(np.arange(n_points), repeats)
    sd_hat = pooled_noise_sd(samples.ravel(), groups)
    assert sd_hat == pytest.approx(noise_sd, rel=0.1, abs=1e-12)
    est = estimate_lipschitz(
        x, samples.mean(axis=1), rng=rng, n_obs=np.full(n_points, repeats), noise_sd=sd_hat
    )
    assert est.max_slope_corrected == pytest.approx(planted, rel=0.10)
    assert est.max_slope_corrected <= est.max_slope_raw
    assert est.extreme_value >= est.max_slope_corrected


def test_noise_correction_matters() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(size=(200, 2))
    mu = 1.0 * x[:, 0]
    y = mu + rng.normal(0, 0.05, 200)
    est = estimate_lipschitz(x, y, rng=rng, noise_sd=0.05)
    assert est.max_slope_raw > 1.2  # noise alone inflates the naive maximum
    assert est.max_slope_corrected == pytest.approx(1.0, rel=0.15)


def test_pairs_stay_within_groups() -> None:
    rng = np.random.default_rng(0)
    x = np.array([[0.0], [1.0], [0.0], [1.0]])
    y = np.array([0.0, 1.0, 5.0, 5.0])  # group 1 is flat; across groups slopes would be 5
    est = estimate_lipschitz(x, y, rng=rng, groups=np.array([0, 0, 1, 1]), d_min_quantile=0.0)
    assert est.n_pairs == 2
    assert est.max_slope_raw == pytest.approx(1.0)


def _torus(rng: np.random.Generator, n: int, dim: int, ambient: int) -> np.ndarray:
    """n points uniform on the flat d-torus (product of unit circles), rotated into R^ambient."""
    angles = rng.uniform(0, 2 * np.pi, (n, dim))
    pts = np.concatenate([np.cos(angles), np.sin(angles), np.zeros((n, ambient - 2 * dim))], 1)
    rotation, _ = np.linalg.qr(rng.normal(size=(ambient, ambient)))
    return pts @ rotation


@pytest.mark.parametrize(("dim", "n_points"), [(1, 1500), (2, 2500), (3, 4000)])
def test_covering_dimension_within_point_three(dim: int, n_points: int) -> None:
    rng = np.random.default_rng(dim)
    fit = covering_dimension(_torus(rng, n_points, dim, ambient=max(5, 2 * dim)), rng=rng)
    assert fit.dimension == pytest.approx(dim, abs=0.3)
    assert fit.curve["used"].sum() >= 3
    assert np.all(np.diff(fit.curve["n_balls"]) <= 0)  # N(eps) falls as eps grows


def test_covering_number_is_a_net() -> None:
    rng = np.random.default_rng(0)
    pts = np.array([[0.0], [0.1], [0.2], [5.0], [5.05]])
    assert covering_number(pts, 0.5, rng=rng) == 2
    assert covering_number(pts, 100.0, rng=rng) == 1
    with pytest.raises(ValueError, match="positive"):
        covering_number(pts, 0.0, rng=rng)


def test_zooming_dimension_peak_versus_flat() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(2000, 2))
    peaked = 1.0 - 2.0 * np.linalg.norm(x - 0.5, axis=1)
    zoom_peak = zooming_dimension(x, peaked, lipschitz=2.0, rng=rng)
    zoom_flat = zooming_dimension(x, np.zeros(2000), lipschitz=2.0, rng=rng)
    assert abs(zoom_peak.dimension) < 0.5  # one sharp optimum: O(1) balls at every scale
    assert zoom_flat.dimension > 1.4  # everything near-optimal: the whole square's dimension
