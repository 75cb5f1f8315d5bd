"""`check_tasks` with several workers on a GPU times each task alone (the evaluator's GpuLock)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import live.gold.suite as suite
from live.evaluator.gpu_lock import GpuLock


class RecordingEvaluator:
    """Stands in for the evaluator: keeps the lock it was given and answers every task ok."""

    made: list[RecordingEvaluator] = []

    def __init__(self, config, *, gpu_lock=None):
        self.config = config
        self.gpu_lock = gpu_lock
        self.device_info = {"device": "cuda"}
        self.evaluated: list[str] = []
        self.closed = False
        RecordingEvaluator.made.append(self)

    def evaluate(self, name, code, *, seed, baseline_code=None):
        self.evaluated.append(name)
        return SimpleNamespace(status="ok", ref_ms=1.0, ms=1.0, speedup=1.0, timing_cv=0.01,
                               timing_backend="cuda", error=None, shapes=[{}],
                               ref_shape_ms=[1.0], shape_ms=[1.0])

    def close(self):
        self.closed = True

    memory_plan = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _tasks(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=f"t{i}", k0="code", hooks=SimpleNamespace(compiled_reference=None))
            for i in range(n)]


@pytest.mark.parametrize(("device", "parallel", "locked"), [
    ("cuda", 4, True),   # checks side by side: timings must not overlap them
    ("cuda", 1, False),  # one worker: nothing to overlap
    ("cpu", 4, False),   # wall-clock timing on the CPU: no device to share
])
def test_a_parallel_check_on_a_gpu_gives_its_evaluator_a_gpu_lock(monkeypatch, device, parallel,
                                                                  locked):
    RecordingEvaluator.made.clear()
    monkeypatch.setattr(suite, "Evaluator", RecordingEvaluator)
    monkeypatch.setattr(suite, "resolve_device", lambda asked: asked)
    checks, info = suite.check_tasks("kernelbench:x", device=device, tasks=_tasks(6),
                                     parallel=parallel)
    (ev,) = RecordingEvaluator.made
    assert isinstance(ev.gpu_lock, GpuLock) is locked
    assert ev.config.workers == parallel
    assert sorted(ev.evaluated) == [f"t{i}" for i in range(6)]
    assert [c.task_id for c in checks] == [f"t{i}" for i in range(6)]
    assert ev.closed and info == {"device": "cuda"}


def test_a_given_evaluator_is_used_as_it_is(monkeypatch):
    RecordingEvaluator.made.clear()
    given = RecordingEvaluator(None)
    monkeypatch.setattr(suite, "Evaluator", RecordingEvaluator)
    suite.check_tasks("kernelbench:x", device="cuda", tasks=_tasks(2), parallel=2,
                      evaluator=given)
    assert RecordingEvaluator.made == [given] and given.gpu_lock is None
    assert not given.closed  # the caller's evaluator is the caller's to close


def test_tasks_check_out_in_parallel_on_a_gpu_times_under_the_lock(monkeypatch, tmp_path):
    """`kernelband tasks check --out --parallel N` makes its own evaluator: on a GPU it must have
    the lock too (without it, 8 KernelBench problems at once on an H200 gave timings up to 1.96x
    their time alone)."""
    from click.testing import CliRunner

    from kernelband.cli import main

    RecordingEvaluator.made.clear()
    monkeypatch.setattr(suite, "Evaluator", RecordingEvaluator)
    monkeypatch.setattr(suite, "resolve_device", lambda asked: asked)
    out = tmp_path / "ref.json"
    result = CliRunner().invoke(main, ["tasks", "check", "--tasks", "add,softmax", "--device",
                                       "cuda", "--out", str(out), "--parallel", "2"])
    assert result.exit_code == 0, result.output
    (ev,) = RecordingEvaluator.made
    assert isinstance(ev.gpu_lock, GpuLock)
    assert ev.config.workers == 2
    assert sorted(ev.evaluated) == ["add", "softmax"]
    assert ev.closed
    assert sorted(json.loads(out.read_text())["tasks"]) == ["add", "softmax"]
