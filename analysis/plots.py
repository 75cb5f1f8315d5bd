"""Matplotlib figures (Agg backend): every function takes tables and returns a Figure.

Titles say what is shown, axes carry units, logarithmic axes where growth rates are the point.
``to_png`` renders a figure to PNG bytes and closes it.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.slopes import v1_bound  # noqa: E402

_SIZE = (7.5, 4.6)


def to_png(fig: Figure, *, dpi: int = 110, tight: bool = True) -> bytes:
    """PNG bytes of ``fig``; the figure is closed. ``tight``: cropped to what is drawn, legends
    outside the axes included (the figure is laid out twice: once to measure, once to draw);
    ``tight=False`` for a figure laid out to fit its own canvas, drawn once."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight" if tight else None)
    plt.close(fig)
    return buffer.getvalue()


def _label(policy: str, env: str | None) -> str:
    return policy if env is None else f"{policy} [{env}]"


#: beyond this many series a legend goes below the plot, in columns, instead of over the lines
_INLINE_LEGEND = 8
_ENV_STYLE = {"tape": "-", "fitted": "--", "synthetic": "-", None: "-"}


def _series_style(index: int, n_series: int, env: str | None) -> dict:
    """One colour per policy (tab20 past 10 policies), one line style per environment.

    `index` and `n_series` count policies, not (policy, env) pairs, so a policy keeps its
    colour across environments."""
    cmap = plt.get_cmap("tab10" if n_series <= 10 else "tab20")
    return {"color": cmap(index % cmap.N), "ls": _ENV_STYLE.get(env, "-")}


def _policy_index(groups: list) -> tuple[dict, int]:
    """Policy -> colour index for (key, frame) groups whose key starts with the policy."""
    policies = sorted({key[0] if isinstance(key, tuple) else key for key, _ in groups})
    return {p: i for i, p in enumerate(policies)}, len(policies)


def _place_legend(fig: Figure, ax, n_series: int, *, loc: str = "upper left") -> None:
    """A legend over the axes for a few series, below the figure for many (readable at 48)."""
    if n_series <= _INLINE_LEGEND:
        ax.legend(fontsize=8, loc=loc)
        return
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=3 if n_series > 24 else 2, frameon=False)


def regret_figure(bands: pd.DataFrame, *, n_clusters: int = 3, n_strategies: int = 6) -> Figure:
    """Cumulative pseudo-regret (mean and bootstrap band) per policy, with v1's bound, log-log."""
    fig, ax = plt.subplots(figsize=_SIZE)
    t_max = 1.0
    groups = list(bands.groupby(["policy", "env"], sort=True))
    colour, n_policies = _policy_index(groups)
    for (policy, env), part in groups:
        t = part["t"].to_numpy()
        line = ax.plot(t, part["mean"], lw=1.8, label=_label(policy, env),
                       **_series_style(colour[policy], n_policies, env))[0]
        if part["lo"].notna().any():
            ax.fill_between(t, part["lo"], part["hi"], color=line.get_color(), alpha=0.2, lw=0)
        t_max = max(t_max, float(t.max()))
    grid = np.geomspace(2, max(t_max, 3), 100)
    ax.plot(grid, v1_bound(grid, n_clusters, n_strategies), "k--", lw=1,
            label=f"v1 bound K·|S|·√(8 T ln T), K={n_clusters}, |S|={n_strategies}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step t (attempts)")
    ax.set_ylabel("cumulative pseudo-regret R(t) (reward units)")
    ax.set_title("Cumulative pseudo-regret against the best arm of the current pool,\n"
                 "mean over units with 95 % bootstrap band", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    _place_legend(fig, ax, len(groups) + 1)
    return fig


def normalised_regret_figure(bands: pd.DataFrame) -> Figure:
    """R(t)/sqrt(t ln t) and R(t)/ln t per policy: a flat curve identifies the growth rate."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    groups = list(bands.groupby(["policy", "env"], sort=True))
    colour, n_policies = _policy_index(groups)
    for (policy, env), part in groups:
        part = part[part["t"] >= 3]
        style = _series_style(colour[policy], n_policies, env)
        axes[0].plot(part["t"], part["per_sqrt_t_ln_t"], label=_label(policy, env), **style)
        axes[1].plot(part["t"], part["per_ln_t"], label=_label(policy, env), **style)
    for ax, title in zip(axes, ("R(t) / √(t ln t): flat under the minimax rate",
                                "R(t) / ln t: flat under logarithmic (gap-dependent) regret"),
                         strict=True):
        ax.set_xscale("log")
        ax.set_xlabel("step t (attempts)")
        ax.set_ylabel("normalised regret (reward units)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    _place_legend(fig, axes[0], len(groups))
    return fig


def slopes_figure(slopes: pd.DataFrame) -> Figure:
    """Fitted log-log slope with its bootstrap interval per policy; 0.5 and 1 marked."""
    fig, ax = plt.subplots(figsize=(7.5, 0.5 + 0.45 * max(len(slopes), 2)))
    y = np.arange(len(slopes))
    err = np.vstack([slopes["slope"] - slopes["ci_low"], slopes["ci_high"] - slopes["slope"]])
    # rounding can put a degenerate interval a hair inside its point estimate
    ax.errorbar(slopes["slope"], y, xerr=np.clip(np.nan_to_num(err), 0.0, None), fmt="o",
                capsize=4)
    ax.axvline(0.5, color="grey", ls="--", lw=1, label="0.5 (√T)")
    ax.axvline(1.0, color="red", ls=":", lw=1, label="1 (linear)")
    verdicts = slopes["growth"] if "growth" in slopes else [""] * len(slopes)
    ax.set_yticks(y, [f"{_label(p, e)}: {g}" if g else _label(p, e)
                      for p, e, g in zip(slopes["policy"], slopes["env"], verdicts, strict=True)])
    # the two reference lines are named in the label: a legend below a tall axes floats away
    ax.set_xlabel("log-log slope of R(t) on [t_max/10, t_max] (95 % bootstrap CI)\n"
                  "dashed: 0.5 (√T rate); dotted: 1 (linear)")
    ax.set_title("Regret growth exponent, with the growth verdict after each name")
    ax.set_xlim(min(0.0, float(np.nanmin(slopes["ci_low"])) - 0.05),
                max(1.1, float(np.nanmax(slopes["ci_high"])) + 0.05))
    ax.set_ylim(-0.6, len(slopes) - 0.4)
    ax.grid(True, axis="x", alpha=0.3)
    return fig


def speedup_figure(curves: pd.DataFrame) -> Figure:
    """Best speedup so far versus step (left) and versus cumulative API cost (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    keys = ["policy", "env"] if "env" in curves else ["policy"]
    groups = list(curves.groupby(keys, sort=True))
    colour, n_policies = _policy_index(groups)
    for key, part in groups:
        label = _label(*key) if len(keys) == 2 else str(key[0])
        style = _series_style(colour[key[0]], n_policies, key[1] if len(keys) == 2 else None)
        axes[0].plot(part["t"], part["geomean_best_speedup"], label=label, **style)
        axes[1].plot(part["mean_cost_usd"], part["geomean_best_speedup"], label=label, **style)
    axes[0].set_xlabel("step t (attempts)")
    axes[0].set_title("Best speedup versus iteration", fontsize=10)
    axes[1].set_xlabel("mean cumulative API cost (USD)")
    axes[1].set_title("Best speedup versus API cost", fontsize=10)
    for ax in axes:
        ax.set_ylabel("geomean best speedup so far (×)")
        ax.grid(True, alpha=0.3)
    _place_legend(fig, axes[0], len(groups))
    return fig


def strategy_figure(table: pd.DataFrame) -> Figure:
    """Per-strategy success rate and share of best kernels, grouped by policy."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    policies = sorted(table["policy"].unique())
    strategies = sorted(table["strategy"].unique())
    width = 0.8 / max(len(policies), 1)
    x = np.arange(len(strategies))
    for i, policy in enumerate(policies):
        part = table[table["policy"] == policy].set_index("strategy").reindex(strategies)
        axes[0].bar(x + i * width, part["success_rate"].fillna(0) * 100, width, label=policy)
        axes[1].bar(x + i * width, part["share_of_best"].fillna(0) * 100, width, label=policy)
    for ax, title in zip(axes, ("Success rate (correct kernels)", "Share of best kernels"),
                         strict=True):
        ax.set_xticks(x + width * (len(policies) - 1) / 2, strategies, rotation=30, ha="right")
        ax.set_ylabel("% of attempts" if ax is axes[0] else "% of runs")
        ax.set_title(title, fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    return fig


def validity_figure(summary: pd.DataFrame) -> Figure:
    """η² (share of reward variance between clusters) per strategy and φ silhouette versus K."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for strategy, part in summary.groupby("strategy", sort=True):
        axes[0].plot(part["k"], part["mean_eta_sq"], marker="o", label=strategy)
    sil = summary.drop_duplicates("k").sort_values("k")
    axes[1].plot(sil["k"], sil["mean_silhouette"], marker="s", color="black")
    axes[0].set_ylabel("η² = SS_between / SS_total")
    axes[0].set_title("Reward variance explained by φ-clusters", fontsize=10)
    axes[1].set_ylabel("silhouette of k-means on z-scored φ")
    axes[1].set_title("Cluster separation in φ-space", fontsize=10)
    for ax in axes:
        ax.set_xlabel("number of clusters K")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    return fig


def covering_figure(curves: pd.DataFrame) -> Figure:
    """N(ε) versus ε per task, log-log; filled markers were used in the dimension fit."""
    fig, ax = plt.subplots(figsize=_SIZE)
    for (task, kind), part in curves.groupby(["task_id", "kind"], sort=True):
        line = ax.plot(part["eps"], part["n_balls"], lw=1, label=f"{task} ({kind})")[0]
        used = part[part["used"].astype(bool)]
        ax.plot(used["eps"], used["n_balls"], "o", color=line.get_color(), ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("radius ε (z-scored φ units; δ for zooming)")
    ax.set_ylabel("covering number N(ε) (balls)")
    ax.set_title("Covering numbers of the kernel pool in φ-space")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def lipschitz_figure(table: pd.DataFrame) -> Figure:
    """Per-strategy Lipschitz estimates (corrected max slope and extreme-value estimate)."""
    fig, ax = plt.subplots(figsize=_SIZE)
    x = np.arange(len(table))
    ax.bar(x - 0.2, table["lipschitz"], 0.4, label="max slope, noise-corrected")
    ax.bar(x + 0.2, table["lipschitz_extreme_value"], 0.4, label="extreme-value estimate")
    ax.set_xticks(x, table["strategy"], rotation=30, ha="right")
    ax.set_ylabel("L (reward per z-scored φ unit)")
    ax.set_title("Lipschitz constant of per-strategy reward in φ-space")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def pool_figure(points: pd.DataFrame, fits: pd.DataFrame) -> Figure:
    """Final regret R(T) versus pool size n per policy (mean ± band), with fitted n^β lines."""
    fig, ax = plt.subplots(figsize=_SIZE)
    for policy, part in points.groupby("policy", sort=True):
        part = part.sort_values("n_kernels")
        line = ax.plot(part["n_kernels"], part["mean"], marker="o", label=policy)[0]
        ax.fill_between(part["n_kernels"], part["lo"], part["hi"], color=line.get_color(),
                        alpha=0.2, lw=0)
        fit = fits[fits["policy"] == policy]
        if len(fit):
            row = fit.iloc[0]
            grid = np.geomspace(part["n_kernels"].min(), part["n_kernels"].max(), 50)
            ax.plot(grid, np.exp(row["intercept"]) * grid ** row["beta"], "--",
                    color=line.get_color(), lw=1,
                    label=f"fit β = {row['beta']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kernels in the pool n")
    ax.set_ylabel("pseudo-regret at fixed T, R(T) (reward units)")
    ax.set_title("Regret versus pool size at fixed horizon (clusters fixed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
