"""Find tasks by spec: ``builtin``, a comma list of built-in names, or ``tritonbench:PATH``.

Workers rebuild a task from ``(spec, name)`` with ``resolve_task`` instead of unpickling it.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path

from live.tasks.base import Task

#: every built-in task, in the order they are listed (module ``live.tasks.builtin.<name>``)
BUILTIN_TASKS: tuple[str, ...] = (
    "add",
    "bias_gelu",
    "swiglu",
    "softmax",
    "layernorm",
    "rmsnorm",
    "cross_entropy",
    "cumsum",
    "transpose",
    "embedding",
    "quantize_int8",
    "dequantize_int8",
    "matmul_fp16",
    "matmul_bf16",
    "attention",
)

TRITONBENCH_PREFIX = "tritonbench:"

_log = logging.getLogger(__name__)


def builtin_task(name: str) -> Task:
    """The built-in task called ``name``; ValueError naming the valid ones otherwise."""
    if name not in BUILTIN_TASKS:
        raise ValueError(
            f"unknown task {name!r}; built-in tasks are: {', '.join(BUILTIN_TASKS)} "
            f"(or use {TRITONBENCH_PREFIX}PATH)."
        )
    return importlib.import_module(f"live.tasks.builtin.{name}").TASK


def resolve_tasks(spec: str) -> list[Task]:
    """Every task named by ``spec``.

    ``builtin`` gives all built-in tasks; ``softmax,layernorm`` the named ones;
    ``tritonbench:PATH`` every TritonBench-G operator under PATH that passes its gold-vs-gold
    check on this machine; each skipped operator is logged as a warning (use
    ``resolve_tasks_and_skipped`` to get them as data).
    """
    tasks, skipped = resolve_tasks_and_skipped(spec)
    for op, reason in skipped:
        _log.warning("skipped TritonBench operator %s: %s", op, reason)
    return tasks


def resolve_tasks_and_skipped(spec: str) -> tuple[list[Task], list[tuple[str, str]]]:
    """``resolve_tasks`` plus the ``(operator, reason)`` pairs a TritonBench spec skipped."""
    spec = spec.strip()
    if spec.startswith(TRITONBENCH_PREFIX):
        from live.tasks.tritonbench import load_tritonbench

        return load_tritonbench(_tritonbench_path(spec))
    return _builtin_tasks(spec), []


def _builtin_tasks(spec: str) -> list[Task]:
    if spec == "builtin":
        return [builtin_task(name) for name in BUILTIN_TASKS]
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise ValueError(
            f"empty task spec {spec!r}; use 'builtin', a comma list of names or "
            f"'{TRITONBENCH_PREFIX}PATH'."
        )
    return [builtin_task(name) for name in names]


def canonical_spec(spec: str) -> str:
    """``spec`` with a ``tritonbench:`` path made absolute, so that a worker running in another
    directory resolves the same folder. Other specs come back stripped."""
    spec = spec.strip()
    if spec.startswith(TRITONBENCH_PREFIX):
        return TRITONBENCH_PREFIX + str(_tritonbench_path(spec).resolve())
    return spec


def _tritonbench_path(spec: str) -> Path:
    path = Path(spec[len(TRITONBENCH_PREFIX):]).expanduser()
    if not path.is_absolute() and not path.exists():
        # a worker may run in a temp dir; a relative spec was meant from the launching shell's
        # directory, which child processes inherit as $PWD
        launched_from = os.environ.get("PWD")
        if launched_from and (Path(launched_from) / path).exists():
            return Path(launched_from) / path
    return path


def resolve_task(spec: str, name: str) -> Task:
    """One task by name within ``spec`` (the way a worker process rebuilds it).

    For ``tritonbench:PATH`` the operator is rebuilt without re-running the gold-vs-gold check;
    ``name`` may be the operator (``add``) or the task name (``tritonbench/add``).
    """
    spec = spec.strip()
    if spec.startswith(TRITONBENCH_PREFIX):
        from live.tasks.tritonbench import tritonbench_task

        return tritonbench_task(_tritonbench_path(spec), name)
    task = builtin_task(name)
    if spec != "builtin":
        allowed = [part.strip() for part in spec.split(",") if part.strip()]
        if name not in allowed:
            raise ValueError(
                f"task {name!r} is not in spec {spec!r}; it names: {', '.join(allowed)}."
            )
    return task
