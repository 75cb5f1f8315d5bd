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
