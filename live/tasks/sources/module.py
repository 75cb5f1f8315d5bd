"""``module:PKG.MOD``: the ``TASKS`` list of ``Task`` objects of an importable Python module
(tests, one-off experiments)."""

from __future__ import annotations

import importlib
from typing import Any

from live.tasks.skips import Loaded


def _tasks(arg: str) -> list[Any]:
    if not arg:
        raise ValueError("empty module spec; use module:PKG.MOD (a module with a TASKS list).")
    try:
        module = importlib.import_module(arg)
    except ImportError as exc:
        raise ValueError(f"cannot import task module {arg!r}: {exc}") from None
    tasks = getattr(module, "TASKS", None)
    if tasks is None:
        raise ValueError(f"module {arg!r} has no TASKS list of tasks.")
    return list(tasks)


def canonical(arg: str) -> str:
    return arg.strip()


def load(arg: str, options: object = None) -> Loaded:
    return Loaded(_tasks(arg))


def rebuild(arg: str, name: str) -> Any:
    tasks = _tasks(arg)
    for task in tasks:
        if task.name == name:
            return task
    known = ", ".join(t.name for t in tasks)
    raise KeyError(f"no task {name!r} in 'module:{arg}'; known: {known}")


def language_of(arg: str, name: str) -> str:
    return getattr(rebuild(arg, name), "language", "triton")
