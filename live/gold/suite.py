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
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbsim.trace.layout import atomic_write_bytes
from live.devices import resolve_device
from live.evaluator.config import EvaluatorConfig
from live.evaluator.evaluator import Evaluator
from live.evaluator.gpu_lock import GpuLock
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


def suite_evaluator(task_spec: str, *, device: str = "auto", timeout_s: float = 300.0,
                    workers: int = 1, gpu_memory_gib: float | None = None) -> Evaluator:
    """The evaluator a suite check runs on: `workers` workers, and on a GPU with more than one
    a `GpuLock`, so that checks go side by side and every timing runs alone (without the lock
    a timing shares the GPU with the others' checks: KernelBench level-1 matmuls with 8 at once
    on an H200 took a median 1.24x, up to 1.96x, their time alone, timing CV up to 70 %)."""
    workers = max(1, workers)
    lock = GpuLock() if workers > 1 and resolve_device(device) == "cuda" else None
    return Evaluator(EvaluatorConfig(task_spec, device=device, timeout_s=timeout_s,
                                     compile_timeout_s=timeout_s, workers=workers,
                                     gpu_memory_gib=gpu_memory_gib),
                     gpu_lock=lock)


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
    parallel: int = 1,
    skip: Collection[str] = (),
) -> tuple[list[GoldCheck], dict[str, Any]]:
    """Evaluate every task's k0 against its reference; returns the checks (in task order) and
    the device info. `tasks`: the spec's tasks when the caller has loaded them already.
    `compile_timing`: also time a passing k0 against the task's ``compiled_reference``
    (``GoldCheck.compiled``). `parallel`: tasks evaluated at once from threads (the evaluator's
    workers compile and check side by side; the evaluator made here is `suite_evaluator`'s,
    with a `GpuLock` on a GPU, so each timing runs alone; a given `evaluator` brings its own
    lock, or none: make it with `suite_evaluator` too).
    `skip`: task names left out (checked before, e.g. a resumed ``--out`` file). `on_result` is
    called as each check ends, from one thread at a time."""
    tasks = list(tasks) if tasks is not None else resolve_tasks(task_spec)
    if names:
        wanted = set(names)
        tasks = [t for t in tasks if t.name in wanted]
    skipped = set(skip)
    tasks = [t for t in tasks if t.name not in skipped]
    own = evaluator is None
    if evaluator is None:
        evaluator = suite_evaluator(task_spec, device=device, timeout_s=timeout_s,
                                    workers=parallel)
    ev = evaluator
    done: dict[str, GoldCheck] = {}
    report = threading.Lock()

    def one(task: Any) -> None:
        result = ev.evaluate(task.name, task.k0, seed=0)
        compiled = None
        if (compile_timing and result.status == "ok"
                and task.hooks.compiled_reference is not None):
            compiled = ev.evaluate(task.name, task.k0, seed=0,
                                   baseline_code=task.hooks.compiled_reference)
        check = GoldCheck(task.name, result, compiled)
        with report:
            done[task.name] = check
            if on_result is not None:
                on_result(check)

    try:
        info = ev.device_info
        if parallel <= 1:
            for task in tasks:
                one(task)
        else:
            with ThreadPoolExecutor(max_workers=parallel) as pool:
                for future in [pool.submit(one, task) for task in tasks]:
                    future.result()
    finally:
        if own:
            ev.close()
    return [done[t.name] for t in tasks if t.name in done], info


def check_record(check: GoldCheck) -> dict[str, Any]:
    """One task's entry of the reference-timings file."""
    c = check
    return {
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


def read_reference_timings(path: str | Path, task_spec: str) -> dict[str, dict[str, Any]]:
    """The task entries of an earlier reference-timings file of `task_spec` (to resume it);
    {} when there is none; one sentence when it is of another spec or not such a file."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text())
        tasks = record["tasks"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{path} is not a reference-timings file; cannot resume it") from None
    if record.get("task_spec") != task_spec:
        raise ValueError(f"{path} holds timings of {record.get('task_spec')!r}, not "
                         f"{task_spec!r}; cannot resume it")
    return dict(tasks)


def write_reference_timings(path: str | Path, task_spec: str, checks: Sequence[GoldCheck],
                            info: dict[str, Any],
                            earlier: dict[str, dict[str, Any]] | None = None) -> None:
    """The machine's reference and k0 timings as JSON (atomically: temp file + rename);
    `earlier`: entries of tasks checked before (a resumed file), kept first."""
    record = {
        "task_spec": task_spec,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(),
        "device": info,
        "tasks": {**(earlier or {}), **{c.task_id: check_record(c) for c in checks}},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(record, indent=2, default=list).encode())
