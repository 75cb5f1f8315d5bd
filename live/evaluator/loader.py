"""Load a candidate for a task: the one way the evaluator's worker, the self-check and the
profiler's target program import a candidate.

``load_candidate`` (a task and a candidate's code) imports what the task says to import
(``Task.module_source``: for a TritonBench-G task the code above a whole operator file's
separator, so its test code is not run at import), checks that a destination-passing candidate
defines the task's entry, and says which shapes are left once the dropped ones are taken out
(the load-time gold check's verdicts in the task's ``TaskFindings``, NOTE D73, and any the
caller drops, e.g. the evaluator's
memory plan).

Triton reads a kernel's source with ``inspect``, so the code must live in a real file: it is
written into `workdir` (the worker's: the candidate's own temp dir, also its cwd while it runs).
"""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live.tasks.findings import NO_FINDINGS, TaskFindings
from live.tasks.loading import candidate_dir, exec_module_file


class CandidateLoadError(Exception):
    """The candidate's module could not be built (syntax error, import-time exception, no entry)."""


@dataclass(frozen=True)
class LoadedCandidate:
    """A candidate imported for a task, and the task's shapes left to run it on.

    Attributes:
        module: the imported module (registered in ``sys.modules`` as `module_name` until
            ``forget_candidate``).
        module_name: its name in ``sys.modules``.
        perf_kept: the perf-shape indices not dropped, in order.
        cpu_kept: the CPU shapes not dropped, each with the perf-shape index it stands for (a
            CPU shape that is a perf shape, as in TritonBench-G, goes by that shape's index,
            any other by its position in ``cpu_shapes``).
    """

    module: types.ModuleType
    module_name: str
    perf_kept: tuple[int, ...]
    cpu_kept: tuple[tuple[dict[str, int], int], ...]


def dropped_shapes(drop_shapes: Iterable[int] = (),
                   findings: TaskFindings = NO_FINDINGS) -> set[int]:
    """The perf-shape indices not run: `drop_shapes` and those the task's load-time gold check
    dropped (``findings.shapes_with("dropped")``)."""
    return set(drop_shapes) | set(findings.shapes_with("dropped"))


def kept_shapes(task: Any, drop_shapes: Iterable[int] = (),
                findings: TaskFindings = NO_FINDINGS
                ) -> tuple[tuple[int, ...], tuple[tuple[dict[str, int], int], ...]]:
    """(perf-shape indices, CPU shapes with their index) left once `dropped_shapes` are out."""
    drop = dropped_shapes(drop_shapes, findings)
    perf = [dict(s) for s in task.perf_shapes]
    cpu = [(dict(s), perf.index(dict(s)) if dict(s) in perf else position)
           for position, s in enumerate(task.cpu_shapes)]
    return (tuple(i for i in range(len(perf)) if i not in drop),
            tuple((s, i) for s, i in cpu if i not in drop))


def load_candidate(
    task: Any,
    code: str,
    *,
    drop_shapes: Iterable[int] = (),
    findings: TaskFindings = NO_FINDINGS,
    workdir: Path | None = None,
    module_name: str | None = None,
) -> LoadedCandidate:
    """Import `code` as a candidate for `task` (``task.module_source`` applied), check it
    defines the task's entry (destination-passing tasks), and list the shapes left once the
    dropped ones (`drop_shapes` and those its `findings` drop) are out.

    The module file goes to `workdir` (default: the process's candidate folder) under
    `module_name` (default: one made from the source's hash). Raises ``CandidateLoadError``.
    """
    source = task.module_source(code)
    if module_name is None:
        module_name = "kb_cand_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    path = (candidate_dir() if workdir is None else workdir) / f"{module_name}.py"
    path.write_text(source, encoding="utf-8")
    try:
        compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise CandidateLoadError(f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    try:
        module = exec_module_file(path, module_name, keep=True)
    except BaseException as exc:  # noqa: BLE001 - any import-time failure is the candidate's
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CandidateLoadError(f"import failed: {type(exc).__name__}: {exc}") from None
    entry = task.entry if getattr(task, "call_style", "dps") == "dps" else None
    if entry is not None and not callable(getattr(module, entry, None)):
        sys.modules.pop(module_name, None)
        if not hasattr(module, entry):
            raise CandidateLoadError(f"candidate defines no callable {entry!r} (looking it up "
                                     f"raised AttributeError)")
        raise CandidateLoadError(f"candidate defines no callable {entry!r} (it is a "
                                 f"{type(getattr(module, entry)).__name__})")
    perf_kept, cpu_kept = kept_shapes(task, drop_shapes, findings)
    return LoadedCandidate(module, module_name, perf_kept, cpu_kept)


def forget_candidate(module_name: str) -> None:
    """Forget a candidate module so the next one starts clean."""
    sys.modules.pop(module_name, None)
