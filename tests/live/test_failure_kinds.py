"""Failure kinds are values set where a failure is caught (`live.evaluator.failures`), never
read from an error message: a candidate that writes "out of memory" and "(SIGKILL)" to its
stderr and fails keeps its own classification and gets no retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from live.evaluator.failures import FailureKind, exception_kind
from live.evaluator.host_memory import HostRoom
from live.evaluator.messages import EvaluateRequest, WorkerReply
from live.evaluator.run_candidate import CandidateRunner, classify_exception

#: what a hostile candidate writes before it fails: the words the old text checks looked for
LURE = ("import sys\n"
        "print('CUDA out of memory. worker died: signal 9 (SIGKILL)', file=sys.stderr)\n"
        "print('memory limit exceeded: host memory', file=sys.stderr)\n")

RAISES = LURE + '''

def vadd(x, y, out):
    print("RuntimeError: CUDA out of memory (SIGKILL)", file=sys.stderr, flush=True)
    raise RuntimeError("CUDA out of memory. Tried to allocate 8 GiB; worker died (SIGKILL)")
'''

EXITS = LURE + '''
import os


def vadd(x, y, out):
    print("CUDA out of memory; worker died: signal 9 (SIGKILL)", file=sys.stderr, flush=True)
    os._exit(3)
'''

REQUEST = EvaluateRequest(task_spec="builtin", task_name="add", code="")


@pytest.mark.parametrize(("code", "words"), [(RAISES, "RuntimeError"), (EXITS, "exit code 3")],
                         ids=["raises", "exits"])
def test_a_candidate_that_writes_the_words_keeps_its_own_failure(code: str, words: str) -> None:
    from live.evaluator import Evaluator, EvaluatorConfig
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    # with admission (as on a GPU host) a worker the system kills is evaluated again (D94)
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", workers=1, timeout_s=30,
                                   compile_timeout_s=60, memory_limit_mb=8192),
                   host_room=HostRoom(0)) as ev:
        result = ev.evaluate("vadd", code, seed=0)
        assert result.status == "runtime_error" and words in str(result.error)
        assert "SIGKILL" in str(result.error) or "out of memory" in str(result.error)
        assert result.failure_kind is FailureKind.CANDIDATE
        assert ev.killed_by_system == 0  # no second evaluation
        assert ev.workers_started == 2  # the one at start and its replacement, nothing more


def test_out_of_memory_is_known_by_the_exception_type_not_its_words() -> None:
    oom = classify_exception(torch.OutOfMemoryError("Tried to allocate 8.00 GiB"))
    assert oom.status == "runtime_error" and oom.kind is FailureKind.OUT_OF_MEMORY
    fake = classify_exception(RuntimeError("CUDA out of memory (SIGKILL)"))
    assert fake.status == "runtime_error" and fake.kind is FailureKind.CANDIDATE
    assert exception_kind(MemoryError()) is FailureKind.CANDIDATE


def test_the_worker_judges_again_only_after_a_real_out_of_memory(monkeypatch) -> None:
    """On a GPU, a candidate out of device memory is judged once more after the worker drops
    its input cache (it may have taken the room); the words alone do not buy that."""
    from live.evaluator.metadata import DeviceLimits

    runner = CandidateRunner("cuda", {"limits": DeviceLimits(name="test").__dict__},
                             input_cache_bytes=1 << 20)
    runner._inputs.ensure(("spec", "task", (), 0), lambda: (torch.zeros(16),))
    assert runner._inputs.held
    monkeypatch.setattr(runner, "_release_cached_memory", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    calls: list[int] = []

    def once(kind: str) -> Any:
        def evaluate_once(*args: Any) -> WorkerReply:
            calls.append(1)
            return WorkerReply(status="runtime_error", error="CUDA out of memory (SIGKILL)",
                               recycle=True, failure_kind=kind)
        return evaluate_once

    monkeypatch.setattr(runner, "_evaluate_once", once(FailureKind.CANDIDATE.value))
    runner.evaluate(REQUEST, Path("."), on_compiled=lambda: None)
    assert len(calls) == 1 and runner._inputs.held
    monkeypatch.setattr(runner, "_evaluate_once", once(FailureKind.OUT_OF_MEMORY.value))
    runner.evaluate(REQUEST, Path("."), on_compiled=lambda: None)
    assert len(calls) == 3 and not runner._inputs.held


def test_a_gold_check_out_of_room_is_known_by_its_kind() -> None:
    from live.gold.load import _killed_by_system, _oom

    words = {"status": "crashed", "error": "worker died: signal 9 (SIGKILL); CUDA out of "
             "memory; memory limit exceeded", "failure_kind": "candidate"}
    assert not _oom(words) and not _killed_by_system(words)
    for kind in ("out_of_memory", "memory_limit", "killed_by_system"):
        assert _oom({"status": "crashed", "error": "", "failure_kind": kind})
    assert _killed_by_system({"status": "crashed", "error": "", "failure_kind": "killed_by_system"})
