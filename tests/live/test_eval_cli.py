"""`kernelband tasks list|check` and `kernelband eval` on the tiny CPU tasks."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kernelband.cli import main
from tests.live.fixtures.candidates.tiny_tasks import SPEC

CANDIDATES = Path(__file__).parent / "fixtures" / "candidates"


def test_tasks_list() -> None:
    result = CliRunner().invoke(main, ["tasks", "list", "--tasks", SPEC])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].split()[:2] == ["name", "category"]
    assert any(line.split()[:3] == ["vadd", "elementwise", "2"] for line in lines)


def test_tasks_check_writes_reference_timings(tmp_path: Path) -> None:
    out = tmp_path / "ref.json"
    result = CliRunner().invoke(
        main, ["tasks", "check", "--tasks", SPEC, "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2/2 passed" in result.output and "cpu-interpreter" in result.output
    record = json.loads(out.read_text())
    assert set(record["tasks"]) == {"vadd", "rowsum"}
    assert record["tasks"]["vadd"]["passed"] and record["tasks"]["vadd"]["ref_ms"] > 0
    assert record["device"]["device"] == "cpu"


def test_tasks_check_resumes_its_out_file_and_runs_in_parallel(tmp_path: Path) -> None:
    out = tmp_path / "ref.json"
    runner = CliRunner()
    whole = runner.invoke(main, ["tasks", "check", "--tasks", SPEC, "--device", "cpu",
                                 "--out", str(out), "--parallel", "2"])
    assert whole.exit_code == 0, whole.output
    record = json.loads(out.read_text())
    assert set(record["tasks"]) == {"vadd", "rowsum"}
    # an earlier entry is kept, not checked again: mark it, drop the other, resume
    record["tasks"]["vadd"]["error"] = "kept from the first file"
    del record["tasks"]["rowsum"]
    out.write_text(json.dumps(record))
    again = runner.invoke(main, ["tasks", "check", "--tasks", SPEC, "--device", "cpu",
                                 "--out", str(out), "--resume"])
    assert again.exit_code == 0, again.output
    assert "1 task(s) checked before, kept" in again.output
    assert "rowsum" in again.output and "vadd " not in again.output
    resumed = json.loads(out.read_text())
    assert resumed["tasks"]["vadd"]["error"] == "kept from the first file"
    assert resumed["tasks"]["rowsum"]["passed"]


def test_tasks_check_refuses_to_resume_another_spec_or_without_out(tmp_path: Path) -> None:
    out = tmp_path / "ref.json"
    out.write_text(json.dumps({"task_spec": "builtin", "tasks": {}}))
    runner = CliRunner()
    other = runner.invoke(main, ["tasks", "check", "--tasks", SPEC, "--device", "cpu",
                                 "--out", str(out), "--resume"])
    assert other.exit_code != 0
    assert "holds timings of 'builtin'" in other.output and "cannot resume it" in other.output
    bare = runner.invoke(main, ["tasks", "check", "--tasks", SPEC, "--device", "cpu", "--resume"])
    assert bare.exit_code != 0 and "--resume needs --out FILE" in bare.output


def test_eval_prints_record_and_exit_code() -> None:
    runner = CliRunner()
    good = runner.invoke(main, ["eval", str(CANDIDATES / "vadd_good.py"), "--task", "vadd",
                                "--tasks", SPEC, "--device", "cpu", "--baseline", "k0"])
    assert good.exit_code == 0, good.output
    record = json.loads(good.output)
    assert record["status"] == "ok" and record["baseline"] == "k0"
    bad = runner.invoke(main, ["eval", str(CANDIDATES / "vadd_wrong.py"), "--task", "vadd",
                               "--tasks", SPEC, "--device", "cpu"])
    assert bad.exit_code == 1
    assert json.loads(bad.output)["status"] == "incorrect"
