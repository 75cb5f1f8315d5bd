"""`kernelband live --tasks module:PKG.MOD` reads specs like the evaluator (issue 20)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbsim.trace.reader import load_trace, validate_trace
from kernelband.cli import main
from live.evaluator.task_source import resolve_task as evaluator_resolve_task
from live.tasks.registry import canonical_spec, resolve_task, resolve_tasks
from live.tasks.sources import SOURCES, parse_spec

SPEC = "module:tests.live.fixtures.candidates.tiny_tasks"


def test_every_spec_goes_through_one_source_registry() -> None:
    assert set(SOURCES) >= {"builtin", "tritonbench", "module"}
    assert parse_spec(" softmax,add ") == ("builtin", "softmax,add")
    assert parse_spec("module:a.b") == ("module", "a.b")
    assert parse_spec("tritonbench:/x") == ("tritonbench", "/x")
    assert [t.name for t in resolve_tasks(SPEC)] == ["vadd", "rowsum"]
    assert resolve_task(SPEC, "rowsum") is evaluator_resolve_task(SPEC, "rowsum")
    assert canonical_spec(f" {SPEC} ") == SPEC
    with pytest.raises(ValueError, match="cannot import task module 'no.such.mod'"):
        resolve_tasks("module:no.such.mod")


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                    reason="CPU runs need TRITON_INTERPRET=1")
def test_live_runs_the_tasks_of_a_module_spec(tmp_path: Path) -> None:
    out = tmp_path / "trace"
    result = CliRunner().invoke(main, [
        "live", "--tasks", SPEC, "--device", "cpu", "--profile", "off", "--quiet",
        "--steps", "2", "--proposer", "mutate", "--policy", "explore", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert validate_trace(out) == []
    steps = load_trace(out).steps_df()
    assert sorted(steps["task_id"].unique()) == ["rowsum", "vadd"]
    # not_applicable answers are rows of their own that spend no step (issue #18)
    assert (steps["status"] != "not_applicable").sum() == 4
