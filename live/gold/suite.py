"""Gold-vs-gold check of a task suite: each task's k0 against its reference, in the real evaluator.

``check_tasks`` records per task the reference and k0 timings on this machine (the machine's
baseline), and whether k0 passed; ``write_reference_timings`` keeps them as JSON.
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
) -> tuple[list[GoldCheck], dict[str, Any]]:
    """Evaluate every task's k0 against its reference; returns the checks and the device info.
    `tasks`: the spec's tasks when the caller has loaded them already."""
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
            check = GoldCheck(task.name, ev.evaluate(task.name, task.k0, seed=0))
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
            }
            for c in checks
        },
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(record, indent=2, default=list).encode())
