"""KernelBench's ``fast_p`` per level, from a live trace (Ouyang et al., KernelBench §4).

``fast_p`` is the share of a level's problems whose kernel is correct and more than ``p`` times
faster than the baseline; ``fast_0`` is the share with a correct kernel. Here a problem's kernel is
the best correct kernel a run found (as Fast@1 of ``analysis.metrics``: k0 does not count), one
row per (policy, level), for p = 0, 1, 1.5, 2 and two baselines:

- **eager**: the PyTorch reference as the evaluator timed it (``speedup_vs_ref``);
- **compile**: ``torch.compile`` (inductor, default mode), from its time per task, ``compile_ms``
  (task id -> ms, timed by the same protocol on the same machine); without it the columns are
  empty, and a task missing from it counts as not faster.

Levels come from KernelBench task ids (``kernelbench/<level>/<problem>``); other tasks are left
out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from kbsim.trace.schema import K0_STRATEGY

#: KernelBench's thresholds
PS: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)
PREFIX = "kernelbench/"


def _column(baseline: str, p: float) -> str:
    return f"fast_{p:g}_{baseline}_pct"


def best_per_run(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, run, KernelBench task): its level, the best correct child's speedup over
    eager and its time (ms), NaN where no child was correct."""
    data = steps[steps["task_id"].astype(str).str.startswith(PREFIX)]
    if "strategy" in data:  # k0 does not count, an LLM-written one (D100) neither
        data = data[data["strategy"] != K0_STRATEGY]
    data = data[["policy", "run_id", "task_id", "status", "child_ms", "speedup_vs_ref"]].copy()
    ok = data["status"] == "ok"
    data["speedup"] = data["speedup_vs_ref"].astype("float64").where(ok)
    data["ms"] = data["child_ms"].astype("float64").where(ok)
    per_run = data.groupby(["policy", "run_id", "task_id"], sort=True).agg(
        best_speedup=("speedup", "max"), best_ms=("ms", "min")).reset_index()
    per_run["level"] = per_run["task_id"].str.split("/").str[1]
    return per_run


def fast_p_table(steps: pd.DataFrame, compile_ms: Mapping[str, float] | None = None,
                 ps: Sequence[float] = PS) -> pd.DataFrame:
    """One row per (policy, level): problems, then ``fast_<p>_eager_pct`` and
    ``fast_<p>_compile_pct`` for each p (percent of the level's problems)."""
    per_run = best_per_run(steps)
    columns = ["policy", "level", "problems",
               *(_column(b, p) for b in ("eager", "compile") for p in ps)]
    if per_run.empty:
        return pd.DataFrame(columns=columns)
    correct = per_run["best_speedup"].notna()
    if compile_ms is None:
        over_compile = pd.Series(np.nan, index=per_run.index)
    else:
        base = per_run["task_id"].map(lambda t: compile_ms.get(t, np.nan)).astype("float64")
        over_compile = (base / per_run["best_ms"]).where(correct).fillna(0.0)
    rows = []
    for (policy, level), part in per_run.groupby(["policy", "level"], sort=True):
        row: dict[str, object] = {"policy": policy, "level": level, "problems": int(len(part))}
        ok = correct.loc[part.index]
        for p in ps:
            eager = part["best_speedup"].fillna(0.0)
            row[_column("eager", p)] = 100.0 * float((ok & ((eager > p) | (p == 0))).mean())
            if compile_ms is None:
                row[_column("compile", p)] = np.nan
            else:
                over = over_compile.loc[part.index]
                row[_column("compile", p)] = 100.0 * float((ok & ((over > p) | (p == 0))).mean())
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)
