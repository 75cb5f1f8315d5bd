"""``kernelbench:PATH[@SELECTOR]``: a KernelBench folder (see ``live.tasks.kernelbench``).

SELECTOR: ``level1``, ``level2:1-20``, ``level1/19_ReLU``, a JSON file of problem names (and
their k0 files), or a comma list of those. Besides the four functions every source defines,
this one defines ``static_check``: the KernelBench rules the evaluator's static check adds for
its tasks (``live.evaluator.static_check.static_check_for_task``), and ``without_k0``: the
problems the selector gives no k0 file, read without loading (``live.tasks.registry.
tasks_without_k0``).
"""

from __future__ import annotations

from typing import Any

from live.tasks.skips import Loaded


def canonical(arg: str) -> str:
    from live.tasks.kernelbench import canonical as kb_canonical

    return kb_canonical(arg)


def load(arg: str, options: Any = None) -> Loaded:
    from live.tasks.kernelbench import load as kb_load

    return kb_load(arg, options)


def rebuild(arg: str, name: str) -> Any:
    from live.tasks.kernelbench import rebuild as kb_rebuild

    return kb_rebuild(arg, name)


def language_of(arg: str, name: str) -> str:
    return "triton"


def static_check(arg: str, name: str, code: str) -> str | None:
    """Why `code` is no KernelBench solution of problem `name` (one sentence), or None."""
    from live.tasks.kernelbench import find
    from live.tasks.kernelbench.shortcuts import shortcut_check

    problem = find(arg, name)
    return shortcut_check(code, problem.path.read_text(encoding="utf-8"))


def without_k0(arg: str) -> list[str]:
    """Task names of the selected problems that have no k0 file (read from the selector, no
    problem runs): a live run needs an LLM proposer to write their k0 (NOTE D100)."""
    from live.tasks.kernelbench.problems import select

    return [p.task_name for p in select(arg) if p.k0_path is None]
