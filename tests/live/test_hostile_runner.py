"""Hostile candidates through the live runner: each attempt is classified and recorded, the run
keeps going, and the trace validates (the runner's evaluator has the static check on)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbsim.trace.reader import load_trace, validate_trace
from live.evaluator import task_source
from live.proposers.base import Proposal
from live.runner import RunConfig
from live.runner.runner import LiveRunner
from tests.live.fixtures.candidates.tiny_tasks import SPEC
from tests.live.fixtures.hostile.fault_table import record

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="CPU runs need TRITON_INTERPRET=1"
)

#: (fixture, status the runner must record with the static check on)
SCRIPT = [
    ("torch_ops", "rejected"),
    ("network", "rejected"),
    ("infinite_loop", "timeout"),
    ("segfault", "rejected"),
    ("cached_by_shape", "incorrect"),
    ("deletes_file", "rejected"),
    ("writes_input", "incorrect"),
    ("illegal_memory", "runtime_error"),
    ("huge_stdout", "ok"),
]


class ScriptedProposer:
    """Hands out the hostile candidates in order, whatever the policy asks for."""

    name = "scripted-hostile"

    def __init__(self, codes: list[str]) -> None:
        self.codes = list(codes)

    def describe(self) -> dict:
        return {"kind": self.name}

    def propose(self, task, parent, strategy, *, seed, sample_index) -> Proposal:
        return Proposal(status="ok", code=self.codes[sample_index])


def test_runner_records_every_hostile_attempt_and_keeps_going(tmp_path, monkeypatch):
    only_vadd = lambda spec: [t for t in task_source.resolve_tasks(spec) if t.name == "vadd"]
    monkeypatch.setattr("live.runner.runner.resolve_tasks", only_vadd)
    canary = tmp_path / "canary.txt"
    canary.write_text("must survive")
    codes = [(HOSTILE / f"{name}.py").read_text().replace("__CANARY_PATH__", str(canary))
             .replace("__PORT__", "9") for name, _ in SCRIPT]
    out = tmp_path / "trace"
    config = RunConfig(out=str(out), tasks=SPEC, policy="explore", steps=len(SCRIPT),
                       device="cpu", profile="off", in_flight=1, eval_timeout_s=3)
    runner = LiveRunner(config, ScriptedProposer(codes), show_progress=False)
    assert runner.evaluator.static_check
    result = runner.run()
    assert validate_trace(out) == []
    steps = load_trace(out).steps_df().sort_values("step")
    observed = list(steps["status"])
    for (name, expected), got, error in zip(SCRIPT, observed, steps["error"], strict=True):
        record("hostile kernels (live runner, static check on)", name, expected,
               got + (f": {error}" if isinstance(error, str) else ""))
    assert observed == [status for _, status in SCRIPT]
    rejected = steps[steps["status"] == "rejected"]
    assert rejected["error"].str.startswith("static check:").all()
    assert (steps["reward"][steps["status"] != "ok"] == 0.0).all()
    assert result.tasks[0].steps == len(SCRIPT)
    assert canary.read_text() == "must survive"
