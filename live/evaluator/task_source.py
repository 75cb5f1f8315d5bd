"""Rebuild a task inside a worker from (spec, name): tasks are never pickled.

Specs understood: whatever ``live.tasks.registry.resolve_task`` takes (``builtin``,
``softmax,layernorm``, ``tritonbench:PATH``), plus ``module:DOTTED.PATH``, a Python module with a
``TASKS`` list of ``Task`` objects (used by tests and for one-off experiments).
"""

from __future__ import annotations

import importlib
from typing import Any

MODULE_PREFIX = "module:"


def canonical_spec(spec: str) -> str:
    """`spec` as a worker in another directory must see it (TritonBench paths made absolute)."""
    if spec.startswith(MODULE_PREFIX):
        return spec
    try:
        from live.tasks.registry import canonical_spec as registry_canonical
    except ImportError:
        return spec
    return registry_canonical(spec)


def resolve_task(spec: str, name: str) -> Any:
    """The Task called `name` in task spec `spec`."""
    if spec.startswith(MODULE_PREFIX):
        module = importlib.import_module(spec[len(MODULE_PREFIX):])
        for task in module.TASKS:
            if task.name == name:
                return task
        known = ", ".join(t.name for t in module.TASKS)
        raise KeyError(f"no task {name!r} in {spec!r}; known: {known}")
    from live.tasks.registry import resolve_task as registry_resolve

    return registry_resolve(spec, name)


def resolve_tasks(spec: str) -> list[Any]:
    """Every Task in task spec `spec`."""
    if spec.startswith(MODULE_PREFIX):
        return list(importlib.import_module(spec[len(MODULE_PREFIX):]).TASKS)
    from live.tasks.registry import resolve_tasks as registry_resolve_all

    return list(registry_resolve_all(spec))
