"""Per-task best speedup found by each policy in replay, with intervals over seeds.

For each (policy, env, task) of replay results, the best speedup (over the task's k0) at each
episode's last step, summarised over seeds: the geometric mean with its 95 % interval (normal
approximation on the log speedups: exp(mean ± 1.96 sd / sqrt(n))), and the median with the
10-90 % spread of single runs.

NOTE (D60): DESIGN.md asks for tape confidence bands from bootstrap resampling of the tapes; here
(and in analysis.sim2real's bands) every environment's interval is over seeds. On a tape the
seeds vary the policy's and the exhausted tapes' draws over one recorded dataset, so the
interval leaves out the variability of recording the trace again, and is narrower than a
tape bootstrap's would be.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

Z95 = 1.959964


def task_speedup_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (policy, env, task): seeds, steps, geomean [ci_low, ci_high], q10, median,
    q90 of the final best speedup over seeds."""
    keys = ["policy", "env", "task_id"]
    data = results[[*keys, "seed", "step", "best_speedup"]]
    last = data.sort_values("step", kind="stable").groupby([*keys, "seed"], sort=False).tail(1)
    last = last.assign(log_speedup=np.log(last["best_speedup"].to_numpy(np.float64)))
    grouped = last.groupby(keys, sort=True)
    table = grouped.agg(
        seeds=("seed", "size"), steps=("step", "max"), mean_log=("log_speedup", "mean"),
        sd_log=("log_speedup", "std"),
        q10=("best_speedup", lambda v: float(np.quantile(v, 0.1))),
        median=("best_speedup", "median"),
        q90=("best_speedup", lambda v: float(np.quantile(v, 0.9))),
    ).reset_index()
    table["steps"] = table["steps"] - int(results["step"].min()) + 1
    half = Z95 * table.pop("sd_log").fillna(0.0) / np.sqrt(table["seeds"])
    mean_log = table.pop("mean_log")
    table.insert(5, "geomean", np.exp(mean_log))
    table.insert(6, "ci_low", np.exp(mean_log - half))
    table.insert(7, "ci_high", np.exp(mean_log + half))
    return table


def task_speedup_wide(table: pd.DataFrame, *, policies: Sequence[str] | None = None,
                      digits: int = 2) -> pd.DataFrame:
    """Rows policy [env], one column per task: ``geomean [ci_low, ci_high]`` as text."""
    part = table if policies is None else table[table["policy"].isin(list(policies))]
    cells = part.assign(
        row=part["policy"] + " [" + part["env"] + "]",
        cell=[f"{g:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]" for g, lo, hi in
              zip(part["geomean"], part["ci_low"], part["ci_high"], strict=True)],
    )
    wide = cells.pivot(index="row", columns="task_id", values="cell")
    wide.columns.name = None
    return wide.reset_index().rename(columns={"row": "policy [env]"})
