"""Task sources: one registry from a spec's prefix to the module that provides its tasks.

A task spec is ``PREFIX:ARG`` (``tritonbench:/data/tb``, ``module:my_pkg.my_tasks``) or a
built-in spec without a prefix (``builtin``, ``softmax,layernorm``). ``SOURCES`` maps each
prefix to a module that defines:

- ``canonical(arg: str) -> str``: ``arg`` as a worker in another directory must see it;
- ``load(arg: str, options: LoadOptions) -> Loaded``: discovery, plus whatever checks the
  source runs (the tasks, and a ``Skipped`` record for each task it could not load);
- ``rebuild(arg: str, name: str) -> Task``: one task by name, the way a worker rebuilds it
  (tasks are never pickled), without re-running the source's checks;
- ``language_of(arg: str, name: str) -> str``: the task's kernel language, cheaply (the
  parent asks before a candidate's static check).

Optionally, ``static_check(arg: str, name: str, code: str) -> str | None``: rules of the
source's own that the evaluator's static check adds for its tasks (KernelBench: no torch
fallback, no cached outputs; ``live.evaluator.static_check.static_check_for_task``).

Adding a source is one new module with those four functions plus one line in ``SOURCES``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

#: spec prefix -> module implementing the source (imported on first use)
SOURCES: dict[str, str] = {
    "builtin": "live.tasks.sources.builtin",
    "module": "live.tasks.sources.module",
    "tritonbench": "live.tasks.sources.tritonbench",
    "kernelbench": "live.tasks.sources.kernelbench",
}

#: a spec without a registered prefix is a built-in spec (``builtin``, ``softmax,add``)
DEFAULT_SOURCE = "builtin"


@dataclass(frozen=True)
class LoadOptions:
    """How a source loads: where its checks run, and whether they may come from a cache.

    Attributes:
        device: ``auto`` | ``cuda`` | ``cpu`` for the source's own checks (gold vs gold).
        use_cache: reuse check results cached on disk (``--no-cache`` turns it off).
        progress: show a progress bar while checking.
        workers: parallel check workers (None: the source decides from the machine).
        timeout_s: limit per check, seconds.
    """

    device: str = "auto"
    use_cache: bool = True
    progress: bool = False
    workers: int | None = None
    timeout_s: float = 180.0


def parse_spec(spec: str) -> tuple[str, str]:
    """``(prefix, arg)`` of a task spec; a spec without a known prefix is ``builtin``'s."""
    spec = spec.strip()
    prefix, sep, arg = spec.partition(":")
    if sep and prefix in SOURCES:
        return prefix, arg.strip()
    return DEFAULT_SOURCE, spec


def source_module(prefix: str) -> ModuleType:
    """The module implementing the source registered under `prefix`."""
    try:
        return importlib.import_module(SOURCES[prefix])
    except KeyError:
        raise ValueError(f"unknown task source {prefix!r}; known: {', '.join(SOURCES)}.") from None


def known_prefixes() -> str:
    """``'builtin, module:ARG, tritonbench:ARG'`` for messages."""
    return ", ".join(p if p == DEFAULT_SOURCE else f"{p}:ARG" for p in SOURCES)
