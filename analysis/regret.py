"""Cumulative pseudo-regret curves with bootstrap confidence bands, and their normalised forms.

Pseudo-regret R(t) = Σ_{u<=t} (μ* − μ(a_u)) is recorded per step by replay (RESULTS_SCHEMA
``cum_regret``). A *unit* is one independent replication of a run: a seed for the synthetic and
fitted environments; for the tape environment, seeds replay the same recorded tapes and are not
independent draws of the environment, so the unit is the task (its curve is the mean over its
seeds) and bands come from resampling tapes, as DESIGN.md asks. With a single task the tape
environment falls back to seeds (and says so in ``unit``).

Bands are percentile-bootstrap intervals of the mean over units. Normalised curves divide the
mean by sqrt(t ln t) (flat under the minimax rate) and by ln t (flat under gap-dependent,
logarithmic regret).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class UnitCurves:
    """Regret of every unit at common horizons: ``values[unit, j]`` at horizon ``t[j]``."""

    t: np.ndarray
    values: np.ndarray
    unit: str  # "seed" or "task"
    n_units: int


def bootstrap_means(
    values: np.ndarray, *, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """Means of ``n_boot`` bootstrap resamples of the rows of ``values`` (n_boot × columns).

    Resampling is done with multinomial weights, so memory stays O(n_boot × columns).
    """
    mat = np.atleast_2d(np.asarray(values, dtype=np.float64))
    n = mat.shape[0]
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64) / n
    return weights @ mat


def unit_curves(
    frame: pd.DataFrame, *, value: str = "cum_regret", env: str | None = None
) -> UnitCurves:
    """Pivot one (policy, env) slice of replay results to units × horizons.

    Horizons are t = step − min(step) + 1 (1-based). Only horizons every unit reached are kept
    (a `stop` tape can end a run early).
    """
    if frame.empty:
        raise ValueError("no rows to build regret curves from")
    env_name = env if env is not None else str(frame["env"].iloc[0]) if "env" in frame else ""
    data = frame[["task_id", "seed", "step", value]].copy()
    data["t"] = data["step"] - data["step"].min() + 1
    by_task = env_name == "tape" and data["task_id"].nunique() > 1
    keys = ["task_id"] if by_task else ["task_id", "seed"]
    wide = data.pivot_table(index=keys, columns="t", values=value, aggfunc="mean")
    wide = wide.dropna(axis=1, how="any")
    if wide.shape[1] == 0:
        raise ValueError("units share no common horizon")
    return UnitCurves(
        t=wide.columns.to_numpy(dtype=np.float64),
        values=wide.to_numpy(dtype=np.float64),
        unit="task" if by_task else "seed",
        n_units=int(wide.shape[0]),
    )


def band(
    curves: UnitCurves, *, rng: np.random.Generator, n_boot: int = 1000, ci_level: float = 0.95
) -> pd.DataFrame:
    """Mean curve and its percentile-bootstrap band: columns t, mean, lo, hi, plus normalised."""
    mean = curves.values.mean(axis=0)
    if curves.n_units > 1:
        boot = bootstrap_means(curves.values, n_boot=n_boot, rng=rng)
        alpha = (1.0 - ci_level) / 2.0
        lo, hi = np.quantile(boot, [alpha, 1.0 - alpha], axis=0)
    else:
        lo = hi = np.full_like(mean, np.nan)
    t = curves.t
    with np.errstate(divide="ignore", invalid="ignore"):
        log_t = np.where(t > 1, np.log(t), np.nan)
        per_sqrt_tlogt = mean / np.sqrt(t * log_t)
        per_logt = mean / log_t
    return pd.DataFrame(
        {
            "t": t,
            "mean": mean,
            "lo": lo,
            "hi": hi,
            "per_sqrt_t_ln_t": per_sqrt_tlogt,
            "per_ln_t": per_logt,
        }
    )


def regret_bands(
    results: pd.DataFrame,
    *,
    rng: np.random.Generator,
    n_boot: int = 1000,
    ci_level: float = 0.95,
) -> pd.DataFrame:
    """Bands for every (policy, env) in replay results that carries finite ``cum_regret``.

    Returns long-form rows: policy, env, unit, n_units, t, mean, lo, hi, per_sqrt_t_ln_t,
    per_ln_t. Slices whose regret is unknown (NaN: means not estimable) are skipped.
    """
    frames = []
    finite = results[np.isfinite(results["cum_regret"].to_numpy(dtype=np.float64, na_value=np.nan))]
    for (policy, env), part in finite.groupby(["policy", "env"], sort=True):
        curves = unit_curves(part, env=str(env))
        out = band(curves, rng=rng, n_boot=n_boot, ci_level=ci_level)
        out.insert(0, "n_units", curves.n_units)
        out.insert(0, "unit", curves.unit)
        out.insert(0, "env", env)
        out.insert(0, "policy", policy)
        frames.append(out)
    if not frames:
        return pd.DataFrame(
            columns=["policy", "env", "unit", "n_units", "t", "mean", "lo", "hi",
                     "per_sqrt_t_ln_t", "per_ln_t"]
        )
    return pd.concat(frames, ignore_index=True)
