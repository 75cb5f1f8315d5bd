"""Paper-style metrics from live traces or replay results (KernelBand §5, TritonBench-G).

A *run* is one (policy, run_id, task) of a trace, or one (policy, env, task, seed) of a replay.

- **Correct %**: share of runs that produced at least one correct kernel (for replays: at least
  one successful attempt; the starting kernel k0 does not count).
- **Fast@1**: share of runs whose best correct kernel beats the reference (speedup > 1; for
  replays, the speedup is relative to k0).
- **Geomean speedup**: geometric mean of the best speedup over runs with a correct kernel.
- **Best speedup versus iteration**: per step, the geometric mean over runs of the best speedup so
  far (the paper's K-sweep figure); **speedup versus API cost** pairs it with mean cumulative cost.
- **Per strategy**: success rate (share of attempts that gave a correct kernel) and share of best
  kernels (share of runs whose best kernel was produced by that strategy).

Best-so-far in a trace counts each step's parent (its speedup is ref_ms / parent_ms, a correct
kernel already in the pool) and, where the attempt succeeded, the child.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kbsim.strategies import STRATEGIES


def geomean(values: np.ndarray | pd.Series) -> float:
    """Geometric mean of the positive finite values (NaN if there are none)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return float(np.exp(np.mean(np.log(arr)))) if arr.size else float("nan")


def _trace_progress(steps: pd.DataFrame) -> pd.DataFrame:
    """Per trace step: run keys, t, best speedup so far, cumulative cost, child speedup if ok."""
    data = steps[["policy", "run_id", "task_id", "step", "strategy", "status", "parent_ms",
                  "ref_ms", "speedup_vs_ref", "cost_usd"]].copy()
    data = data.sort_values(["policy", "run_id", "task_id", "step"], kind="stable")
    ok = data["status"] == "ok"
    ref = data["ref_ms"].astype("float64")
    parent = data["parent_ms"].astype("float64")
    parent_speedup = (ref / parent).where(parent > 0)
    child_speedup = data["speedup_vs_ref"].astype("float64").where(ok)
    data["child_speedup"] = child_speedup
    data["candidate"] = np.fmax(parent_speedup.to_numpy(), child_speedup.to_numpy())
    keys = ["policy", "run_id", "task_id"]
    data["best_speedup"] = data.groupby(keys, sort=False)["candidate"].cummax()
    data["cum_cost_usd"] = data["cost_usd"].astype("float64").fillna(0.0).groupby(
        [data[k] for k in keys], sort=False).cumsum()
    data["t"] = data.groupby(keys, sort=False).cumcount() + 1
    data["ok"] = ok
    return data


def trace_metrics(steps: pd.DataFrame) -> pd.DataFrame:
    """Per policy: runs, Correct %, Fast@1 %, geomean speedup, attempts, total cost (USD)."""
    progress = _trace_progress(steps)
    per_run = progress.groupby(["policy", "run_id", "task_id"], sort=True).agg(
        any_ok=("ok", "any"), best_child=("child_speedup", "max"), attempts=("t", "max"),
        cost_usd=("cum_cost_usd", "max"),
    ).reset_index()
    rows = []
    for policy, part in per_run.groupby("policy", sort=True):
        correct = part[part["any_ok"]]
        rows.append({
            "policy": policy,
            "runs": int(len(part)),
            "correct_pct": 100.0 * float(part["any_ok"].mean()),
            "fast1_pct": 100.0 * float((part["best_child"].fillna(0.0) > 1.0).mean()),
            "geomean_speedup": geomean(correct["best_child"]),
            "mean_attempts": float(part["attempts"].mean()),
            "total_cost_usd": float(part["cost_usd"].sum()),
        })
    return pd.DataFrame(rows)


def results_metrics(results: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, env): runs, Correct %, Fast@1 % vs k0, geomean final speedup, cost."""
    keys = ["policy", "env", "task_id", "seed"]
    grouped = results.groupby(keys, sort=True, observed=True)
    # each run's last step (steps are unique within a run); not a sort of every row: replays
    # hold millions
    last = results.loc[grouped["step"].idxmax().to_numpy()]
    any_ok = grouped["success"].any()
    last = last.join(any_ok.rename("any_ok"), on=keys)
    rows = []
    for (policy, env), part in last.groupby(["policy", "env"], sort=True):
        rows.append({
            "policy": policy,
            "env": env,
            "runs": int(len(part)),
            "correct_pct": 100.0 * float(part["any_ok"].mean()),
            "fast1_pct": 100.0 * float((part["best_speedup"] > 1.0).mean()),
            "geomean_speedup": geomean(part["best_speedup"]),
            "mean_attempts": float(part["step"].mean() - results["step"].min() + 1),
            "mean_cost_usd": float(part["cost_usd"].mean()),
            "mean_regret": float(part["cum_regret"].mean()),
        })
    return pd.DataFrame(rows)


def _curve(frame: pd.DataFrame, group: list[str]) -> pd.DataFrame:
    return frame.groupby([*group, "t"], sort=True).agg(
        geomean_best_speedup=("best_speedup", geomean),
        mean_cost_usd=("cum_cost_usd", "mean"),
        runs=("best_speedup", "size"),
    ).reset_index()


def speedup_curves_trace(steps: pd.DataFrame) -> pd.DataFrame:
    """Per policy and step t: geomean best speedup so far, mean cumulative cost, runs."""
    return _curve(_trace_progress(steps), ["policy"])


def speedup_curves_results(results: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, env) and step t: geomean best speedup (vs k0) so far, mean cost, runs."""
    data = results[["policy", "env", "step", "best_speedup", "cost_usd"]].copy()
    data["t"] = data["step"] - results["step"].min() + 1
    data = data.rename(columns={"cost_usd": "cum_cost_usd"})
    return _curve(data, ["policy", "env"])


def _share_of_best(best_strategy: pd.Series) -> pd.Series:
    counts = best_strategy.value_counts()
    return counts / counts.sum() if counts.sum() else counts


def strategy_table_trace(steps: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, strategy): attempts, success rate, share of runs' best kernels."""
    progress = _trace_progress(steps)
    ok = progress[progress["ok"] & progress["child_speedup"].notna()]
    best_idx = ok.groupby(["policy", "run_id", "task_id"])["child_speedup"].idxmax()
    best = ok.loc[best_idx, ["policy", "strategy"]]
    return _strategy_table(progress, best)


def strategy_table_results(results: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, strategy): attempts, success rate, share of runs' best kernels.

    A replay run's best kernel is credited to the strategy of the step where its best speedup
    last rose; runs that never improved on k0 credit no strategy.
    """
    data = results.sort_values(["policy", "env", "task_id", "seed", "step"], kind="stable").copy()
    names = np.array(STRATEGIES)
    data["strategy"] = names[np.clip(data["strategy"].to_numpy(dtype=np.int64), 0, len(names) - 1)]
    data["ok"] = data["success"].astype(bool)
    keys = ["policy", "env", "task_id", "seed"]
    prev = data.groupby(keys, sort=False)["best_speedup"].shift(1)
    rose = data["best_speedup"] > prev.fillna(1.0)
    risers = data[rose]
    best = risers.groupby(keys, sort=False).tail(1)[["policy", "strategy"]]
    return _strategy_table(data, best)


def _strategy_table(attempts: pd.DataFrame, best: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for policy, part in attempts.groupby("policy", sort=True):
        shares = _share_of_best(best.loc[best["policy"] == policy, "strategy"])
        for strategy, tried in part.groupby("strategy", sort=True):
            rows.append({
                "policy": policy,
                "strategy": strategy,
                "attempts": int(len(tried)),
                "success_rate": float(tried["ok"].mean()),
                "share_of_best": float(shares.get(strategy, 0.0)),
            })
    return pd.DataFrame(rows)
