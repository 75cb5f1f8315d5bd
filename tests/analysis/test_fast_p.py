"""KernelBench's fast_p per level from a trace's steps (``analysis.fast_p``)."""

from __future__ import annotations

import math

import pandas as pd

from analysis.fast_p import fast_p_table


def _steps(rows: list[tuple[str, str, float | None, float | None]]) -> pd.DataFrame:
    """(task, status, child ms, speedup over eager) per step, one run of policy `p`."""
    return pd.DataFrame([{"policy": "p", "run_id": "r", "task_id": task, "status": status,
                          "child_ms": ms, "speedup_vs_ref": speedup}
                         for task, status, ms, speedup in rows])


STEPS = _steps([
    ("kernelbench/level1/1_A", "ok", 2.0, 0.5),       # correct, slower than eager
    ("kernelbench/level1/1_A", "ok", 1.0, 1.2),       # its best: 1.2x eager
    ("kernelbench/level1/2_B", "incorrect", None, None),
    ("kernelbench/level1/3_C", "ok", 0.5, 3.0),       # 3x eager
    ("kernelbench/level1/4_D", "ok", 1.0, 1.6),
    ("kernelbench/level2/1_E", "ok", 1.0, 1.0),       # exactly eager: not faster
    ("softmax", "ok", 1.0, 9.0),                       # not KernelBench: left out
])


def test_fast_p_against_eager_per_level() -> None:
    table = fast_p_table(STEPS).set_index("level")
    level1 = table.loc["level1"]
    assert level1["problems"] == 4
    assert level1["fast_0_eager_pct"] == 75.0      # three of four correct
    assert level1["fast_1_eager_pct"] == 75.0      # 1.2, 3.0, 1.6
    assert level1["fast_1.5_eager_pct"] == 50.0    # 3.0, 1.6
    assert level1["fast_2_eager_pct"] == 25.0      # 3.0
    level2 = table.loc["level2"]
    assert (level2["fast_0_eager_pct"], level2["fast_1_eager_pct"]) == (100.0, 0.0)
    assert math.isnan(level1["fast_1_compile_pct"])  # no compile timings given


def test_fast_p_against_compile_uses_its_times() -> None:
    compile_ms = {"kernelbench/level1/1_A": 0.9,   # best 1.0 ms: slower than compile
                  "kernelbench/level1/3_C": 1.6,   # best 0.5 ms: 3.2x
                  "kernelbench/level1/2_B": 1.0}   # 4_D missing: counts as not faster
    level1 = fast_p_table(STEPS, compile_ms).set_index("level").loc["level1"]
    assert level1["fast_0_compile_pct"] == 75.0
    assert level1["fast_1_compile_pct"] == 25.0
    assert level1["fast_2_compile_pct"] == 25.0


def test_no_kernelbench_task_gives_an_empty_table() -> None:
    assert fast_p_table(_steps([("softmax", "ok", 1.0, 2.0)])).empty
