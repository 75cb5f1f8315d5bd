"""In-process self-check: does a task's k0 (or any candidate source) match its reference?

This is the trusting, in-process version used by the tests and benchmarks; the evaluator
(``live.evaluator``) runs the sandboxed one, and every gold-vs-gold check of a task suite goes
through it. Both judge a call with the one comparator, ``live.evaluator.checks.check_call``
(poisoned outputs, in-place inputs, mutation, dtype tolerances), so they agree.

On ``cpu`` kernels run under Triton's interpreter (``TRITON_INTERPRET=1`` is set for the duration
of the check) on ``task.cpu_shapes``; on ``cuda`` on ``task.test_shapes`` and ``task.perf_shapes``.
Triton reads ``TRITON_INTERPRET`` when ``triton.language`` is first imported, so a CPU check must
run in a process that has not imported Triton yet, or that was started with the variable set.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from live.evaluator.checks import check_call, compare_values
from live.evaluator.loader import (
    CandidateLoadError,
    LoadedCandidate,
    forget_candidate,
    load_candidate,
)
from live.tasks.base import Shape, Task
from live.tasks.findings import NO_FINDINGS, TaskFindings
from live.tasks.interpreter_compat import enable_interpreter_compat


@dataclass(frozen=True)
class ShapeCheck:
    """The outcome for one (shape, seed): ``error`` is None when the candidate matched."""

    shape: Shape
    seed: int
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class SelfCheckResult:
    """The outcome of ``selfcheck``: ``error`` holds a failure that precedes any shape (the
    source does not import, or the task's source-level check fails)."""

    task: str
    device: str
    checks: tuple[ShapeCheck, ...]
    error: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        return self.error is None and all(check.ok for check in self.checks)

    @property
    def failures(self) -> list[str]:
        """One line per failure."""
        lines = [self.error] if self.error else []
        lines += [f"shape {c.shape} seed {c.seed}: {c.error}" for c in self.checks if c.error]
        return lines


@contextlib.contextmanager
def interpreter_for(device: str) -> Iterator[None]:
    """Set ``TRITON_INTERPRET=1`` while a CPU check runs (Triton reads it at ``@jit`` time),
    with the interpreter work-arounds of ``live.tasks.interpreter_compat`` installed."""
    if not device.startswith("cpu"):
        yield
        return
    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        _require_interpretable_triton()
        enable_interpreter_compat()
        yield
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous


def _require_interpretable_triton() -> None:
    """Triton decides at import time whether its own ``@jit`` library functions (``tl.sum``,
    ``tl.max``, ...) are interpreted; a process that imported ``triton.language`` before
    ``TRITON_INTERPRET=1`` was set cannot run kernels on the CPU."""
    language = sys.modules.get("triton.language")
    if language is not None and type(language.sum).__name__ != "InterpretedFunction":
        raise RuntimeError(
            "triton.language was imported before TRITON_INTERPRET=1 was set; set it in the "
            "environment before the process imports triton to run kernels on the CPU."
        )


def compare_outputs(
    task: Task, got: Sequence[torch.Tensor], expected: Sequence[torch.Tensor]
) -> str | None:
    """None when every output matches the reference within the task's dtype tolerance;
    otherwise one sentence naming the first mismatch (``live.evaluator.checks`` rules)."""
    if len(got) != len(expected):
        return f"expected {len(expected)} outputs, got {len(got)}"
    for index, (out, ref) in enumerate(zip(got, expected, strict=True)):
        problem = compare_values(out, ref, task.tolerance, f"output {index}")
        if problem is not None:
            return problem
    return None


def check_module(task: Task, module: object, shape: Shape, seed: int, device: str) -> str | None:
    """Run a candidate module on one (shape, seed) and compare with the reference (the
    evaluator's ``check_call``: poisoned outputs, in-place inputs, mutation)."""
    inputs = task.make_inputs(shape, seed, device)

    def run(inputs_: tuple, outputs: list | None) -> tuple:
        return task.call(module, inputs_, None if outputs is None else tuple(outputs))  # type: ignore[arg-type]

    def synchronize() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    try:
        failure = check_call(run, task.reference, inputs, task.tolerance, synchronize,
                             destination_passing=task.call_style == "dps",
                             call_context=task.hooks.call_context)
    except Exception as exc:  # a candidate's failure is an outcome, not a crash
        return f"raised {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None if failure is None else failure.message


def selfcheck(
    task: Task, device: str = "cpu", *, source: str | None = None, seeds: Sequence[int] = (0,),
    findings: TaskFindings = NO_FINDINGS,
) -> SelfCheckResult:
    """Check ``source`` (default: ``task.k0``) against the task's reference on ``device``
    (leaving out the perf shapes its `findings` drop)."""
    started = time.perf_counter()
    code = task.k0 if source is None else source
    with interpreter_for(device):
        try:
            loaded = load_candidate(task, code, findings=findings)
        except CandidateLoadError as exc:
            error = f"source does not import: {exc}"
            return SelfCheckResult(task.name, device, (), error, time.perf_counter() - started)
        try:
            return _check_loaded(task, loaded, code, device, seeds, started)
        finally:
            forget_candidate(loaded.module_name)


def _check_loaded(task: Task, loaded: LoadedCandidate, code: str, device: str,
                  seeds: Sequence[int], started: float) -> SelfCheckResult:
    """The source check, then every kept shape and seed, for a loaded candidate."""
    module = loaded.module
    if device.startswith("cpu"):
        shapes = [shape for shape, _ in loaded.cpu_kept]
    else:
        shapes = [*task.test_shapes, *(task.perf_shapes[i] for i in loaded.perf_kept)]
    checks: list[ShapeCheck] = []
    if task.hooks.source_check is not None:
        try:
            error = task.hooks.source_check(code, device)
        except Exception as exc:
            error = f"source check raised {type(exc).__name__}: {exc}"
        if error is not None:
            return SelfCheckResult(task.name, device, (), error, time.perf_counter() - started)
    for shape in shapes:
        for seed in seeds:
            shape_started = time.perf_counter()
            try:
                error = check_module(task, module, shape, seed, device)
            except Exception:
                error = "check failed: " + traceback.format_exc(limit=2).splitlines()[-1]
            checks.append(
                ShapeCheck(dict(shape), seed, error, time.perf_counter() - shape_started))
    return SelfCheckResult(task.name, device, tuple(checks), None, time.perf_counter() - started)
