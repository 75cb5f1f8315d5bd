"""Regret growth: log-log slope fits with bootstrap intervals, growth classification, v1 bound.

A regret curve R(t) that grows like t^b (times a power of ln t) is a straight line of slope b in
log-log coordinates. ``fit_slope`` fits that line on a log-spaced grid of horizons (so the long
tail of large t does not dominate), optionally after dividing out (ln t)^p: the minimax rate
R(T) ~ sqrt(K T ln T) has a *raw* local slope of 0.5 + 0.5/ln T (about 0.57 at T = 1000), and
dividing by (ln T)^0.5 recovers the exponent 0.5 itself. Intervals come from a percentile
bootstrap over run units (seeds, or tasks for tape replays): resample units with replacement,
average, refit.

The bound of KernelBand v1 (first arXiv version, Theorem 1) without its two ε terms:
R(T) <= K·|S|·sqrt(8 T ln T).

``growth_verdict`` names a growth rate only where the horizon can tell rates apart; the criterion
(all three must hold, else the verdict is "inconclusive" with the reason):

1. **Enough pulls.** T >= 10·A, where A = K·|S| is the number of (cluster, strategy) arms of the
   paper's bandit (K from the policy spec, default 3; |S| = 6). Below that an arm is pulled a
   handful of times at most: a learner is still exploring and its regret grows about linearly
   whatever its asymptotic rate. Policies without clusters face more arms ((kernel, strategy)
   pairs), so for them this is necessary, not sufficient.
2. **A fixed comparator.** Replay's pseudo-regret compares each pull with the best (kernel,
   strategy) arm of the *current* pool. In a growing pool that best arm improves as better
   kernels join, so R(t) also measures a moving target: per-step regret can rise with t, which is
   what a log-log slope above 1 reflects. If the comparator's mean rises over the fitted window
   by at least a quarter of the mean per-step regret there, no rate is named.
3. **Separated alternatives.** The slope's bootstrap interval must lie entirely on one side of
   0.9 (linear above, sublinear below); sublinear curves are then called logarithmic or power by
   which model fits better (``classify_growth``). A curve that does not grow is "flat".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from analysis.regret import bootstrap_means


@dataclass(frozen=True)
class SlopeFit:
    """Exponent b of R(t) ∝ t^b (ln t)^log_power, fitted on t in [t_min, t_max]."""

    slope: float
    ci_low: float
    ci_high: float
    intercept: float
    log_power: float
    t_min: float
    t_max: float
    n_units: int
    n_boot: int
    ci_level: float


@dataclass(frozen=True)
class GrowthFit:
    """Which of R ≈ a + b·ln t (logarithmic) and R ≈ c·t^β (power) describes a curve better.

    ``kind`` is "logarithmic", "power", "linear" (β ≥ 0.9) or "flat" (no growth). The relative
    RMSEs are of each model's prediction of R on the fitted grid; ``slope_first_half`` and
    ``slope_second_half`` are the log-log slopes over the two halves of the log-t range (a
    logarithmic curve has a falling local slope, a power law a constant one).
    """

    kind: str
    power_slope: float
    log_coef: float
    log_intercept: float
    rel_rmse_log: float
    rel_rmse_power: float
    slope_first_half: float
    slope_second_half: float


#: a growth verdict needs T >= MIN_PULLS_PER_ARM · arms
MIN_PULLS_PER_ARM = 10
#: log-log slope separating linear (no learning) from sublinear growth
LINEAR_SLOPE = 0.9
#: the comparator drifts when it rises by this share of the mean per-step regret (fit window)
DRIFT_SHARE = 0.25


@dataclass(frozen=True)
class GrowthVerdict:
    """A growth rate the data supports ("logarithmic", "power", "linear", "flat") or
    "inconclusive", and the reason in one sentence. ``cause`` names the criterion an
    inconclusive verdict failed first ("pulls", "drift", "interval", "units"; "" otherwise);
    ``drifts`` whether the comparator drifted (reported even when the horizon failed first)."""

    kind: str
    reason: str
    cause: str = ""
    drifts: bool = False


def v1_bound(t: np.ndarray, n_clusters: int, n_strategies: int) -> np.ndarray:
    """KernelBand v1's stated regret bound K·|S|·sqrt(8 t ln t) (ε terms omitted); 0 at t <= 1."""
    t_arr = np.asarray(t, dtype=np.float64)
    safe = np.maximum(t_arr, 1.0)
    return n_clusters * n_strategies * np.sqrt(8.0 * safe * np.log(safe))


def log_grid(t: np.ndarray, t_min: float, t_max: float, n_points: int = 40) -> np.ndarray:
    """Indices into sorted ``t`` of about ``n_points`` log-spaced horizons in [t_min, t_max]."""
    t_arr = np.asarray(t, dtype=np.float64)
    inside = np.flatnonzero((t_arr >= t_min) & (t_arr <= t_max))
    if inside.size <= n_points:
        return inside
    targets = np.geomspace(t_arr[inside[0]], t_arr[inside[-1]], n_points)
    picked = np.searchsorted(t_arr, targets)
    return np.unique(np.clip(picked, inside[0], inside[-1]))


def _fit_line(log_t: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    slope, intercept = np.polyfit(log_t, z, 1)
    return float(slope), float(intercept)


def _boot_slopes(t_fit: np.ndarray, boot: np.ndarray, log_power: float,
                 one_fit: Callable[[np.ndarray], tuple[float, float]]) -> np.ndarray:
    """The least-squares slope of each bootstrap mean curve (rows of `boot`): one closed-form
    fit for all rows whose points are all finite (a loop of ``np.polyfit`` took seconds per
    analysis at 1000 resamples), the row-by-row fit for the others."""
    log_t, _ = _transform(t_fit, np.ones_like(t_fit), log_power)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(boot) - log_power * np.log(np.log(t_fit))
    full = np.isfinite(z).all(axis=1)
    slopes = np.empty(boot.shape[0])
    x = log_t - log_t.mean()
    zf = z[full]
    slopes[full] = ((zf - zf.mean(axis=1, keepdims=True)) @ x) / (x @ x)
    for row in np.flatnonzero(~full):
        slopes[row] = one_fit(boot[row])[0]
    return slopes


def _transform(t: np.ndarray, r: np.ndarray, log_power: float) -> tuple[np.ndarray, np.ndarray]:
    log_t = np.log(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.log(r) - log_power * np.log(np.log(t))
    return log_t, z


def fit_slope(
    t: np.ndarray,
    curves: np.ndarray,
    *,
    rng: np.random.Generator,
    log_power: float = 0.0,
    t_min: float | None = None,
    t_max: float | None = None,
    n_boot: int = 1000,
    ci_level: float = 0.95,
    n_points: int = 40,
) -> SlopeFit:
    """Fit b in R(t) ∝ t^b (ln t)^log_power to the mean of ``curves`` (units × len(t)).

    ``t`` are horizons (> 1, increasing); each row of ``curves`` is one unit's regret at those
    horizons. Default range: t_min = max(2, t_max / 10), t_max = last horizon. Non-positive mean
    regret at a horizon is dropped from that fit (log undefined).
    """
    t_arr = np.asarray(t, dtype=np.float64)
    mat = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    if mat.shape[1] != t_arr.size:
        raise ValueError(f"curves have {mat.shape[1]} columns but t has {t_arr.size} horizons")
    if t_arr.size < 3 or np.any(np.diff(t_arr) <= 0):
        raise ValueError("need at least 3 strictly increasing horizons to fit a slope")
    hi = float(t_arr[-1]) if t_max is None else float(t_max)
    lo = max(2.0, hi / 10.0) if t_min is None else max(float(t_min), 1.0 + 1e-9)
    idx = log_grid(t_arr, lo, hi, n_points)
    if idx.size < 3:
        raise ValueError(f"fewer than 3 horizons in [{lo:g}, {hi:g}]; widen the fit range")
    t_fit = t_arr[idx]

    def one_fit(mean_curve: np.ndarray) -> tuple[float, float]:
        log_t, z = _transform(t_fit, mean_curve, log_power)
        ok = np.isfinite(z)
        if ok.sum() < 3:
            return float("nan"), float("nan")
        return _fit_line(log_t[ok], z[ok])

    sub = mat[:, idx]
    slope, intercept = one_fit(sub.mean(axis=0))
    boot = bootstrap_means(sub, n_boot=n_boot, rng=rng)
    boot_slopes = _boot_slopes(t_fit, boot, log_power, one_fit)
    boot_slopes = boot_slopes[np.isfinite(boot_slopes)]
    alpha = (1.0 - ci_level) / 2.0
    if boot_slopes.size and mat.shape[0] > 1:
        low, high = np.quantile(boot_slopes, [alpha, 1.0 - alpha])
    else:
        low = high = float("nan")
    return SlopeFit(
        slope=slope,
        ci_low=float(low),
        ci_high=float(high),
        intercept=intercept,
        log_power=float(log_power),
        t_min=float(t_fit[0]),
        t_max=float(t_fit[-1]),
        n_units=int(mat.shape[0]),
        n_boot=int(n_boot),
        ci_level=float(ci_level),
    )


def classify_growth(
    t: np.ndarray,
    mean_curve: np.ndarray,
    *,
    t_min: float | None = None,
    n_points: int = 40,
) -> GrowthFit:
    """Compare a logarithmic and a power-law model of one mean regret curve (see GrowthFit)."""
    t_arr = np.asarray(t, dtype=np.float64)
    r = np.asarray(mean_curve, dtype=np.float64)
    hi = float(t_arr[-1])
    lo = max(2.0, hi / 10.0) if t_min is None else float(t_min)
    idx = log_grid(t_arr, lo, hi, n_points)
    tf, rf = t_arr[idx], r[idx]
    scale = float(np.mean(np.abs(rf))) or 1.0
    log_coef, log_intercept = _fit_line(np.log(tf), rf)
    if np.all(rf > 0):
        power_slope, power_icpt = _fit_line(np.log(tf), np.log(rf))
        pred_power = np.exp(power_icpt) * tf**power_slope
        half = tf.size // 2
        s1 = _fit_line(np.log(tf[: half + 1]), np.log(rf[: half + 1]))[0]
        s2 = _fit_line(np.log(tf[half:]), np.log(rf[half:]))[0]
    else:
        power_slope, pred_power, s1, s2 = float("nan"), np.full_like(rf, np.nan), np.nan, np.nan
    rmse_log = float(np.sqrt(np.mean((log_intercept + log_coef * np.log(tf) - rf) ** 2)) / scale)
    rmse_pow = float(np.sqrt(np.mean((pred_power - rf) ** 2)) / scale)
    growth = (rf[-1] - rf[0]) / scale
    if not np.isfinite(power_slope) or growth < 1e-3:
        kind = "flat"
    elif power_slope >= 0.9:
        kind = "linear"
    elif rmse_log <= rmse_pow:
        kind = "logarithmic"
    else:
        kind = "power"
    return GrowthFit(
        kind=kind,
        power_slope=float(power_slope),
        log_coef=float(log_coef),
        log_intercept=float(log_intercept),
        rel_rmse_log=rmse_log,
        rel_rmse_power=rmse_pow,
        slope_first_half=float(s1),
        slope_second_half=float(s2),
    )


def growth_verdict(
    fit: SlopeFit,
    growth: GrowthFit,
    *,
    horizon: float,
    n_arms: int,
    comparator_rise: float = 0.0,
    regret_per_step: float = float("nan"),
    min_pulls: float = MIN_PULLS_PER_ARM,
) -> GrowthVerdict:
    """The growth rate of one regret curve, or "inconclusive" (criterion: module docstring).

    ``comparator_rise`` is how much the best arm's mean rose over the fitted window and
    ``regret_per_step`` the mean per-step regret there (both averaged over units).
    """
    pulls = horizon / n_arms if n_arms > 0 else float("inf")
    drifts = (comparator_rise > 0 and np.isfinite(regret_per_step)
              and comparator_rise >= DRIFT_SHARE * max(regret_per_step, 0.0))
    drift = (f"the comparator (best arm of the growing pool) rose by {comparator_rise:.3g} over "
             f"t = {fit.t_min:g}..{fit.t_max:g}, against a mean per-step regret of "
             f"{regret_per_step:.3g}, so R(t) chases a moving target"
             + (f" (which is what a slope of {fit.slope:.2f} > 1 reflects)" if fit.slope > 1
                else ""))
    if pulls < min_pulls:
        reason = (f"inconclusive at T = {horizon:g} ({n_arms} arms): {pulls:.1f} pulls per arm "
                  f"on average, a growth rate needs >= {min_pulls:g} (T >= {min_pulls * n_arms:g})")
        return GrowthVerdict("inconclusive", reason + (f"; and {drift}" if drifts else ""),
                             "pulls", drifts)
    if growth.kind == "flat":
        return GrowthVerdict("flat", f"regret stops growing by T = {horizon:g}", "", drifts)
    if drifts:
        return GrowthVerdict("inconclusive", f"inconclusive: {drift}", "drift", True)
    if not (np.isfinite(fit.ci_low) and np.isfinite(fit.ci_high)):
        return GrowthVerdict("inconclusive",
                             f"inconclusive: {fit.n_units} unit(s), no slope interval", "units")
    interval = f"slope {fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}]"
    if fit.ci_low >= LINEAR_SLOPE:
        return GrowthVerdict("linear", f"linear: {interval} lies above {LINEAR_SLOPE}")
    if fit.ci_high < LINEAR_SLOPE:
        kind = growth.kind if growth.kind in ("logarithmic", "power") else "power"
        return GrowthVerdict(kind, f"{kind}: {interval} lies below {LINEAR_SLOPE} and the "
                                   f"{kind} model fits R(t) better")
    return GrowthVerdict("inconclusive",
                         f"inconclusive: {interval} straddles {LINEAR_SLOPE}, so linear and "
                         f"sublinear growth both fit", "interval")
