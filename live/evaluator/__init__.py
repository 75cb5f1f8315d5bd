"""The kernel lab's evaluator: sandboxed workers that compile, check and time candidates."""

from live.evaluator.evaluator import Evaluator, resolve_device
from live.evaluator.hashing import kernel_id
from live.evaluator.result import EVAL_STATUSES, EvalResult, TimedResult
from live.evaluator.timing import TimingConfig

__all__ = ["EVAL_STATUSES", "EvalResult", "Evaluator", "TimedResult", "TimingConfig",
           "kernel_id", "resolve_device"]
