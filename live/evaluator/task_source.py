"""Rebuild a task inside a worker from (spec, name): tasks are never pickled.

A thin view of ``live.tasks.registry`` (every spec its source registry knows: ``builtin``,
``softmax,layernorm``, ``tritonbench:PATH``, ``module:PKG.MOD``), so the evaluator, the
profiler and ``kernelband live`` read specs the same way.
"""

from __future__ import annotations

from typing import Any

MODULE_PREFIX = "module:"


def canonical_spec(spec: str) -> str:
    """`spec` as a worker in another directory must see it (TritonBench paths made absolute)."""
    from live.tasks.registry import canonical_spec as registry_canonical

    return registry_canonical(spec)


def resolve_task(spec: str, name: str) -> Any:
    """The Task called `name` in task spec `spec`."""
    from live.tasks.registry import resolve_task as registry_resolve

    return registry_resolve(spec, name)


def resolve_tasks(spec: str) -> list[Any]:
    """Every Task in task spec `spec`."""
    from live.tasks.registry import resolve_tasks as registry_resolve_all

    return list(registry_resolve_all(spec))


def resolve_loaded(spec: str) -> Any:
    """Every Task in task spec `spec`, with its findings (a ``live.tasks.skips.Loaded``)."""
    from live.tasks.registry import resolve_loaded as registry_resolve_loaded

    return registry_resolve_loaded(spec)


def task_language(spec: str, name: str) -> str:
    """The kernel language of `name` in `spec` (``Task.language``); ``triton`` when the task
    cannot be found here (the worker then reports it as no such task)."""
    from live.tasks.registry import task_language as registry_language

    try:
        return registry_language(spec, name)
    except Exception:  # noqa: BLE001 - an unknown task is the worker's to report
        return "triton"
