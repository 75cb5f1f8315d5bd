"""Issue 15's additions to a trace: the optional ``roofline_sig`` kernels column (part files
written before it still read, as nulls, and mix with new ones) and ``signature-reveals.jsonl``."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kbsim.trace.layout import scan_parts
from kbsim.trace.reader import load_trace, validate_trace
from kbsim.trace.reveals import REVEALS_NAME, Reveal, load_reveals, read_reveals, write_reveals
from kbsim.trace.writer import TraceWriter
from tests.kbsim.test_trace_writer import MANIFEST, kernel_row, step_row


def _drop_roofline_column(path: Path) -> None:
    """Rewrite every kernels part file as a kernelband before issue 15 wrote it."""
    live, _ = scan_parts(path / "kernels")
    for part in live:
        table = pq.read_table(part.path)
        pq.write_table(table.drop(["roofline_sig"]), part.path)


def _old_trace(path: Path) -> None:
    with TraceWriter(path, MANIFEST) as writer:
        writer.append_kernel(kernel_row("k0", strategy_chain=[]))
        writer.append_kernel(kernel_row("k1"))
        writer.append_step(step_row(0))
    _drop_roofline_column(path)


def test_a_trace_without_the_column_is_valid_and_reads_nulls(tmp_path: Path) -> None:
    _old_trace(tmp_path / "t")
    assert "roofline_sig" not in pq.read_schema(next((tmp_path / "t" / "kernels").glob(
        "part-*.parquet"))).names
    assert validate_trace(tmp_path / "t") == []
    kernels = load_trace(tmp_path / "t").kernels
    assert kernels.column("roofline_sig").null_count == kernels.num_rows == 2
    only = load_trace(tmp_path / "t", kernels_columns=["kernel_id", "roofline_sig"]).kernels
    assert only.column_names == ["kernel_id", "roofline_sig"]


def test_resuming_an_old_trace_mixes_old_and_new_parts_and_compacts(tmp_path: Path) -> None:
    _old_trace(tmp_path / "t")
    with TraceWriter(tmp_path / "t", resume=True) as writer:
        writer.append_kernel(kernel_row("k2", roofline_sig=[1.0, 40.0, 56.0]))
        writer.append_step(step_row(1))
        writer.compact()
    assert validate_trace(tmp_path / "t") == []
    rows = {k["kernel_id"]: k["roofline_sig"]
            for k in load_trace(tmp_path / "t").kernels.to_pylist()}
    assert rows == {"k0": None, "k1": None, "k2": [1.0, 40.0, 56.0]}


def test_the_shipped_traces_still_validate() -> None:
    shipped = [p for p in Path("traces").iterdir() if (p / "manifest.json").exists()]
    assert shipped
    for path in shipped:
        assert validate_trace(path) == [], path


def test_reveals_file_round_trip_torn_last_line_and_repeats(tmp_path: Path) -> None:
    reveals = [Reveal("r", "add", "k1", 2, 4), Reveal("r", "add", "k2", 3, 3)]
    write_reveals(tmp_path / REVEALS_NAME, reveals)
    assert load_reveals(tmp_path) == reveals
    assert [r.delay_steps for r in reveals] == [2, 0]
    with open(tmp_path / REVEALS_NAME, "a") as f:  # a resumed run repeats k1, a kill tears
        f.write(json.dumps({"run_id": "r", "task_id": "add", "kernel_id": "k1",
                            "asked_step": 2, "shown_step": 9}) + "\n")
        f.write('{"run_id": "r", "task_id": "ad')
    assert read_reveals(tmp_path / REVEALS_NAME) == reveals
    assert load_reveals(tmp_path / "elsewhere") is None


@pytest.mark.parametrize(("line", "message"), [
    ('{"run_id": "r"}', "not a signature reveal"),
    ('{"run_id": "r", "task_id": "a", "kernel_id": "k", "asked_step": 5, "shown_step": 4}',
     "before asked_step"),
])
def test_bad_reveal_lines_are_one_sentence(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / REVEALS_NAME).write_text(line + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message):
        read_reveals(tmp_path / REVEALS_NAME)
