"""The verdict's dot-and-whisker figure (Agg backend, the verdict table in)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from analysis.plots import plt  # pyplot, after analysis.plots selected the Agg backend

_ENV_COLOUR = {"tape": "tab:blue", "fitted": "tab:orange", "synthetic": "tab:green"}


def verdict_figure(table: pd.DataFrame, *, width_in: float = 5.6) -> Figure:
    """One row per policy, best at the top (ordered by the first environment): the geometric-mean
    best speedup over k0 at the last step (dot) and its 95 % interval (whisker), one colour per
    environment; the best policy's value is a dotted vertical line per environment."""
    envs = list(dict.fromkeys(table["env"]))
    order = list(table[table["env"] == envs[0]].sort_values("rank")["policy"])
    order += [p for p in dict.fromkeys(table["policy"]) if p not in order]
    y_of = {p: i for i, p in enumerate(order)}
    height = 0.9 + 0.2 * len(order)
    fig, ax = plt.subplots(figsize=(width_in, height))
    offsets = np.linspace(-0.18, 0.18, len(envs)) if len(envs) > 1 else [0.0]
    for env, offset in zip(envs, offsets, strict=True):
        part = table[table["env"] == env]
        colour = _ENV_COLOUR.get(str(env), "tab:purple")
        y = np.array([y_of[p] for p in part["policy"]]) + offset
        mid = part["geomean_speedup"].to_numpy()
        # a percentile interval can miss its point estimate by rounding (or with few tasks)
        err = np.clip(np.vstack([mid - part["ci_low"].to_numpy(),
                                 part["ci_high"].to_numpy() - mid]), 0.0, None)
        ax.errorbar(mid, y, xerr=err, fmt="o", ms=4, color=colour, elinewidth=1.2, capsize=2,
                    label=str(env))
        ax.axvline(float(part["geomean_speedup"].max()), color=colour, ls=":", lw=0.9)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order, fontsize=8)
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.2, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("geometric-mean best speedup over k0 at the last step (95 % interval)",
                  fontsize=8.5)
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    if len(envs) > 1:
        ax.legend(fontsize=8, loc="lower right", title="environment", title_fontsize=8)
    fig.tight_layout()
    return fig
