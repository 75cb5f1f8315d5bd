"""Covering numbers N(ε), the covering dimension, and the zooming dimension of a kernel pool.

Lipschitz-bandit regret scales with how many ε-balls it takes to cover the arm space: if
N(ε) ≈ C ε^{-d}, zooming/HOO-style algorithms get R(T) = Õ(T^{(d+1)/(d+2)}), and only the
*near-optimal* part matters: the zooming dimension d_z is the smallest d with
N(δ/L; {x : μ* − μ(x) <= δ}) <= C δ^{-d} (Kleinberg, Slivkins & Upfal 2008). KernelBand's
clustering is a bet that the candidate pool, in φ-space, is covered by few balls.

``covering_number`` is the size of a greedy ε-net (a maximal ε-separated subset: every point is
within ε of a centre). It is bracketed by true covering numbers, N(ε) <= greedy(ε) <= N(ε/2),
so the slope of log greedy(ε) against log(1/ε) estimates the same dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class DimensionFit:
    """Slope of log N(ε) against log(1/ε) over [eps_min, eps_max], with the curve it came from."""

    dimension: float
    intercept: float
    eps_min: float
    eps_max: float
    n_points: int
    curve: pd.DataFrame  # columns eps, n_balls, used (bool: inside the fit range)


def covering_number(points: np.ndarray, eps: float, *, rng: np.random.Generator) -> int:
    """Size of a greedy ε-net of ``points`` (n × d, Euclidean), visiting points in random order."""
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] == 0:
        raise ValueError("points must be a non-empty (n, d) array")
    if eps <= 0:
        raise ValueError(f"eps must be positive, got {eps}")
    order = rng.permutation(pts.shape[0])
    shuffled = pts[order]
    covered = np.zeros(pts.shape[0], dtype=bool)
    eps_sq = eps * eps
    n_centres = 0
    for i in range(shuffled.shape[0]):
        if covered[i]:
            continue
        n_centres += 1
        rest = ~covered
        diff = shuffled[rest] - shuffled[i]
        near = np.einsum("ij,ij->i", diff, diff) <= eps_sq
        idx = np.flatnonzero(rest)
        covered[idx[near]] = True
    return n_centres


def covering_curve(
    points: np.ndarray, eps_grid: np.ndarray, *, rng: np.random.Generator
) -> pd.DataFrame:
    """N(ε) for every ε of ``eps_grid``: columns eps, n_balls."""
    grid = np.sort(np.asarray(eps_grid, dtype=np.float64))
    counts = [covering_number(points, float(e), rng=rng) for e in grid]
    return pd.DataFrame({"eps": grid, "n_balls": np.asarray(counts, dtype=np.int64)})


def default_eps_grid(points: np.ndarray, n_eps: int = 16) -> np.ndarray:
    """Log-spaced radii from the typical nearest-neighbour spacing to half the spread."""
    pts = np.asarray(points, dtype=np.float64)
    spread = float(np.max(np.linalg.norm(pts - pts.mean(axis=0), axis=1)))
    sample = pts[: min(pts.shape[0], 2000)]
    d2 = np.sum((sample[:, None, :] - sample[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(d2, np.inf)
    nn = float(np.median(np.sqrt(d2.min(axis=1))))
    lo = max(nn, spread * 1e-4, 1e-12)
    hi = max(spread, lo * 2)
    return np.geomspace(lo, hi, n_eps)


def _fit_dimension(curve: pd.DataFrame, n_points: int, min_balls: int, max_frac: float) -> tuple:
    used = (curve["n_balls"] >= min_balls) & (curve["n_balls"] <= max_frac * n_points)
    if used.sum() < 3:
        # small pools: use every radius that neither saturates nor collapses
        used = (curve["n_balls"] > 1) & (curve["n_balls"] < n_points)
    if used.sum() < 2:
        return float("nan"), float("nan"), used
    x = np.log(1.0 / curve.loc[used, "eps"].to_numpy())
    y = np.log(curve.loc[used, "n_balls"].to_numpy(dtype=np.float64))
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), used


def covering_dimension(
    points: np.ndarray,
    *,
    rng: np.random.Generator,
    eps_grid: np.ndarray | None = None,
    min_balls: int = 8,
    max_frac: float = 0.1,
) -> DimensionFit:
    """Covering dimension: slope of log N(ε) vs log(1/ε) where 8 <= N(ε) <= n/10.

    Radii at which nearly every point is its own ball (N close to n: the sample is too sparse
    to see the geometry) or at which a handful of balls cover everything are left out of the fit.
    """
    pts = np.asarray(points, dtype=np.float64)
    grid = default_eps_grid(pts) if eps_grid is None else np.asarray(eps_grid, dtype=np.float64)
    curve = covering_curve(pts, grid, rng=rng)
    slope, intercept, used = _fit_dimension(curve, pts.shape[0], min_balls, max_frac)
    curve = curve.assign(used=used.to_numpy())
    eps_used = curve.loc[curve["used"], "eps"]
    return DimensionFit(
        dimension=slope,
        intercept=intercept,
        eps_min=float(eps_used.min()) if len(eps_used) else float("nan"),
        eps_max=float(eps_used.max()) if len(eps_used) else float("nan"),
        n_points=int(pts.shape[0]),
        curve=curve,
    )


def zooming_dimension(
    points: np.ndarray,
    mean_reward: np.ndarray,
    *,
    lipschitz: float,
    rng: np.random.Generator,
    deltas: np.ndarray | None = None,
) -> DimensionFit:
    """Zooming dimension: slope of log N(δ/L; X_δ) vs log(1/δ), X_δ = {x : μ* − μ(x) <= δ}.

    ``mean_reward`` is μ(x) per point (e.g. a kernel's best per-strategy mean reward) and
    ``lipschitz`` the constant L of μ in the same metric. The curve's ``eps`` column holds δ.
    A sharp single optimum gives ≈ 0; a flat reward landscape gives the covering dimension.
    """
    pts = np.asarray(points, dtype=np.float64)
    mu = np.asarray(mean_reward, dtype=np.float64)
    if mu.shape != (pts.shape[0],):
        raise ValueError("mean_reward needs one value per point")
    if not lipschitz > 0:
        raise ValueError(f"lipschitz must be positive, got {lipschitz}")
    gaps = mu.max() - mu
    if deltas is None:
        radii = default_eps_grid(pts)
        deltas = radii * lipschitz
    rows = []
    for delta in np.sort(np.asarray(deltas, dtype=np.float64)):
        near = pts[gaps <= delta]
        rows.append((delta, covering_number(near, delta / lipschitz, rng=rng)))
    curve = pd.DataFrame(rows, columns=["eps", "n_balls"])
    slope, intercept, used = _fit_dimension(curve, pts.shape[0], min_balls=1, max_frac=0.1)
    curve = curve.assign(used=used.to_numpy())
    eps_used = curve.loc[curve["used"], "eps"]
    return DimensionFit(
        dimension=slope,
        intercept=intercept,
        eps_min=float(eps_used.min()) if len(eps_used) else float("nan"),
        eps_max=float(eps_used.max()) if len(eps_used) else float("nan"),
        n_points=int(pts.shape[0]),
        curve=curve,
    )
