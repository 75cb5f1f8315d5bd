"""benchmarks/live_progress.py: evaluated attempts toward a run's target, on a real (CPU) live
run whose one task's k0 fails, and on the committed TritonBench-G run in progress."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.live.test_resume_failed_k0 import K0Evaluator, _run

ROOT = Path(__file__).resolve().parents[2]
IN_PROGRESS = ROOT / "benchmarks" / "runs" / "tb-explore-h200"


def _script():
    spec = importlib.util.spec_from_file_location(
        "live_progress", ROOT / "benchmarks" / "live_progress.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_progress_counts_evaluated_steps_and_sets_a_failed_k0_apart(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _run(out, K0Evaluator("incorrect", "output 0: 3/64 elements differ"))  # steps=2
    script = _script()
    report = script.progress(out, 2)
    states = {t["task"]: t["state"] for t in report["tasks"]}
    assert states == {"add": "k0 failed", "softmax": "done"}
    assert report["runnable"] == 1 and report["complete"]
    assert report["evaluated_toward_target"] == report["needed"] == 2
    assert "incorrect" in next(t["error"] for t in report["tasks"] if t["task"] == "add")
    # a larger target: softmax still to run, and the exit status says so
    report3 = script.progress(out, 3)
    assert not report3["complete"] and report3["evaluated_toward_target"] == 2
    assert script.main([str(out), "--target", "3", "--json", str(tmp_path / "p.json")]) == 3
    assert "0 of 1 runnable tasks at 3; 2 of 3 evaluated attempts" in capsys.readouterr().out
    assert json.loads((tmp_path / "p.json").read_text())["needed"] == 3


def test_not_a_run_folder_is_one_clear_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _script().main([str(tmp_path)])
    assert "is not a run folder (no manifest.json)" in capsys.readouterr().err


@pytest.mark.skipif(not (IN_PROGRESS / "manifest.json").exists(),
                    reason="no TritonBench-G run in progress is committed")
def test_progress_of_the_committed_tritonbench_run() -> None:
    report = _script().progress(IN_PROGRESS, 60)
    by_state: dict[str, int] = {}
    for t in report["tasks"]:
        by_state[t["state"]] = by_state.get(t["state"], 0) + 1
    # the subset's operators that loaded; two stop at a k0 that fails on the H200
    # (attention_kernel, quantize_kv_copy; layer_norm_welfold's passed when evaluated again)
    assert len(report["tasks"]) == 48 and by_state == {"done": 46, "k0 failed": 2}
    assert report["needed"] == 60 * 46 and report["complete"]
    assert report["evaluated_toward_target"] == report["needed"]
