"""merge_traces: identical runs kept once, colliding run ids renamed deterministically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbsim.trace.merge import merge_traces
from kbsim.trace.reader import TraceError, load_trace, validate_trace
from kbsim.trace.synthetic_trace import write_synthetic_trace
from kbsim.trace.writer import TraceWriter
from tests.kbsim.test_trace_writer import kernel_row, step_row


def _run(path: Path, gpu: str, n_steps: int, run_id: str = "r1", child_ms: float = 1.5) -> Path:
    with TraceWriter(path, {"hardware": {"gpu_name": gpu}}) as writer:
        writer.append_kernel(kernel_row("k0", run_id=run_id, strategy_chain=[]))
        for step in range(n_steps):
            writer.append_kernel(kernel_row(f"k{step + 1}", run_id=run_id))
            writer.append_step(step_row(step, run_id=run_id, child_ms=child_ms))
    return path


def test_identical_inputs_are_kept_once(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "H100", 3)
    out = merge_traces([a, a], tmp_path / "out")
    data = load_trace(out)
    assert data.steps.num_rows == 3 and data.kernels.num_rows == 4
    assert data.run_ids == ["r1"]


def test_colliding_run_ids_are_renamed_in_steps_and_kernels(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "H100", 3)
    b = _run(tmp_path / "b", "A100", 2, child_ms=1.25)  # same run id, different content
    c = _run(tmp_path / "c", "A100", 1, child_ms=1.75)
    out = merge_traces([a, b, c], tmp_path / "out")
    assert validate_trace(out) == []
    data = load_trace(out)
    assert data.run_ids == ["r1", "r1-2", "r1-3"]
    steps = data.steps
    assert steps.column("run_id").to_pylist() == ["r1"] * 3 + ["r1-2"] * 2 + ["r1-3"]
    manifest = data.manifests[0]
    assert manifest["runs"]["r1-2"]["original_run_id"] == "r1"
    assert manifest["runs"]["r1-2"]["source"] == str(b)
    assert manifest["runs"]["r1-2"]["hardware"] == {"gpu_name": "A100"}
    assert manifest["hardware"] == {"mixed": [{"gpu_name": "H100"}, {"gpu_name": "A100"}]}
    # kernels shared by content (same task and kernel id) are kept once, first input winning
    kernels = data.kernels
    assert kernels.num_rows == 4 and set(kernels.column("run_id").to_pylist()) == {"r1"}


def test_a_run_identical_to_a_renamed_one_is_kept_once(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "H100", 3)
    b = _run(tmp_path / "b", "A100", 2, child_ms=1.25)
    data = load_trace(merge_traces([a, b, b, a], tmp_path / "out"))
    assert data.run_ids == ["r1", "r1-2"]
    assert data.steps.column("run_id").to_pylist() == ["r1"] * 3 + ["r1-2"] * 2


def test_merge_is_deterministic(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "H100", 2)
    b = _run(tmp_path / "b", "H100", 2, child_ms=1.2)
    first = load_trace(merge_traces([a, b], tmp_path / "o1"))
    second = load_trace(merge_traces([a, b], tmp_path / "o2"))
    assert first.steps.equals(second.steps) and first.kernels.equals(second.kernels)


def test_merge_of_synthetic_datasets_keeps_every_row(tmp_path: Path) -> None:
    a = write_synthetic_trace(tmp_path / "a", 300, 3, seed=1)
    b = write_synthetic_trace(tmp_path / "b", 200, 2, seed=2)
    out = merge_traces([a, b], tmp_path / "out")
    data = load_trace(out)
    assert data.steps.num_rows == 500
    assert data.run_ids == ["synth-s1", "synth-s2"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["merged_from"] == [str(a), str(b)]
    assert manifest["hardware"] == {"gpu_name": "synthetic", "note": "made-up numbers"}


def test_merge_refuses_bad_inputs_and_existing_outputs(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "H100", 1)
    with pytest.raises(TraceError, match="no manifest.json"):
        merge_traces([a, tmp_path], tmp_path / "out")
    with pytest.raises(FileExistsError, match="merge into a new directory"):
        merge_traces([a], a)
