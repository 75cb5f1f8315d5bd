"""Issue #18: where do policies spend their steps, before and after the not-applicable rule?

Replays policies on a recorded exploration trace (tape and fitted, N seeds, T steps) once with
recorded ``not_applicable`` outcomes as failed steps (the rule before issue #18,
``not_applicable="failure"``) and once as unavailable actions (the rule now), and prints per
task: the geometric mean best speedup over k0, the share of steps that failed, and the share of
steps per strategy. Both rules run the same code: without not-applicable marks every policy
takes its previous path, so the "failure" rows reproduce the tables recorded before the rule.

    PYTHONPATH=. python benchmarks/na_rule_arms.py traces/explore-h200 --seeds 100 --steps 40
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from kbsim.envs.fitted import build_fitted
from kbsim.envs.recorded import load_tables
from kbsim.envs.tape import build_tape
from kbsim.replay.record import record_trace
from kbsim.replay.sweep import run_sweep
from kbsim.strategies import STRATEGIES

POLICIES = ("kernelband-v2", "kernelband-v2-nomask", "greedy")
SHORT = {"tiling": "til", "vectorization": "vec", "fusion": "fus", "pipeline": "pip",
         "reordering": "reo", "access_layout": "acc"}


def markdown(table: pd.DataFrame) -> str:
    """A Markdown table (no extra dependency)."""
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
             for row in table.itertuples(index=False)]
    lines = ["| " + " | ".join(map(str, table.columns)) + " |",
             "| " + " | ".join("---" for _ in table.columns) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def per_task(results: pd.DataFrame, steps: int) -> pd.DataFrame:
    """policy, env, rule, task: geomean best speedup at T, failure share, strategy shares."""
    last = results[results["step"] == results.groupby(
        ["policy", "env", "rule", "task_id", "seed"])["step"].transform("max")]
    speed = last.groupby(["policy", "env", "rule", "task_id"])["best_speedup"].apply(
        lambda s: float(np.exp(np.log(s).mean())))
    keys = ["policy", "env", "rule", "task_id"]
    fail = 1.0 - results.groupby(keys)["success"].mean()
    shares = results.assign(s=results["strategy"].map(lambda i: STRATEGIES[i])).groupby(
        keys)["s"].value_counts(normalize=True).unstack(fill_value=0.0)
    table = pd.DataFrame({"speedup": speed, "failed": fail}).join(shares)
    return table.reset_index()


def parent_shares(trace: str, policy: str, seeds: int, steps: int, rule: str,
                  workdir: Path) -> pd.DataFrame:
    """Per task, over `seeds` runs of the Python step on the tape env (`record_trace`): the
    share of steps whose parent was the fastest pool member, and not-applicable answers per
    run (attempts that spent no step)."""
    steps_table, kernels = load_tables(trace)
    env = build_tape(steps_table, kernels, not_applicable=rule)
    rows = []
    for seed in range(seeds):
        out = workdir / f"{policy}-{rule}-{seed}"
        record_trace(out, env, policy, seed, steps)
        logged = load_tables(out)[0].to_pandas().sort_values(["task_id", "step"])
        for task_id, part in logged.groupby("task_id"):
            best = float(part["parent_ms"].iloc[0])  # k0 (the first parent)
            fastest = spent = na = 0
            for row in part.itertuples():
                if row.status == "not_applicable":
                    na += 1
                    continue
                spent += 1
                fastest += row.parent_ms <= best
                if row.status == "ok":
                    best = min(best, row.child_ms)
            rows.append({"task_id": task_id, "seed": seed, "fastest_parent": fastest / spent,
                         "na_per_run": na})
    table = pd.DataFrame(rows).groupby("task_id")[["fastest_parent", "na_per_run"]].mean()
    return table.reset_index().assign(policy=policy, rule=rule)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--csv", default=None, help="also write the table as CSV here")
    parser.add_argument("--parents", type=int, default=0, metavar="SEEDS",
                        help="also: share of steps on the fastest parent (tape env, Python "
                             "step, this many seeds), per task, for each policy and rule")
    args = parser.parse_args(argv)
    if args.parents:
        with tempfile.TemporaryDirectory() as tmp:
            shares = pd.concat([parent_shares(args.trace, policy, args.parents, args.steps,
                                              rule, Path(tmp))
                                for policy in args.policies.split(",")
                                for rule in ("failure", "unavailable")], ignore_index=True)
        print(markdown(shares[["policy", "rule", "task_id", "fastest_parent", "na_per_run"]]))
        print()
    steps_table, kernels = load_tables(args.trace)
    frames = []
    started = time.perf_counter()
    for rule in ("failure", "unavailable"):
        envs = [build_tape(steps_table, kernels, not_applicable=rule),
                build_fitted(steps_table, kernels, not_applicable=rule)]
        result = run_sweep(args.policies.split(","), envs, list(range(args.seeds)), args.steps)
        frames.append(result.results.to_pandas().assign(rule=rule))
    table = per_task(pd.concat(frames, ignore_index=True), args.steps)
    if args.csv:
        table.to_csv(args.csv, index=False)
    report(table, args, time.perf_counter() - started)
    return 0


def report(table: pd.DataFrame, args: argparse.Namespace, seconds: float) -> None:
    overall = table.groupby(["policy", "env", "rule"])["speedup"].apply(
        lambda s: float(np.exp(np.log(s).mean())))
    print(f"# {args.trace}: {args.seeds} seeds, T = {args.steps}, {seconds:.0f} s\n")
    wide = overall.unstack(["env", "rule"])
    wide.columns = [f"{env} ({rule})" for env, rule in wide.columns]
    print(markdown(wide.reset_index()))
    print()
    cols = ["policy", "env", "rule", "task_id", "speedup", "failed", *STRATEGIES]
    shown = table[[c for c in cols if c in table.columns]].rename(columns=SHORT)
    print(markdown(shown))


if __name__ == "__main__":
    raise SystemExit(main())
