"""The worker protocol's typed records (`live.evaluator.messages`) and the split `EvalResult`:
a reply key without a field fails loudly, every reply field has a home, one status
vocabulary, and a result's flat view is what it was before the split."""

from __future__ import annotations

import pickle
from dataclasses import fields

import pytest

from live.evaluator.failures import FailureKind
from live.evaluator.messages import (
    CALL_STATUSES,
    GOLD_STATUSES,
    STATUSES,
    WORKER_ONLY_FIELDS,
    EvaluateRequest,
    GoldCheckRequest,
    WorkerReply,
    check_reply_fields,
)
from live.evaluator.result import EVAL_STATUSES, TIMED_FIELDS, EvalResult, TimedResult

#: the flat keys of an EvalResult before it was split (plus failure_kind): the readers' view
FLAT_KEYS = {
    "status", "kernel_id", "task_id", "error", "failure_kind", "correct", "ms", "shape_ms",
    "ref_ms", "ref_shape_ms", "speedup", "timing_cv", "timing_backend", "baseline",
    "timing_reps", "registers", "spills", "shared_bytes", "num_warps", "num_stages", "phi",
    "runtime_vec", "eval_latency_s", "worker_overhead_s", "compile_s", "check_s", "timing_s",
    "pool_wait_s", "shared_wait_s", "timing_wait_s", "yield_wait_s", "setup_s", "prep_s",
    "longest_shape_s", "source_check_s", "step_asides", "compiles_off_lock", "device_name",
    "worker_recycled", "shapes"}


def test_a_reply_key_without_a_field_fails_loudly() -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        WorkerReply(status="ok", correct=True, speedup_now=2.0)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="worker reply status"):
        WorkerReply(status="crashed")
    with pytest.raises(ValueError):
        WorkerReply(status="runtime_error", failure_kind="bad luck")


def test_every_reply_field_is_a_result_field_or_the_workers_own() -> None:
    result_fields = {f.name for f in fields(EvalResult)}
    check_reply_fields(result_fields)  # the evaluator runs this at import
    with pytest.raises(TypeError, match="compile_s"):
        check_reply_fields(result_fields - {"compile_s"})
    reply_fields = {f.name for f in fields(WorkerReply)}
    assert WORKER_ONLY_FIELDS <= reply_fields
    assert not WORKER_ONLY_FIELDS & result_fields


def test_one_status_vocabulary() -> None:
    assert STATUSES == EVAL_STATUSES + GOLD_STATUSES + CALL_STATUSES
    assert len(set(STATUSES)) == len(STATUSES)


def test_the_records_cross_a_pipe_whole() -> None:
    timed = TimedResult(ms=2.0, shape_ms=(1.0, 1.0), ref_ms=4.0, speedup=2.0,
                        shapes=({"N": 4},))
    reply = WorkerReply(status="ok", correct=True, timing_backend="cpu-interpreter",
                        timed=timed, check_s=0.5, worker_s=0.7)
    for record in (reply, EvaluateRequest("builtin", "add", "code", step_aside_flag="/x"),
                   GoldCheckRequest("builtin", "add", "code", shape_budget_s=3.0)):
        assert pickle.loads(pickle.dumps(record)) == record
    flat = reply.as_dict()
    assert flat["ms"] == 2.0 and flat["check_s"] == 0.5 and "timed" not in flat


def test_a_result_reads_its_timed_part_through_and_keeps_its_flat_view() -> None:
    timed = TimedResult(ms=2.0, shape_ms=(1.0, 1.0), ref_ms=4.0, speedup=2.0,
                        shapes=({"N": 4},))
    ok = EvalResult(status="ok", kernel_id="k", task_id="t", correct=True, timed=timed)
    assert ok.ms == 2.0 and ok.speedup == 2.0 and ok.shapes == ({"N": 4},)
    failed = EvalResult(status="runtime_error", kernel_id="k", task_id="t",
                        failure_kind=FailureKind.CANDIDATE)
    assert failed.ms is None and failed.speedup is None and failed.shapes == ()
    for result in (ok, failed):
        flat = result.to_dict()
        assert set(flat) == FLAT_KEYS
        assert all(flat[name] is None or name in ("shapes",) or result.timed is not None
                   for name in TIMED_FIELDS)
    assert failed.to_dict()["failure_kind"] == "candidate"
    assert ok.to_dict()["shape_ms"] == [1.0, 1.0]
    with pytest.raises(AttributeError):
        _ = ok.no_such_field  # type: ignore[attr-defined]
