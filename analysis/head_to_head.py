"""Two live policy runs on the same tasks, head to head (issue #19: KernelBand v2 against the
GEAK-like greedy baseline on TritonBench-G).

Per task, from each trace's steps (`analysis.metrics` definitions, the task's reference being
the operator's gold code on TritonBench-G): whether a correct kernel was found, whether the best
one beats the reference (Fast@1), and the best correct speedup. Overall: Correct %, Fast@1 % and
the geometric-mean best speedup over the tasks with a correct kernel, for each policy, and their
difference (percentage points; for the geomean the ratio A / B) with a **paired bootstrap**
interval: operators are resampled with replacement, the same ones for both policies, so the
interval reflects which tasks the benchmark happens to hold, not only each run's noise.

A trace with several runs of a task (seeds) counts the task once: the share of its runs that
were correct / fast, and the mean log best speedup over its correct runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.metrics import _trace_progress

#: the summary's metrics, in order: (name, how the difference reads)
METRICS = (("Correct %", "A - B, points"), ("Fast@1 %", "A - B, points"),
           ("geomean speedup", "A / B"))


@dataclass
class HeadToHead:
    """What `head_to_head` found; `summary` and `per_task` are ready to write."""

    a: str
    b: str
    per_task: pd.DataFrame
    summary: pd.DataFrame
    n_boot: int
    seed: int
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)


def task_outcomes(steps: pd.DataFrame) -> pd.DataFrame:
    """Per task of one trace: runs, correct share, Fast@1 share, mean log best speedup (NaN
    where no run found a correct kernel) and the best speedup that log stands for."""
    progress = _trace_progress(steps)
    per_run = progress.groupby(["run_id", "task_id"], sort=True).agg(
        any_ok=("ok", "any"), best=("child_speedup", "max")).reset_index()
    per_run["fast"] = per_run["best"].fillna(0.0) > 1.0
    per_run["log_best"] = np.log(per_run["best"].where(per_run["any_ok"] & (per_run["best"] > 0)))
    table = per_run.groupby("task_id", sort=True).agg(
        runs=("run_id", "nunique"), correct=("any_ok", "mean"), fast1=("fast", "mean"),
        log_best=("log_best", "mean"))
    table["best_speedup"] = np.exp(table["log_best"])
    return table


def _policy(steps: pd.DataFrame, name: str) -> str:
    policies = sorted(set(steps["policy"].astype(str)))
    if len(policies) != 1:
        raise ValueError(f"trace {name} holds {len(policies)} policies ({', '.join(policies)}); "
                         f"pass traces of one policy each.")
    return policies[0]


def _geomean_log(values: np.ndarray) -> np.ndarray:
    """exp(mean) over the finite entries of each row (NaN where a row has none)."""
    finite = np.isfinite(values)
    counts = finite.sum(axis=-1)
    sums = np.where(finite, values, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.exp(sums / counts)


def head_to_head(a_steps: pd.DataFrame, b_steps: pd.DataFrame, *, a_name: str = "A",
                 b_name: str = "B", n_boot: int = 2000, seed: int = 0) -> HeadToHead:
    """Compare two traces' policies on their common tasks (module docstring). Raises
    ValueError, one sentence, when they share no task or a trace mixes policies."""
    if n_boot < 10:
        raise ValueError(f"n_boot must be at least 10, got {n_boot}.")
    a_policy, b_policy = _policy(a_steps, a_name), _policy(b_steps, b_name)
    a_tasks, b_tasks = task_outcomes(a_steps), task_outcomes(b_steps)
    common = sorted(set(a_tasks.index) & set(b_tasks.index))
    if not common:
        raise ValueError(f"traces {a_name} and {b_name} share no task: nothing to compare.")
    a, b = a_tasks.loc[common], b_tasks.loc[common]
    per_task = pd.DataFrame({
        "task_id": common,
        "a_correct": a["correct"].to_numpy(), "b_correct": b["correct"].to_numpy(),
        "a_fast1": a["fast1"].to_numpy(), "b_fast1": b["fast1"].to_numpy(),
        "a_best_speedup": a["best_speedup"].to_numpy(),
        "b_best_speedup": b["best_speedup"].to_numpy(),
    })
    per_task["best_ratio"] = per_task["a_best_speedup"] / per_task["b_best_speedup"]

    n = len(common)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(n_boot, n))  # the same operators for both policies
    rows = []
    for (metric, reads), column in zip(METRICS, ["correct", "fast1", "log_best"], strict=True):
        a_values, b_values = a[column].to_numpy(float), b[column].to_numpy(float)
        if column == "log_best":
            a_point, b_point = float(_geomean_log(a_values)), float(_geomean_log(b_values))
            point = a_point / b_point
            draws = _geomean_log(a_values[picks]) / _geomean_log(b_values[picks])
        else:
            a_point, b_point = 100.0 * a_values.mean(), 100.0 * b_values.mean()
            point = a_point - b_point
            draws = 100.0 * (a_values[picks].mean(axis=1) - b_values[picks].mean(axis=1))
        draws = draws[np.isfinite(draws)]
        low, high = (np.percentile(draws, [2.5, 97.5]) if draws.size
                     else (float("nan"), float("nan")))
        rows.append({"metric": metric, "a": a_point, "b": b_point, "difference": point,
                     "reads": reads, "ci_low": float(low), "ci_high": float(high),
                     "tasks": n})
    return HeadToHead(a=a_policy, b=b_policy, per_task=per_task, summary=pd.DataFrame(rows),
                      n_boot=n_boot, seed=seed,
                      only_a=sorted(set(a_tasks.index) - set(common)),
                      only_b=sorted(set(b_tasks.index) - set(common)))


def run_head_to_head(a_trace: str | Path, b_trace: str | Path, *, n_boot: int = 2000,
                     seed: int = 0) -> HeadToHead:
    """`head_to_head` on two trace datasets (directories)."""
    from kbsim.trace.reader import load_trace

    frames = []
    for path in (Path(a_trace), Path(b_trace)):
        steps = load_trace(path).steps_df()
        if steps.empty:
            raise ValueError(f"trace {path} holds no steps: nothing to compare.")
        frames.append(steps)
    return head_to_head(frames[0], frames[1], a_name=str(a_trace), b_name=str(b_trace),
                        n_boot=n_boot, seed=seed)


def _markdown(frame: pd.DataFrame) -> str:
    columns = list(frame.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in frame.itertuples(index=False):
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_head_to_head(result: HeadToHead, out_dir: str | Path) -> list[Path]:
    """head_to_head.csv/.md (the summary), head_to_head_tasks.csv/.md and head_to_head.png
    (each task's best speedup, A against B); the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = result.summary.rename(columns={"a": result.a, "b": result.b})
    paths = [out / "head_to_head.csv", out / "head_to_head.md",
             out / "head_to_head_tasks.csv", out / "head_to_head_tasks.md",
             out / "head_to_head.png"]
    summary.to_csv(paths[0], index=False)
    head = (f"{result.a} (A) against {result.b} (B) on {len(result.per_task)} common tasks; "
            f"95 % paired bootstrap intervals over tasks ({result.n_boot} resamples, seed "
            f"{result.seed}).\n\n")
    notes = "".join(f"\nOnly in {side}: {', '.join(names)}.\n"
                    for side, names in (("A", result.only_a), ("B", result.only_b)) if names)
    paths[1].write_text(head + _markdown(summary) + notes)
    result.per_task.to_csv(paths[2], index=False)
    paths[3].write_text(head + _markdown(result.per_task))

    fig, ax = plt.subplots(figsize=(5.5, 5.0))
    a_best = result.per_task["a_best_speedup"].to_numpy(float)
    b_best = result.per_task["b_best_speedup"].to_numpy(float)
    both = np.isfinite(a_best) & np.isfinite(b_best)
    finite = np.concatenate([a_best[np.isfinite(a_best)], b_best[np.isfinite(b_best)], [1.0]])
    low, high = finite.min() / 1.5, finite.max() * 1.5
    ax.plot([low, high], [low, high], color="grey", lw=1, ls="--", label="equal")
    ax.scatter(b_best[both], a_best[both], s=22, label="both correct")
    one = np.isfinite(a_best) ^ np.isfinite(b_best)  # one side found no correct kernel
    if one.any():
        ax.scatter(np.where(np.isfinite(b_best), b_best, low)[one],
                   np.where(np.isfinite(a_best), a_best, low)[one], marker="x", color="C3",
                   clip_on=False, label="one side never correct (at the edge)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel(f"B: {result.b}, best speedup over the reference")
    ax.set_ylabel(f"A: {result.a}, best speedup over the reference")
    ax.set_title("Per task: above the line, A found the faster kernel", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(paths[4], dpi=120)
    plt.close(fig)
    return paths
