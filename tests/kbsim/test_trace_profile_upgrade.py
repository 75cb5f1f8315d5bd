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
