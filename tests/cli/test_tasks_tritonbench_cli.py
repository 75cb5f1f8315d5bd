"""`kernelband tasks list|check --tasks tritonbench:PATH`: skipped operators reported, --json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelband.cli import main

MINI = Path(__file__).parents[1] / "live" / "fixtures" / "tritonbench_mini"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("KERNELBAND_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _mini_with(tmp_path: Path, ops: tuple[str, ...]) -> Path:
    root = tmp_path / "tb"
    shutil.copytree(MINI, root)
    for path in root.rglob("*.py"):
        if path.stem.removesuffix("_perf") not in (*ops, "performance_utils"):
            path.unlink()
    return root


def test_check_ends_with_the_skipped_table_and_json_has_every_reason(tmp_path, cache) -> None:
    root = _mini_with(tmp_path, ("add", "racy_sum"))
    runner = CliRunner()
    result = runner.invoke(main, ["tasks", "check", "--tasks", f"tritonbench:{root}",
                                  "--device", "cpu"])
    assert result.exit_code == 1  # an operator was skipped
    text = result.output
    assert "tritonbench/add" in text and "ok (gold vs gold" in text
    assert "skipped 1" in text and "racy_sum" in text and "nondeterministic" in text
    assert "plain script" in text and "1/2 operators passed gold-vs-gold" in text
    listed = runner.invoke(main, ["tasks", "list", "--tasks", f"tritonbench:{root}",
                                  "--device", "cpu", "--json"])
    record = json.loads(listed.output[listed.output.index("{"):])
    assert record["tasks"] == ["tritonbench/add"]
    (skipped,) = record["skipped"]
    assert skipped["op"] == "racy_sum" and "nondeterministic" in skipped["reason"]
    assert skipped["plain_script"] == "passes"
    assert record["stats"]["cached"] == 2  # the second command read the cache


def test_nothing_loaded_is_said_with_the_reason_never_a_bare_zero(tmp_path, cache) -> None:
    root = _mini_with(tmp_path, ("racy_sum",))
    result = CliRunner().invoke(main, ["tasks", "check", "--tasks", f"tritonbench:{root}",
                                       "--device", "cpu"])
    assert result.exit_code == 1
    assert "no task loaded: all 1 were skipped" in result.output
    assert "0/0" not in result.output
