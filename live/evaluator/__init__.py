"""The kernel lab's evaluator: sandboxed workers that compile, check and time candidates."""

from live.devices import resolve_device
from live.evaluator.config import EvaluatorConfig
from live.evaluator.evaluator import Evaluator
from live.evaluator.hashing import kernel_id
from live.evaluator.interface import CandidateEvaluator
from live.evaluator.result import EVAL_STATUSES, EvalResult, TimedResult
from live.evaluator.timing import TimingConfig

__all__ = ["EVAL_STATUSES", "CandidateEvaluator", "EvalResult", "Evaluator", "EvaluatorConfig",
           "TimedResult", "TimingConfig", "kernel_id", "resolve_device"]
