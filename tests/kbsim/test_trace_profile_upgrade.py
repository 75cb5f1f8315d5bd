"""A kernel profiled after its row was written: the profiled row supersedes, nothing duplicates."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbsim.trace.reader import load_trace, validate_trace
from kbsim.trace.writer import TraceWriter
from tests.kbsim.test_trace_writer import kernel_row, step_row


def _kernels(path: Path):
    return load_trace(path).kernels.to_pylist()


def test_profile_recorded_later_supersedes_the_unprofiled_row(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t", {"run_ids": ["r1"]}) as writer:
        writer.append_kernel(kernel_row("k1"))
        writer.append_step(step_row(0))
        assert writer.update_kernel_profile("t1", "k1", hw_sig=[10.0, 90.0, 30.0],
                                            profile9=[1.0] * 9, profiler="ncu")
        # a second profile of the same kernel is not recorded
        assert not writer.update_kernel_profile("t1", "k1", hw_sig=[1.0, 2.0, 3.0],
                                                profile9=None, profiler="ncu")
    assert validate_trace(tmp_path / "t") == []
    (row,) = [k for k in _kernels(tmp_path / "t") if k["kernel_id"] == "k1"]
    assert row["profiled"] and row["hw_sig"] == [10.0, 90.0, 30.0]
    assert row["profiler"] == "ncu"


def test_profile_of_a_kernel_written_before_a_resume(tmp_path: Path) -> None:
    with TraceWriter(tmp_path / "t", {"run_ids": ["r1"]}) as writer:
        writer.append_kernel(kernel_row("k1"))
        writer.append_step(step_row(0))
    with TraceWriter(tmp_path / "t", resume=True) as writer:
        assert writer.update_kernel_profile("t1", "k1", hw_sig=[5.0, 6.0, 7.0], profile9=None,
                                            profiler="ncu")
        with pytest.raises(KeyError, match="append it before recording its profile"):
            writer.update_kernel_profile("t1", "nope", hw_sig=[1.0, 1.0, 1.0], profile9=None,
                                         profiler="ncu")
    assert validate_trace(tmp_path / "t") == []
    (row,) = [k for k in _kernels(tmp_path / "t") if k["kernel_id"] == "k1"]
    assert row["hw_sig"] == [5.0, 6.0, 7.0]


def test_compaction_settles_profile_upgrades_into_one_row(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    with TraceWriter(tmp_path / "t", {"run_ids": ["r1"]}) as writer:
        writer.append_kernel(kernel_row("k1"))
        writer.append_step(step_row(0))
        writer.update_kernel_profile("t1", "k1", hw_sig=[1.0, 2.0, 3.0], profile9=None,
                                     profiler="ncu")
        writer.compact()
    parts = list((tmp_path / "t" / "kernels").glob("part-*.parquet"))
    assert len(parts) == 1
    assert pq.read_table(parts[0]).num_rows == 1
    assert validate_trace(tmp_path / "t") == []


def _stopped(kernel_id: str) -> dict:
    """A kernel whose evaluation the machine stopped (a worker killed by the system)."""
    return kernel_row(kernel_id, correct=False, ms=None, profiled=False)


def test_a_correct_row_supersedes_a_kernel_recorded_incorrect(tmp_path: Path) -> None:
    """D90: k0 killed by the system in one call, evaluated again (correct) by the resume."""
    import pyarrow.parquet as pq

    with TraceWriter(tmp_path / "t", {"run_ids": ["r1"]}) as writer:
        assert writer.append_kernel(_stopped("k0"))
        assert not writer.append_kernel(_stopped("k0"))  # incorrect again: nothing new
        writer.append_kernel(kernel_row("k1"))
        writer.append_step(step_row(0))
    (row,) = [k for k in _kernels(tmp_path / "t") if k["kernel_id"] == "k0"]
    assert not row["correct"]
    with TraceWriter(tmp_path / "t", resume=True) as writer:
        assert writer.append_kernel(kernel_row("k0", ms=2.5))
        assert not writer.append_kernel(kernel_row("k0", ms=9.9))  # a true duplicate
        assert not writer.append_kernel(_stopped("k0"))  # never back to incorrect
    (row,) = [k for k in _kernels(tmp_path / "t") if k["kernel_id"] == "k0"]
    assert row["correct"] and row["ms"] == 2.5
    assert validate_trace(tmp_path / "t") == []
    # a later writer knows k0 is correct, and profiles the correct row, not the stopped one
    with TraceWriter(tmp_path / "t", resume=True) as writer:
        assert not writer.append_kernel(kernel_row("k0", ms=3.0))
        assert writer.update_kernel_profile("t1", "k0", hw_sig=[1.0, 2.0, 3.0], profile9=None,
                                            profiler="ncu")
        writer.compact()
    (row,) = [k for k in _kernels(tmp_path / "t") if k["kernel_id"] == "k0"]
    assert row["correct"] and row["ms"] == 2.5 and row["hw_sig"] == [1.0, 2.0, 3.0]
    parts = list((tmp_path / "t" / "kernels").glob("part-*.parquet"))
    assert len(parts) == 1 and pq.read_table(parts[0]).num_rows == 2  # k0 and k1


def test_the_resumed_run_takes_the_correct_row(tmp_path: Path) -> None:
    from live.runner.resume import load_recorded

    with TraceWriter(tmp_path / "t", {"run_ids": ["r1"]}) as writer:
        writer.append_kernel(_stopped("k0"))
        writer.append_kernel(kernel_row("k0", ms=2.5))
        writer.append_kernel(kernel_row("k1"))
        writer.append_step(step_row(0))
    recorded = load_recorded(tmp_path / "t", "r1")
    assert "k0" in recorded.correct_kernel_ids("t1")


def test_equal_rows_stay_duplicates(tmp_path: Path) -> None:
    """Only a better row supersedes: two correct rows of one kernel are still reported."""
    import pyarrow as pa

    from kbsim.trace.checks import apply_kernel_upgrades, duplicate_kernel_problems
    from kbsim.trace.rows import rows_to_table
    from kbsim.trace.schema import KERNELS_SCHEMA

    table = rows_to_table([kernel_row("k1"), kernel_row("k1", ms=2.0), _stopped("k2"),
                           kernel_row("k2")], KERNELS_SCHEMA, "kernels")
    kept = apply_kernel_upgrades(table)
    assert isinstance(kept, pa.Table) and kept.num_rows == 3
    assert [r["kernel_id"] for r in kept.to_pylist()] == ["k1", "k1", "k2"]
    assert duplicate_kernel_problems(kept)
