"""Summary table of a sweep: per policy x env x horizon, means with 95% intervals over episodes."""

from __future__ import annotations

import numpy as np
import pandas as pd


def summarize(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (policy, env, horizon): episodes, mean final best speedup and its 95%
    normal-approximation interval half-width over episodes (seeds x tasks), mean cumulative
    pseudo-regret (NaN-free steps only) with its half-width, mean coverage and % truncated."""
    keys = ["policy", "env", "horizon"]
    grouped = summary.groupby(keys, sort=False)
    table = grouped.agg(
        episodes=("seed", "size"),
        speedup=("final_best_speedup", "mean"),
        speedup_sd=("final_best_speedup", "std"),
        regret=("cum_regret", "mean"),
        regret_sd=("cum_regret", "std"),
        coverage=("coverage", "mean"),
        truncated_pct=("truncated", "mean"),
    ).reset_index()
    root_n = np.sqrt(table["episodes"].clip(lower=1))
    table["speedup_ci95"] = 1.96 * table.pop("speedup_sd").fillna(0.0) / root_n
    table["regret_ci95"] = 1.96 * table.pop("regret_sd").fillna(0.0) / root_n
    table["truncated_pct"] *= 100.0
    order = ["policy", "env", "horizon", "episodes", "speedup", "speedup_ci95", "regret",
             "regret_ci95", "coverage", "truncated_pct"]
    return table[order]


def format_table(table: pd.DataFrame) -> str:
    """The summary as aligned text: ``speedup 1.84 ± 0.03`` style columns."""
    view = pd.DataFrame(
        {
            "policy": table["policy"],
            "env": table["env"],
            "T": table["horizon"],
            "episodes": table["episodes"],
            "best speedup (95% CI)": [
                f"{m:.3f} ± {h:.3f}" for m, h in zip(table["speedup"], table["speedup_ci95"],
                                                     strict=True)
            ],
            "cum regret (95% CI)": [
                f"{m:.3f} ± {h:.3f}" for m, h in zip(table["regret"], table["regret_ci95"],
                                                     strict=True)
            ],
            "coverage": ["n/a" if np.isnan(c) else f"{c:.2f}" for c in table["coverage"]],
            "truncated %": [f"{t:.1f}" for t in table["truncated_pct"]],
        }
    )
    return view.to_string(index=False)
