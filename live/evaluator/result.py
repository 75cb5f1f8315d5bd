"""`EvalResult`: the one record the evaluator returns for every outcome (success or failure);
`TimedResult`: the part only a timed candidate has."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from live.evaluator.failures import FailureKind

#: statuses the evaluator can return (a subset of kbsim.trace.schema.STATUSES)
EVAL_STATUSES: tuple[str, ...] = (
    "ok",
    "compile_error",
    "runtime_error",
    "incorrect",
    "timeout",
    "rejected",
)
#: longest error message kept in a record
MAX_ERROR_CHARS = 500


def short_error(message: str, limit: int = MAX_ERROR_CHARS) -> str:
    """One message, whitespace collapsed, truncated to `limit` characters."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class TimedResult:
    """What only a timed candidate has: its timings, compile metadata and feature vectors.

    Timings are milliseconds; ``ms`` is the sum over timed shapes of per-shape medians and
    ``speedup`` is Σ baseline ms / Σ candidate ms (TritonBench convention). Vectors hold NaN
    where a dimension is unknown (for instance compile metadata under the interpreter).
    """

    ms: float | None = None
    shape_ms: tuple[float, ...] | None = None
    ref_ms: float | None = None
    ref_shape_ms: tuple[float, ...] | None = None
    speedup: float | None = None
    timing_cv: float | None = None
    timing_reps: tuple[int, ...] | None = None
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    phi: tuple[float, ...] | None = None
    runtime_vec: tuple[float, ...] | None = None
    shapes: tuple[dict[str, int], ...] = field(default_factory=tuple)


#: the fields of `TimedResult`, read through `EvalResult` as None (``shapes``: empty) when the
#: candidate was not timed
TIMED_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TimedResult))


@dataclass(frozen=True)
class EvalResult:
    """Outcome of evaluating one candidate for one task: what every outcome has, and, for a
    timed candidate, `timed` (`TimedResult`). Its fields read through as attributes
    (``result.ms``: None when not timed), so a reader need not ask which kind it holds.

    ``timing_backend`` says what the numbers are: ``cuda`` (CUDA events on a GPU) or
    ``cpu-interpreter`` (wall clock under ``TRITON_INTERPRET=1``: never a GPU figure).

    ``eval_latency_s`` runs from handing the candidate to a ready worker to its answer (waiting
    for a fresh worker to start is not counted); ``worker_overhead_s`` is that latency minus
    ``compile_s``, ``check_s`` and ``timing_s``: process hops, module loading, bookkeeping.
    """

    status: str
    kernel_id: str
    task_id: str
    error: str | None = None
    #: why it failed, set where the failure was caught (None when ``ok``); retries read this,
    #: never ``error``, which holds text the candidate wrote
    failure_kind: FailureKind | None = None
    correct: bool = False
    timing_backend: str = "cpu-interpreter"
    #: what the candidate was timed against: "reference" (the task's PyTorch code) or "k0"
    baseline: str = "reference"
    #: the timed part (None: not timed, every failure)
    timed: TimedResult | None = None
    eval_latency_s: float | None = None
    worker_overhead_s: float | None = None
    compile_s: float | None = None
    check_s: float | None = None
    timing_s: float | None = None
    #: of worker_overhead_s: waiting for the memory plan's pool, for the GPU lock's shared side
    #: (checking) and for its exclusive side (timing alone)
    pool_wait_s: float | None = None
    shared_wait_s: float | None = None
    timing_wait_s: float | None = None
    #: of shared_wait_s's kind, but mid-check: coming back to the shared side after making a
    #: shape's inputs off the lock (D95); and the worker's own bookkeeping: loading the task
    #: and the candidate (setup_s), the baseline and emptying the allocator before timing
    #: (prep_s)
    yield_wait_s: float | None = None
    setup_s: float | None = None
    prep_s: float | None = None
    #: of check_s, the two longest holds of the shared side a batch of timings may wait for:
    #: the longest single perf shape after the first (longest_shape_s) and the operator's own
    #: test code, run whole (source_check_s; TritonBench-G tasks only)
    longest_shape_s: float | None = None
    source_check_s: float | None = None
    #: how often the check let the shared side go mid-shape for a batch of timings (D97);
    #: None where the lock asks no check to step aside
    step_asides: int | None = None
    #: how many Triton compilations the check ran with the shared side let go (D97)
    compiles_off_lock: int | None = None
    device_name: str | None = None
    #: True when the worker process was replaced after this candidate (crash, hang, CUDA fault)
    worker_recycled: bool = False

    def __post_init__(self) -> None:
        if self.status not in EVAL_STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {EVAL_STATUSES}")

    def __getattr__(self, name: str) -> Any:
        # only called for names that are not fields: the timed part's, read through
        if name in TIMED_FIELDS:
            timed = self.__dict__.get("timed")
            if timed is None:
                return () if name == "shapes" else None
            return getattr(timed, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def with_(self, **changes: Any) -> EvalResult:
        """A copy with some fields changed."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of every field, the timed part's flattened in (None when not
        timed)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "timed"}
        out.update({name: getattr(self, name) for name in TIMED_FIELDS})
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
            elif isinstance(value, FailureKind):
                out[key] = value.value
        return out


def failure(status: str, kernel_id: str, task_id: str, error: str, **extra: Any) -> EvalResult:
    """A failed record with a short error message (``failure_kind``: ``CANDIDATE`` unless
    given)."""
    if extra.get("failure_kind") is None:
        extra["failure_kind"] = FailureKind.CANDIDATE
    return EvalResult(status=status, kernel_id=kernel_id, task_id=task_id,
                      error=short_error(error), correct=False, **extra)
