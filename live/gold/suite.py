"""Gold-vs-gold check of a task suite: each task's k0 against its reference, in the real evaluator.

``check_tasks`` records per task the reference and k0 timings on this machine (the machine's
baseline), whether k0 passed, and for a task with a ``compiled_reference`` (KernelBench) the
reference under ``torch.compile`` timed by the same protocol (``compile_ms``);
``write_reference_timings`` keeps them as JSON.
``kernelband tasks check`` is a thin wrapper.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbsim.trace.layout import atomic_write_bytes
from live.evaluator.config import EvaluatorConfig
from live.evaluator.evaluator import Evaluator
from live.evaluator.result import EvalResult
from live.evaluator.task_source import resolve_tasks


@dataclass(frozen=True)
class GoldCheck:
    """One task's gold-vs-gold outcome."""

    task_id: str
    result: EvalResult
    #: the reference under torch.compile as k0's baseline (`TaskHooks.compiled_reference`): its
    #: time is this result's ``ref_ms``; None for a task without one or a failed k0
    compiled: EvalResult | None = None

    @property
    def compile_ms(self) -> float | None:
        ok = self.compiled is not None and self.compiled.status == "ok"
        return self.compiled.ref_ms if ok and self.compiled is not None else None

    @property
    def passed(self) -> bool:
        return self.result.status == "ok"


def check_tasks(
    task_spec: str,
    *,
    device: str = "auto",
    names: Sequence[str] | None = None,
    timeout_s: float = 300.0,
    on_result: Callable[[GoldCheck], None] | None = None,
    evaluator: Evaluator | None = None,
    tasks: Sequence[Any] | None = None,
    compile_timing: bool = False,
) -> tuple[list[GoldCheck], dict[str, Any]]:
    """Evaluate every task's k0 against its reference; returns the checks and the device info.
    `tasks`: the spec's tasks when the caller has loaded them already. `compile_timing`: also
    time a passing k0 against the task's ``compiled_reference`` (``GoldCheck.compiled``)."""
    tasks = list(tasks) if tasks is not None else resolve_tasks(task_spec)
    if names:
        wanted = set(names)
        tasks = [t for t in tasks if t.name in wanted]
    own = evaluator is None
    ev = evaluator or Evaluator(EvaluatorConfig(task_spec, device=device, timeout_s=timeout_s,
                                                compile_timeout_s=timeout_s))
    checks: list[GoldCheck] = []
    try:
        info = ev.device_info
        for task in tasks:
            result = ev.evaluate(task.name, task.k0, seed=0)
            compiled = None
            if (compile_timing and result.status == "ok"
                    and task.hooks.compiled_reference is not None):
                compiled = ev.evaluate(task.name, task.k0, seed=0,
                                       baseline_code=task.hooks.compiled_reference)
            check = GoldCheck(task.name, result, compiled)
            checks.append(check)
            if on_result is not None:
                on_result(check)
    finally:
        if own:
            ev.close()
    return checks, info


def write_reference_timings(path: str | Path, task_spec: str, checks: Sequence[GoldCheck],
                            info: dict[str, Any]) -> None:
    """The machine's reference and k0 timings as JSON (atomically: temp file + rename)."""
    record = {
        "task_spec": task_spec,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(),
        "device": info,
        "tasks": {
            c.task_id: {
                "passed": c.passed,
                "status": c.result.status,
                "error": c.result.error,
                "timing_backend": c.result.timing_backend,
                "shapes": list(c.result.shapes),
                "ref_ms": c.result.ref_ms,
                "ref_shape_ms": c.result.ref_shape_ms,
                "k0_ms": c.result.ms,
                "k0_shape_ms": c.result.shape_ms,
                "speedup": c.result.speedup,
                "timing_cv": c.result.timing_cv,
                **({} if c.compiled is None else {
                    "compile_ms": c.compile_ms,
                    "compile_shape_ms": c.compiled.ref_shape_ms,
                    "compile_status": c.compiled.status,
                    "compile_error": c.compiled.error}),
            }
            for c in checks
        },
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(record, indent=2, default=list).encode())
