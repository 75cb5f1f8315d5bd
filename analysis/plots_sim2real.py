"""Figures of the sim-to-real check and of per-task replay speedups (Agg backend, tables in)."""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure

from analysis.plots import plt  # pyplot, after analysis.plots selected the Agg backend

_ENV_COLOUR = {"tape": "tab:blue", "fitted": "tab:orange"}


def sim2real_figure(curves: pd.DataFrame, *, columns: int = 5) -> Figure:
    """Small multiples, one per task: the real best speedup so far (black) against each replay
    environment's predicted median (line) and 10-90 % band over seeds (shaded)."""
    tasks = sorted(curves["task_id"].unique())
    n_cols = max(1, min(columns, len(tasks)))
    n_rows = max(1, math.ceil(len(tasks) / n_cols))
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(2.9 * n_cols, 2.3 * n_rows + 0.6),
                             squeeze=False, sharex=True)
    for ax, task in zip(axes.ravel(), tasks, strict=False):
        part = curves[curves["task_id"] == task]
        for env, env_part in part.groupby("env", sort=True):
            env_part = env_part.sort_values("t")
            colour = _ENV_COLOUR.get(str(env), "tab:green")
            ax.fill_between(env_part["t"], env_part["pred_q10"], env_part["pred_q90"],
                            color=colour, alpha=0.2, linewidth=0)
            ax.plot(env_part["t"], env_part["pred_median"], color=colour, lw=1.3,
                    label=f"replay [{env}] median, 10-90 %")
        real = part.drop_duplicates("t").sort_values("t").dropna(subset=["real"])
        ax.plot(real["t"], real["real"], color="black", lw=1.6, label="real run")
        ax.set_title(task, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(tasks):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("attempt t", fontsize=8)
    for row in axes:
        row[0].set_ylabel("best speedup so far", fontsize=8)
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
               bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("Sim-to-real: predicted (replay on the exploration trace) vs real best speedup",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return fig
