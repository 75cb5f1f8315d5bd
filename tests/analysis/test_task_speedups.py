"""Per-task best speedup in replay: the final step per seed, geometric means and intervals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.task_speedups import task_speedup_table, task_speedup_wide


def _results(finals: dict[tuple[str, str, str], list[float]], steps: int = 5) -> pd.DataFrame:
    rows = []
    for (policy, env, task), values in finals.items():
        for seed, final in enumerate(values):
            for step in range(steps):  # rises to `final` at the last step
                rows.append({"policy": policy, "env": env, "task_id": task, "seed": seed,
                             "step": step, "best_speedup": 1.0 + (final - 1.0) * step /
                             (steps - 1)})
    return pd.DataFrame(rows)


def test_final_speedups_per_task_with_a_log_normal_interval() -> None:
    finals = {("v2", "tape", "add"): [2.0, 8.0], ("v2", "tape", "softmax"): [1.5] * 4,
              ("random", "fitted", "add"): [1.0, 1.0, 4.0]}
    table = task_speedup_table(_results(finals))
    assert len(table) == 3
    add = table[(table["policy"] == "v2") & (table["task_id"] == "add")].iloc[0]
    assert add["seeds"] == 2 and add["steps"] == 5
    assert math.isclose(add["geomean"], 4.0)  # sqrt(2 * 8): the last step, not the mean
    half = 1.959964 * np.std(np.log([2.0, 8.0]), ddof=1) / math.sqrt(2)
    assert math.isclose(add["ci_low"], 4.0 * math.exp(-half))
    assert math.isclose(add["ci_high"], 4.0 * math.exp(half))
    flat = table[table["task_id"] == "softmax"].iloc[0]
    assert flat["ci_low"] == flat["ci_high"] == flat["geomean"] == 1.5  # no spread, no width
    rnd = table[table["policy"] == "random"].iloc[0]
    assert rnd["median"] == 1.0 and rnd["q90"] > rnd["median"]


def test_wide_table_has_one_row_per_policy_and_env_and_one_column_per_task() -> None:
    finals = {("v2", "tape", "add"): [2.0, 8.0], ("v2", "tape", "softmax"): [1.5] * 4,
              ("random", "fitted", "add"): [1.0, 1.0, 4.0]}
    wide = task_speedup_wide(task_speedup_table(_results(finals)))
    assert list(wide.columns) == ["policy [env]", "add", "softmax"]
    row = wide.set_index("policy [env]").loc["v2 [tape]"]
    assert row["add"].startswith("4.00 [") and row["softmax"] == "1.50 [1.50, 1.50]"
    assert pd.isna(wide.set_index("policy [env]").loc["random [fitted]", "softmax"])
