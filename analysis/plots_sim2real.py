"""Figures of the sim-to-real check and of per-task replay speedups (Agg backend, tables in)."""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure

from analysis.plots import plt  # pyplot, after analysis.plots selected the Agg backend

_ENV_COLOUR = {"tape": "tab:blue", "fitted": "tab:orange"}

#: the small multiples' geometry in inches: a panel's axes, the gaps between panels (tick
#: labels, titles) and the figure's margins (the y label, the suptitle; the x label and the
#: legend below). Fixed, so the figure needs no layout pass and fits its own canvas: it is
#: rendered once (`to_png` ``tight=False``), where ``tight_layout`` then the cropping to the
#: tight box laid out every text of every panel three times (TritonBench-G's 45 panels: 3.1
#: against 5.6 CPU-s a figure, medians of four run alternately on the 2-core machine)
_AXES_W, _AXES_H = 2.25, 1.7
_GAP_W, _GAP_H = 0.65, 0.6
_LEFT, _RIGHT, _TOP, _BOTTOM = 0.75, 0.2, 0.75, 0.9


def sim2real_figure(curves: pd.DataFrame, *, columns: int = 5) -> Figure:
    """Small multiples, one per task: the real best speedup so far (black) against each replay
    environment's predicted median (line) and 10-90 % band over seeds (shaded). Laid out to fit
    its canvas: render it with ``to_png(fig, tight=False)``."""
    tasks = sorted(curves["task_id"].unique())
    n_cols = max(1, min(columns, len(tasks)))
    n_rows = max(1, math.ceil(len(tasks) / n_cols))
    width = _LEFT + _RIGHT + n_cols * _AXES_W + (n_cols - 1) * _GAP_W
    height = _TOP + _BOTTOM + n_rows * _AXES_H + (n_rows - 1) * _GAP_H
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(width, height), squeeze=False,
                             sharex=True)
    fig.subplots_adjust(left=_LEFT / width, right=1 - _RIGHT / width,
                        bottom=_BOTTOM / height, top=1 - _TOP / height,
                        wspace=_GAP_W / _AXES_W, hspace=_GAP_H / _AXES_H)
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
    legend = fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8,
                        bbox_to_anchor=(0.5, 0.08 / height), frameon=False)
    title = fig.suptitle("Sim-to-real: predicted (replay on the exploration trace) vs real best "
                         "speedup", fontsize=10, y=1 - 0.2 / height, va="top")
    # a grid of one or two panels is narrower than its legend or title: widen the margins
    renderer = fig.canvas.get_renderer()
    needed = max(a.get_window_extent(renderer).width for a in (legend, title)) / fig.dpi + 0.3
    if needed > width:
        side = (needed - width) / 2
        fig.set_size_inches(needed, height)
        fig.subplots_adjust(left=(_LEFT + side) / needed, right=1 - (_RIGHT + side) / needed)
    return fig
