"""Find tasks by spec, through the task-source registry (``live.tasks.sources``).

Specs: ``builtin``, a comma list of built-in names, ``tritonbench:PATH`` or ``module:PKG.MOD``
(and any prefix registered in ``live.tasks.sources.SOURCES``). Workers rebuild a task from
``(spec, name)`` with ``resolve_task`` instead of unpickling it.
"""

from __future__ import annotations

import functools
import logging

from live.tasks.base import Task
from live.tasks.skips import Loaded
from live.tasks.sources import DEFAULT_SOURCE, LoadOptions, parse_spec, source_module
from live.tasks.sources.builtin import BUILTIN_TASKS, builtin_task

__all__ = ["BUILTIN_TASKS", "TRITONBENCH_PREFIX", "builtin_task", "canonical_spec",
           "load_tasks", "resolve_loaded", "resolve_task", "resolve_tasks",
           "resolve_tasks_and_skipped", "task_language", "tasks_without_k0"]

TRITONBENCH_PREFIX = "tritonbench:"

_log = logging.getLogger(__name__)
#: (spec, operator, reason) already logged: a live run resolves its spec more than once
_warned: set[tuple[str, str, str]] = set()


def load_tasks(spec: str, options: LoadOptions | None = None) -> Loaded:
    """Every task named by ``spec``, what its source skipped, and how loading went."""
    prefix, arg = parse_spec(spec)
    return source_module(prefix).load(arg, options or LoadOptions())


def resolve_tasks(spec: str, options: LoadOptions | None = None) -> list[Task]:
    """Every task named by ``spec``.

    ``builtin`` gives all built-in tasks; ``softmax,layernorm`` the named ones;
    ``tritonbench:PATH`` every TritonBench-G operator under PATH that passes its gold-vs-gold
    check on this machine; ``module:PKG.MOD`` the module's ``TASKS``. Each skipped task is
    logged as a warning, once per process (``load_tasks`` gives them as data).
    """
    return resolve_loaded(spec, options).tasks


def resolve_loaded(spec: str, options: LoadOptions | None = None) -> Loaded:
    """``load_tasks``, each skipped task logged as in ``resolve_tasks``: the tasks with their
    ``TaskFindings`` (``Loaded.findings``)."""
    loaded = load_tasks(spec, options)
    for op, reason in loaded.skipped_pairs:
        if (spec, op, reason) not in _warned:
            _warned.add((spec, op, reason))
            _log.warning("skipped TritonBench operator %s: %s", op, reason)
    return loaded


def resolve_tasks_and_skipped(
    spec: str, options: LoadOptions | None = None
) -> tuple[list[Task], list[tuple[str, str]]]:
    """``resolve_tasks`` plus the ``(operator, reason)`` pairs the spec's source skipped."""
    loaded = load_tasks(spec, options)
    return loaded.tasks, loaded.skipped_pairs


def canonical_spec(spec: str) -> str:
    """``spec`` as a worker in another directory must see it (a ``tritonbench:`` path made
    absolute); a built-in spec comes back stripped."""
    prefix, arg = parse_spec(spec)
    canonical = source_module(prefix).canonical(arg)
    return canonical if prefix == DEFAULT_SOURCE else f"{prefix}:{canonical}"


def resolve_task(spec: str, name: str) -> Task:
    """One task by name within ``spec`` (the way a worker process rebuilds it), without
    re-running the source's checks. For ``tritonbench:PATH``, ``name`` may be the operator
    (``add``) or the task name (``tritonbench/add``)."""
    prefix, arg = parse_spec(spec)
    return source_module(prefix).rebuild(arg, name)


@functools.lru_cache(maxsize=1024)
def task_language(spec: str, name: str) -> str:
    """The kernel language of task ``name`` in ``spec`` (``Task.language``), cheaply."""
    prefix, arg = parse_spec(spec)
    return source_module(prefix).language_of(arg, name)


def tasks_without_k0(spec: str) -> list[str] | None:
    """Names of the tasks of ``spec`` that have no k0 of their own (`TaskHooks.k0_is_reference`),
    where its source can tell before loading (KernelBench: from the selector); None where it
    cannot (its tasks are then judged once loaded)."""
    prefix, arg = parse_spec(spec)
    without = getattr(source_module(prefix), "without_k0", None)
    return None if without is None else list(without(arg))
