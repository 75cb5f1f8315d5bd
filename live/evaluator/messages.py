"""Typed records of the worker protocol: what the evaluator asks a worker, and what it answers.

- `EvaluateRequest`: judge a candidate (the evaluator's ``evaluate``): check, then time.
- `GoldCheckRequest`: a load-time gold-vs-gold check (`live.gold.judge`, in a check
  worker): check only, going on past a failing perf shape, measuring peaks (NOTE D73, D82).
- `WorkerReply`: the one answer to either; built from keyword arguments, so a key without a
  field fails loudly (``TypeError``) instead of being dropped. The evaluator turns a reply
  into an ``EvalResult`` (`live.evaluator.result`) field by field: every reply field is either
  a result field or listed in `WORKER_ONLY_FIELDS`, which `check_reply_fields` asserts.

Statuses: one vocabulary, `STATUSES`: ``EVAL_STATUSES`` (``live.evaluator.result``) is what a
candidate's result and any `WorkerReply` may say; a gold check's record adds `GOLD_STATUSES`,
a call in an evaluator worker `CALL_STATUSES`.

The phase messages a worker sends while it works (``("phase", "compiled" | "shared" |
"shared:first" | "release" | "timing")``, answered ``{"op": "go"}``) and the ``{"op":
"exit"}`` / ``{"op": "call", ...}`` messages stay plain tuples and dicts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from live.evaluator.failures import FailureKind
from live.evaluator.result import EVAL_STATUSES, TimedResult
from live.evaluator.timing import TimingConfig
from live.tasks.findings import NO_FINDINGS, TaskFindings

#: what a load-time gold check adds: the task did not build, gold disagreed with itself every
#: time, or a fault dropped shapes and a fresh worker goes on
GOLD_STATUSES: tuple[str, ...] = ("build_error", "nondeterministic", "retry")
#: what a named call in an evaluator worker adds (`live.evaluator.isolated`): it raised, or its
#: worker died or went past its memory limit
CALL_STATUSES: tuple[str, ...] = ("error", "crashed")
#: every status of the evaluator's workers, in one vocabulary
STATUSES: tuple[str, ...] = EVAL_STATUSES + GOLD_STATUSES + CALL_STATUSES


@dataclass(frozen=True)
class EvaluateRequest:
    """Judge `code` as a candidate for task `task_name` of `task_spec` (checked on `n_seeds`
    seeds from `seed`, then timed against `baseline_code` or the task's reference).

    `drop_shapes`: perf-shape indices not run (the memory plan's and the load-time gold
    check's); `findings`: the task's load-time findings (``TaskFindings``: the gold check's
    verdicts, D73, so its unchecked shapes are timed but not compared; which shapes to check
    and time, D74), which a worker's rebuilt task does not hold. `exclusive_timing`: the
    worker asks the evaluator for the GPU lock as it goes (phase messages);
    `step_aside_flag`: the shared flag file of D97's step-aside.
    """

    task_spec: str
    task_name: str
    code: str
    seed: int = 0
    n_seeds: int = 3
    baseline_code: str | None = None
    timing: TimingConfig = field(default_factory=TimingConfig)
    exclusive_timing: bool = False
    step_aside_flag: str | None = None
    drop_shapes: tuple[int, ...] = ()
    findings: TaskFindings = NO_FINDINGS


@dataclass(frozen=True)
class GoldCheckRequest:
    """Check `code` (a task's k0) against the task's reference, without timing: the load-time
    gold-vs-gold check (`live.gold.judge`).

    `keep_going`: go on past a failing perf shape (each one's failure in the reply's
    ``shape_failures``); `measure_peaks`: each perf shape's peak device memory
    (``shape_peaks``); `shape_budget_s` / `shape_floor_s` / `shape_cap_s`: the time for perf
    shapes (NOTE D82; those not reached in ``not_reached``).
    """

    task_spec: str
    task_name: str
    code: str
    seed: int = 0
    n_seeds: int = 1
    keep_going: bool = True
    measure_peaks: bool = True
    drop_shapes: tuple[int, ...] = ()
    unchecked_shapes: tuple[int, ...] = ()
    shape_budget_s: float | None = None
    shape_floor_s: float = 0.0
    shape_cap_s: float | None = None


WorkerRequest = EvaluateRequest | GoldCheckRequest


@dataclass(frozen=True)
class WorkerReply:
    """A worker's answer to a request (every outcome).

    `status` is one of `EVAL_STATUSES`; `failure_kind` a ``FailureKind`` value (None when
    ``ok``); `recycle`: the worker is done (a fault may have left state behind). The timed
    part (``ms`` ... ``shapes``) is set only for a timed candidate (``TimedResult``); the
    phases (``setup_s`` ...) where the evaluation got that far. The gold check's fields
    (``source_note`` ... ``shape_failures``) only for a `GoldCheckRequest`, and ``worker_s``
    (the worker's wall time) is added by the worker's loop.
    """

    status: str
    error: str | None = None
    failure_kind: str | None = None
    recycle: bool = False
    correct: bool = False
    timing_backend: str | None = None
    timed: TimedResult | None = None
    setup_s: float | None = None
    compile_s: float | None = None
    check_s: float | None = None
    prep_s: float | None = None
    timing_s: float | None = None
    longest_shape_s: float | None = None
    source_check_s: float | None = None
    step_asides: int | None = None
    compiles_off_lock: int | None = None
    source_note: str | None = None
    not_reached: list[int] | None = None
    shape_peaks: dict[int, int] | None = None
    shape_failures: dict[int, dict[str, Any]] | None = None
    failed_shape: int | None = None
    worker_s: float | None = None

    def __post_init__(self) -> None:
        if self.status not in EVAL_STATUSES:
            raise ValueError(f"worker reply status {self.status!r}; expected one of "
                             f"{EVAL_STATUSES}")
        if self.failure_kind is not None:
            FailureKind(self.failure_kind)  # an unknown kind fails here, in the worker

    def kind(self) -> FailureKind | None:
        """`failure_kind` as a ``FailureKind``."""
        return None if self.failure_kind is None else FailureKind(self.failure_kind)

    def as_dict(self) -> dict[str, Any]:
        """Every field by name (the timed part flattened in), for callers that keep plain data
        (the gold check's records)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "timed"}
        if self.timed is not None:
            out.update(asdict(self.timed))
        return out


#: reply fields that are not ``EvalResult`` fields: the worker's own bookkeeping (`recycle`,
#: `worker_s`, the shape that failed) and what only a gold check reads
WORKER_ONLY_FIELDS: frozenset[str] = frozenset({
    "recycle", "worker_s", "failed_shape", "source_note", "not_reached", "shape_peaks",
    "shape_failures"})


def check_reply_fields(result_fields: set[str]) -> None:
    """Raise unless every `WorkerReply` field has a home: an ``EvalResult`` field (in
    `result_fields`) or `WORKER_ONLY_FIELDS`."""
    homeless = sorted(f.name for f in fields(WorkerReply)
                      if f.name not in result_fields and f.name not in WORKER_ONLY_FIELDS)
    if homeless:
        raise TypeError(f"worker reply fields without an EvalResult field: {homeless}")
