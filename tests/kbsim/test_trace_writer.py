"""TraceWriter: row checks, durable appends, kernel dedup, resume, crash-safe compaction."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kbsim.trace.layout import atomic_write_parquet, part_name, scan_parts
from kbsim.trace.reader import load_trace, validate_trace
from kbsim.trace.schema import STEPS_SCHEMA
from kbsim.trace.writer import TraceWriter

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
MANIFEST = {"hardware": {"gpu_name": "NVIDIA H100"}, "policy": {"name": "explore"}}


def step_row(step: int, **overrides: Any) -> dict[str, Any]:
    """A valid `ok` step of run r1, task t1, whose child kernel is k{step + 1}."""
    row = {
        "run_id": "r1",
        "task_id": "t1",
        "step": step,
        "time": T0,
        "policy": "explore",
        "seed": 7,
        "cluster": -1,
        "parent_id": "k0",
        "strategy": "tiling",
        "child_id": f"k{step + 1}",
        "status": "ok",
        "parent_ms": 2.0,
        "child_ms": 1.5,
        "ref_ms": 1.0,
        "speedup_vs_ref": 1.0 / 1.5,
        "reward": 0.25,
    }
    row.update(overrides)
    return row


def kernel_row(kernel_id: str, **overrides: Any) -> dict[str, Any]:
    row = {
        "run_id": "r1",
        "task_id": "t1",
        "kernel_id": kernel_id,
        "code": f"# kernel {kernel_id}",
        "strategy_chain": ["tiling"],
        "correct": True,
        "ms": 1.5,
        "timing_backend": "cpu-interpreter",
        "profiled": False,
        "phi": [0.9, 32.0, 0.0, 7.0, 50.0],
    }
    row.update(overrides)
    return row


def write_valid(path: Path, n_steps: int, **writer_kwargs: Any) -> None:
    with TraceWriter(path, MANIFEST, **writer_kwargs) as writer:
        writer.append_kernel(kernel_row("k0", strategy_chain=[]))
        for step in range(n_steps):
            writer.append_kernel(kernel_row(f"k{step + 1}"))
            writer.append_step(step_row(step))


def test_each_append_is_on_disk_when_it_returns(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "d", MANIFEST)
    writer.append_kernel(kernel_row("k1"))
    writer.append_step(step_row(0))
    # a second reader sees the row before close() and before any explicit flush()
    assert load_trace(tmp_path / "d").steps.column("step").to_pylist() == [0]
    writer.close()
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["run_ids"] == ["r1"] and manifest["tasks"] == ["t1"]
    assert manifest["end_time"] is not None and manifest["schema_version"] == 1


def test_flush_every_batches_rows_until_flush(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "d", MANIFEST, flush_every=100)
    writer.append_kernels([kernel_row(f"k{i + 1}") for i in range(3)])
    for step in range(3):
        writer.append_step(step_row(step))
    assert scan_parts(tmp_path / "d" / "steps")[0] == []
    writer.flush()
    assert len(scan_parts(tmp_path / "d" / "steps")[0]) == 1
    writer.close()
    assert load_trace(tmp_path / "d").steps.num_rows == 3


def test_missing_nullable_keys_become_nulls(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 1)
    steps = load_trace(tmp_path / "d").steps
    assert steps.column("llm_model").to_pylist() == [None]
    assert steps.column("prompt_tokens").to_pylist() == [None]
    assert steps.schema.equals(STEPS_SCHEMA, check_metadata=False)


BAD_ROWS = [
    ({"bogus": 1}, "steps row has unknown column 'bogus' (not in schema v1 steps)"),
    ({"reward": None}, "steps row: required column 'reward' is None"),
    ({"step": "3"}, "steps row: column 'step' must be an integer (int32), got str '3'"),
    (
        {"step": 2**40},
        "steps row: column 'step' must be an integer within int32, got int 1099511627776",
    ),
    ({"reward": True}, "steps row: column 'reward' must be a number (float64), got bool True"),
    (
        {"time": datetime(2026, 3, 1)},
        "steps row: column 'time' must be a timezone-aware datetime, "
        "got datetime datetime.datetime(2026, 3, 1, 0, 0)",
    ),
    (
        {"status": "great"},
        "steps rejected: unknown status 'great' in 1 row(s) (first: run_id='r1', task_id='t1', "
        "step=0); allowed: ok, compile_error, runtime_error, incorrect, timeout, llm_error, "
        "no_code, not_applicable, rejected",
    ),
    (
        {"child_ms": float("nan")},
        "steps rejected: 1 'ok' row(s) have a missing, NaN or non-positive child_ms "
        "(first: run_id='r1', task_id='t1', step=0)",
    ),
    (
        {"reward": 1.5},
        "steps rejected: 1 row(s) have a reward that is NaN, infinite or above 1 "
        "(first: run_id='r1', task_id='t1', step=0, reward=1.5)",
    ),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_ROWS, ids=[m[:40] for _, m in BAD_ROWS])
def test_bad_step_rows_are_refused_with_a_clear_sentence(
    tmp_path: Path, overrides: dict[str, Any], message: str
) -> None:
    with TraceWriter(tmp_path / "d", MANIFEST) as writer:
        row = step_row(0)
        row.update(overrides)
        with pytest.raises(ValueError) as info:
            writer.append_step(row)
        assert str(info.value) == message
    assert scan_parts(tmp_path / "d" / "steps")[0] == []


def test_missing_required_key_is_named(tmp_path: Path) -> None:
    row = step_row(0)
    del row["policy"]
    with TraceWriter(tmp_path / "d", MANIFEST) as writer, pytest.raises(ValueError) as info:
        writer.append_step(row)
    assert str(info.value) == "steps row: required column 'policy' is missing"


def test_duplicate_step_is_refused_even_after_resume(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 2)
    with TraceWriter(tmp_path / "d", MANIFEST, resume=True) as writer:
        with pytest.raises(
            ValueError, match=r"step \(run_id='r1', task_id='t1', step=1\) is already"
        ):
            writer.append_step(step_row(1))
        writer.append_kernel(kernel_row("k3"))
        writer.append_step(step_row(2))
    steps = load_trace(tmp_path / "d").steps
    assert sorted(steps.column("step").to_pylist()) == [0, 1, 2]


def test_kernels_are_deduplicated_by_task_and_kernel_id(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "d", MANIFEST) as writer:
        assert writer.append_kernel(kernel_row("k1")) is True
        assert writer.append_kernel(kernel_row("k1", run_id="r2")) is False
        assert writer.append_kernel(kernel_row("k1", task_id="t2")) is True
        assert writer.append_kernels([kernel_row("k2"), kernel_row("k2"), kernel_row("k1")]) == 1
        writer.append_step(step_row(0))
    with TraceWriter(tmp_path / "d", MANIFEST, resume=True) as writer:
        assert writer.append_kernel(kernel_row("k2")) is False
    kernels = load_trace(tmp_path / "d").kernels
    assert sorted(
        zip(kernels["task_id"].to_pylist(), kernels["kernel_id"].to_pylist(), strict=True)
    ) == [
        ("t1", "k1"),
        ("t1", "k2"),
        ("t2", "k1"),
    ]


def test_new_writer_refuses_an_existing_dataset(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 1)
    with pytest.raises(FileExistsError, match="pass resume=True"):
        TraceWriter(tmp_path / "d", MANIFEST)


def test_second_writer_on_the_same_dataset_is_refused(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "d", MANIFEST):
        with pytest.raises(RuntimeError, match="open in another TraceWriter"):
            TraceWriter(tmp_path / "d", MANIFEST, resume=True)


def test_resume_keeps_manifest_and_exposes_existing_steps(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 3)
    first = json.loads((tmp_path / "d" / "manifest.json").read_text())
    writer = TraceWriter(tmp_path / "d", {"run_ids": ["r2"]}, resume=True)
    assert sorted(writer.existing_steps().column("step").to_pylist()) == [0, 1, 2]
    during = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert during["end_time"] is None  # running again
    assert during["start_time"] == first["start_time"]
    assert during["run_ids"] == ["r1", "r2"]
    assert during["hardware"] == MANIFEST["hardware"]
    writer.close()


def test_compaction_merges_parts_and_keeps_every_row(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 20, compact_every=4)
    live, superseded = scan_parts(tmp_path / "d" / "steps")
    assert len(live) <= 5 and superseded == []
    assert any(p.first_seq != p.last_seq for p in live)
    steps = load_trace(tmp_path / "d").steps
    assert steps.column("step").to_pylist() == list(range(20))  # order of writing kept


def test_parts_left_by_a_compaction_killed_midway_are_ignored_then_removed(
    tmp_path: Path,
) -> None:
    write_valid(tmp_path / "d", 6)
    steps_dir = tmp_path / "d" / "steps"
    live, _ = scan_parts(steps_dir)
    merged = pa.concat_tables([pq.read_table(p.path) for p in live])
    # the merged file landed but the kill came before any old part was deleted
    atomic_write_parquet(steps_dir / part_name(live[0].first_seq, live[-1].last_seq), merged)
    (steps_dir / ".part-00000099.parquet.abcd1234.tmp").write_bytes(b"PAR1 half")
    assert validate_trace(tmp_path / "d") == []
    assert load_trace(tmp_path / "d").steps.num_rows == 6
    with TraceWriter(tmp_path / "d", MANIFEST, resume=True):
        pass
    names = sorted(os.listdir(steps_dir))
    assert names == ["part-00000001-00000006.parquet"]
    assert load_trace(tmp_path / "d").steps.num_rows == 6


def test_bulk_append_of_an_arrow_table(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(
        [
            step_row(i, status="compile_error", child_id=None, child_ms=None, reward=0.0)
            for i in range(5)
        ]
    )
    table = table.drop_columns(["speedup_vs_ref"])  # a nullable column may be left out
    with TraceWriter(tmp_path / "d", MANIFEST, flush_every=1000) as writer:
        writer.append_steps(table)
    steps = load_trace(tmp_path / "d").steps
    assert steps.num_rows == 5 and steps.column("speedup_vs_ref").null_count == 5
