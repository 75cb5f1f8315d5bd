"""`FailureKind`: why an evaluation failed, as a value set where the failure is caught.

Decisions that follow a failure (judge a candidate again after dropping the worker's input
cache, retry a gold check with more room, run an evaluation again after the system killed its
worker) read this value, never the error message: a message holds text the candidate wrote
(its exception, the tail of its stderr), so a candidate could otherwise pick its own retry.
"""

from __future__ import annotations

import sys
from enum import Enum

#: CUDA's error code for a failed device allocation (cudaErrorMemoryAllocation)
_CUDA_ERROR_MEMORY_ALLOCATION = 2


class FailureKind(str, Enum):
    """What kind of failure ended an evaluation (None on a result that is ``ok``)."""

    #: the candidate's own: it raised, computed wrong, was refused, or ran too long
    CANDIDATE = "candidate"
    #: the device's allocator refused (``torch.OutOfMemoryError``, or CUDA's allocation error)
    OUT_OF_MEMORY = "out_of_memory"
    #: the worker went past its host-memory limit (the evaluator's watch killed it)
    MEMORY_LIMIT = "memory_limit"
    #: the worker died of a SIGKILL kernelband did not send: the system's out-of-memory
    #: killer (NOTE D80, D94)
    KILLED_BY_SYSTEM = "killed_by_system"
    #: the evaluator went away while the worker waited on it
    EVALUATOR_GONE = "evaluator_gone"


def kind_of(value: object) -> FailureKind | None:
    """A reply's ``failure_kind`` (a `FailureKind` or its value; None stays None)."""
    return None if value is None else FailureKind(value)


def exception_kind(exc: BaseException) -> FailureKind:
    """``OUT_OF_MEMORY`` for the device allocator's refusal, by the exception's type (and, for
    torch's ``AcceleratorError``, its CUDA error code); ``CANDIDATE`` otherwise."""
    torch = sys.modules.get("torch")
    if torch is None:
        return FailureKind.CANDIDATE
    if isinstance(exc, torch.OutOfMemoryError):
        return FailureKind.OUT_OF_MEMORY
    accelerator_error = getattr(torch, "AcceleratorError", None)
    if (accelerator_error is not None and isinstance(exc, accelerator_error)
            and getattr(exc, "error_code", None) == _CUDA_ERROR_MEMORY_ALLOCATION):
        return FailureKind.OUT_OF_MEMORY
    return FailureKind.CANDIDATE
