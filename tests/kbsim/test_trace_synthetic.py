"""Synthetic traces are valid, reproducible and internally consistent; summaries count right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from kbsim.strategies import N_STRATEGIES
from kbsim.trace.reader import load_trace, validate_trace
from kbsim.trace.summary import summarize_trace, summary_table
from kbsim.trace.synthetic_trace import OUTCOME_P, synthetic_tables, write_synthetic_trace
from kbsim.trace.writer import TraceWriter
from tests.kbsim.test_trace_writer import kernel_row, step_row


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_trace(tmp_path_factory.mktemp("s") / "d", 3000, 3, seed=5)


def test_synthetic_dataset_validates(synthetic: Path) -> None:
    assert validate_trace(synthetic) == []
    data = load_trace(synthetic)
    assert data.steps.num_rows == 3000
    assert sorted(set(data.steps.column("task_id").to_pylist())) == [
        "task000",
        "task001",
        "task002",
    ]


def test_same_seed_same_tables_other_seed_other_tables() -> None:
    steps_a, kernels_a = synthetic_tables(500, 2, seed=3)
    steps_b, kernels_b = synthetic_tables(500, 2, seed=3)
    steps_c, _ = synthetic_tables(500, 2, seed=4)
    assert steps_a.equals(steps_b) and kernels_a.equals(kernels_b)
    assert not steps_a.column("child_ms").equals(steps_c.column("child_ms"))


def test_synthetic_rows_are_consistent(synthetic: Path) -> None:
    data = load_trace(synthetic)
    steps = data.steps_df()
    kernels = data.kernels_df().set_index("kernel_id")
    # parent runtimes and rewards follow from the kernels table (DESIGN reward of v2)
    assert np.allclose(steps["parent_ms"], kernels.loc[steps["parent_id"], "ms"].to_numpy())
    ok = steps[steps["status"] == "ok"]
    expected = np.maximum(0.0, (ok["parent_ms"] - ok["child_ms"]) / ok["parent_ms"])
    assert np.allclose(ok["reward"], expected)
    assert (steps.loc[steps["status"] != "ok", "reward"] == 0.0).all()
    # a parent is always k0 or a child recorded at an earlier step of the same task
    born = dict(zip(ok["child_id"], ok["step"], strict=True))
    assert all(born.get(p, -1) < s for p, s in zip(steps["parent_id"], steps["step"], strict=True))
    # uniform logging policy: propensity = 1 / (pool size x strategies)
    for _task, group in steps.groupby("task_id"):
        pool = 1 + (group["status"] == "ok").cumsum().shift(fill_value=0)
        assert np.allclose(group["logging_propensity"], 1.0 / (pool * N_STRATEGIES))
    share_ok = float((steps["status"] == "ok").mean())
    assert abs(share_ok - OUTCOME_P["ok"]) < 0.05


def test_summary_counts_attempts_statuses_and_best_speedup(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "d", {"hardware": {"gpu_name": "NVIDIA A100"}}) as writer:
        writer.append_kernels([kernel_row("k1"), kernel_row("k2"), kernel_row("k1", task_id="t2")])
        writer.append_step(step_row(0, speedup_vs_ref=1.5))
        writer.append_step(step_row(1, speedup_vs_ref=2.5))
        writer.append_step(
            step_row(
                2, status="timeout", child_id=None, child_ms=None, speedup_vs_ref=None, reward=0.0
            )
        )
        writer.append_step(step_row(0, task_id="t2", speedup_vs_ref=0.5))
    summary = summarize_trace(tmp_path / "d")
    assert (summary.n_steps, summary.n_kernels, summary.n_runs) == (4, 3, 1)
    t1, t2 = summary.tasks
    assert (t1.task_id, t1.attempts, t1.status_counts) == ("t1", 3, {"ok": 2, "timeout": 1})
    assert t1.best_speedup == 2.5 and t2.best_speedup == 0.5
    assert t1.hardware == ("NVIDIA A100",)
    table = summary_table(summary)
    assert table.column_names == [
        "task_id",
        "attempts",
        "ok",
        "timeout",
        "best_speedup",
        "runs",
        "hardware",
    ]
    assert table.column("timeout").to_pylist() == [1, 0]


def test_summary_matches_a_direct_count(synthetic: Path) -> None:
    summary = summarize_trace(synthetic)
    steps = load_trace(synthetic).steps
    for task in summary.tasks:
        rows = steps.filter(pc.equal(steps.column("task_id"), task.task_id))
        assert task.attempts == rows.num_rows
        ok = rows.filter(pc.equal(rows.column("status"), "ok"))
        assert task.best_speedup == pc.max(ok.column("speedup_vs_ref")).as_py()
        assert task.hardware == ("synthetic",)
