"""Judge one candidate inside a worker: load, compile, check, time, read metadata.

Takes a typed request (``live.evaluator.messages``: `EvaluateRequest` for a candidate,
`GoldCheckRequest` for a load-time gold check) and returns a `WorkerReply` for every outcome;
exceptions from the candidate are classified, never propagated.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from live.evaluator.checks import as_tuple, check_call, clone_inputs, poisoned_like
from live.evaluator.failures import FailureKind, exception_kind
from live.evaluator.host_memory import host_short
from live.evaluator.loader import (
    CandidateLoadError,
    LoadedCandidate,
    forget_candidate,
    load_candidate,
)
from live.evaluator.messages import (
    EvaluateRequest,
    GoldCheckRequest,
    WorkerReply,
    WorkerRequest,
)
from live.evaluator.metadata import (
    DeviceLimits,
    phi_vector,
    read_compile_meta,
    runtime_vector,
    theoretical_occupancy_pct,
)
from live.evaluator.result import TimedResult, short_error
from live.evaluator.step_aside import StepAside
from live.evaluator.task_source import resolve_task
from live.evaluator.timing import (
    Samples,
    median,
    robust_cv,
    time_cpu,
    time_cuda_interleaved,
)
from live.tasks.findings import NO_FINDINGS, TaskFindings

_COMPILE_ERROR_TYPES = ("CompilationError", "CompileTimeAssertionFailure",
                        "UnsupportedLanguageConstruct", "PTXASError", "OutOfResources")
_module_counter = itertools.count()
#: the seed of every candidate's perf-shape inputs on a GPU (NOTE D50)
PERF_SEED = 0


class Outcome(Exception):
    """A classified end of evaluation (status, message, failure kind) raised from deep inside;
    the kind is set here, where the failure is caught, never read back from the message."""

    def __init__(self, status: str, message: str, recycle: bool = False,
                 kind: FailureKind = FailureKind.CANDIDATE):
        super().__init__(message)
        self.status = status
        self.message = message
        self.recycle = recycle
        self.kind = kind

    def reply(self) -> dict[str, Any]:
        """The `WorkerReply` failure fields (status, short error, recycle, failure kind)."""
        return {"status": self.status, "error": short_error(self.message),
                "recycle": self.recycle, "failure_kind": self.kind.value}


def _gone(message: str) -> Outcome:
    """The evaluator went away while the worker waited on it (not the candidate's failure)."""
    return Outcome("runtime_error", message, recycle=True, kind=FailureKind.EVALUATOR_GONE)


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "cand_" in Path(frame.filename).name:
            where = f" (candidate line {frame.lineno})"
            break
    return f"{type(exc).__name__}: {exc}{where}"


def classify_exception(exc: BaseException, device: str = "cpu") -> Outcome:
    """compile_error for Triton compiler failures, runtime_error otherwise; the failure kind
    by the exception's type (``live.evaluator.failures.exception_kind``: out of device memory
    or the candidate's).

    Every runtime error recycles the worker: a CUDA fault poisons the context, and a candidate
    that died half-way may have left state behind (patched modules, leaked memory).
    """
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & set(_COMPILE_ERROR_TYPES):
        return Outcome("compile_error", _describe(exc))
    message = _describe(exc)
    if "illegal memory access" in str(exc):
        message = "illegal memory access: " + message
    return Outcome("runtime_error", message, recycle=True, kind=exception_kind(exc))


def _dps(task: Any) -> bool:
    return getattr(task, "call_style", "dps") == "dps"


class InputCache:
    """Pristine inputs by (task, shape, seed), least recently used first out, bounded in bytes.

    Building big inputs (seeded on the CPU, then copied) costs far more than the kernels; a
    worker evaluates many candidates of one task, so it keeps the pristine tensors and hands out
    clones (a candidate that mutates its inputs then spoils only its own copy).
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple, tuple[tuple, int]] = OrderedDict()
        self._bytes = 0
        #: keys whose inputs were made once and did not fit: not made ahead again (a small
        #: cache under a tight memory plan would otherwise make them twice per candidate)
        self.too_big: set[tuple] = set()

    @property
    def held(self) -> int:
        """Bytes of pristine inputs held."""
        return self._bytes

    def clear(self) -> None:
        self._items.clear()
        self._bytes = 0

    def ensure(self, key: tuple, make: Callable[[], tuple]) -> None:
        """Make and keep the inputs under `key` now, if missing and they fit (no clone)."""
        if key in self._items:
            self._items.move_to_end(key)
            return
        if key in self.too_big:
            return
        self._store(key, tuple(make()))

    def _store(self, key: tuple, pristine: tuple) -> bool:
        size = sum(x.numel() * x.element_size() for x in pristine if isinstance(x, torch.Tensor))
        if size > self.max_bytes:
            self.too_big.add(key)
            return False
        while self._items and self._bytes + size > self.max_bytes:
            _, (_, old_size) = self._items.popitem(last=False)
            self._bytes -= old_size
        self._items[key] = (pristine, size)
        self._bytes += size
        return True

    def get(self, key: tuple, make: Callable[[], tuple], keep: bool = True) -> tuple:
        """Clones of the pristine inputs under `key`, made by `make` when missing; `keep=False`
        for inputs that will not be asked for again (made, not cached, and not cloned)."""
        if key in self._items:
            self._items.move_to_end(key)
            return tuple(clone_inputs(self._items[key][0]))
        pristine = tuple(make())
        if keep and self._store(key, pristine):
            return tuple(clone_inputs(pristine))
        return pristine


def _out_of_memory(outcome: Outcome) -> bool:
    return outcome.status == "runtime_error" and outcome.kind is FailureKind.OUT_OF_MEMORY


@contextlib.contextmanager
def _stepping(aside: StepAside | None) -> Iterator[None]:
    """Run a check under `aside` (none: as it is); a failure after the parent went away while
    the check stood aside is that, not the candidate's (NOTE D97)."""
    if aside is None:
        yield
        return
    with aside:
        try:
            yield
        except Outcome:
            if aside.lost:
                raise _gone("the evaluator went away while checking") from None
            raise


def timed_indices(findings: Any, kept: list[int]) -> list[int]:
    """The perf shapes to time among `kept`: all of them, or the task's ``max_timed_shapes``
    largest by ``shape_bytes`` (its ``TaskFindings``; NOTE D74), in index order."""
    limit = findings.max_timed_shapes
    sizes = findings.shape_bytes
    if limit is None or len(kept) <= limit:
        return list(kept)
    if sizes is None:
        return list(kept[-limit:])
    return sorted(sorted(kept, key=lambda i: (-sizes[i], -i))[:limit])


def checked_indices(findings: Any, compared: list[int], timed: list[int]) -> list[int]:
    """The perf shapes a candidate is checked on among `compared`: all of them, or, with the
    task's ``max_checked_shapes`` (its ``TaskFindings``), the timed ones plus the smallest by
    ``shape_bytes`` up to that many (NOTE D74: the smallest catch masked tails, the largest
    what only scale shows)."""
    limit = findings.max_checked_shapes
    if limit is None or len(compared) <= limit:
        return list(compared)
    sizes = findings.shape_bytes or [0] * (max(compared) + 1)
    chosen = [i for i in compared if i in timed][:limit]
    for i in sorted(compared, key=lambda i: (sizes[i], i)):
        if len(chosen) >= limit:
            break
        if i not in chosen:
            chosen.append(i)
    return sorted(chosen)


class CandidateRunner:
    """Evaluates requests for one device, caching tasks by (spec, name) and their inputs."""

    def __init__(self, device: str, info: dict[str, Any], input_cache_bytes: int | None = None):
        self.device = device
        self.info = info
        self.limits = DeviceLimits(**info["limits"])
        self._tasks: dict[tuple[str, str], Any] = {}
        if input_cache_bytes is None:
            input_cache_bytes = 8 * 2**30 if device == "cuda" else 256 * 2**20
            share = info.get("gpu_bytes_share")
            if device == "cuda" and share:  # several workers on one GPU: a part of our share
                input_cache_bytes = min(input_cache_bytes, int(0.35 * share))
        self._inputs = InputCache(input_cache_bytes)
        self._spec = ""
        self._last_task: tuple[str, str] | None = None

    def release_inputs(self) -> None:
        """Drop every kept input (and, on a GPU, the allocator's cached blocks)."""
        self._inputs.clear()
        if self.device == "cuda":
            torch.cuda.empty_cache()

    def _input_key(self, task: Any, shape: dict[str, int], seed: int) -> tuple:
        return (self._spec, task.name, tuple(sorted(shape.items())), seed)

    def _make_inputs(self, task: Any, shape: dict[str, int], seed: int) -> tuple:
        # on a GPU only the perf shapes' inputs (one fixed seed, NOTE D50) come back: the test
        # shapes' seeds change with every candidate, and keeping them would push the big perf
        # inputs out of the cache. On CPU the timed inputs are the first check seed's, so keep.
        keep = self.device != "cuda" or seed == PERF_SEED
        return self._inputs.get(self._input_key(task, shape, seed),
                                lambda: task.make_inputs(shape, seed, self.device), keep=keep)

    def _prefetch_inputs(self, task: Any, shape: dict[str, int], seed: int) -> None:
        self._inputs.ensure(self._input_key(task, shape, seed),
                            lambda: task.make_inputs(shape, seed, self.device))

    def _release_cached_memory(self) -> None:
        """Give the allocator's cached blocks back to the device (memory plan: a worker holds
        its context and input cache between checks, not the peak of its last one)."""
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    def _sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def _task(self, spec: str, name: str) -> Any:
        key = (spec, name)
        if key != self._last_task and self._last_task in self._tasks:
            previous = self._tasks[self._last_task]
            # NOTE (D84): another task now; what the last one made on the host (TritonBench-G:
            # every performance input, up to 33 GB) goes if the host is short of memory
            if previous.hooks.release is not None and host_short():
                previous.hooks.release()
        self._last_task = key
        if key not in self._tasks:
            self._tasks[key] = resolve_task(spec, name)
        return self._tasks[key]

    def evaluate(self, request: WorkerRequest, workdir: Path,
                 on_compiled: Callable[[], None],
                 await_turn: Callable[[str], bool] | None = None) -> WorkerReply:
        """Judge one request. `await_turn(kind)`, if given, asks the parent for the GPU lock:
        ``"shared"`` after compiling (before the remaining checks), ``"timing"`` before timing
        (the device alone); it returns once granted (False: the parent is gone)."""
        response = self._evaluate_once(request, workdir, on_compiled, await_turn)
        try:
            self._release_cached_memory()
        except Exception as exc:  # noqa: BLE001 - a sticky CUDA fault surfaces here too
            # (kernel errors are reported asynchronously): the context is unusable, the
            # worker is replaced, and the response keeps what the evaluation found
            note = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
            if response.status == "ok":
                response = replace(response, status="runtime_error", error=note,
                                   failure_kind=FailureKind.CANDIDATE.value)
            return replace(response, recycle=True)
        if (self.device == "cuda" and response.status == "runtime_error"
                and response.kind() is FailureKind.OUT_OF_MEMORY and self._inputs.held):
            # our own cache may have taken the room: drop it and judge the candidate again
            self._inputs.clear()
            torch.cuda.empty_cache()
            response = self._evaluate_once(request, workdir, on_compiled, await_turn)
        return response

    def _evaluate_once(self, request: WorkerRequest, workdir: Path,
                       on_compiled: Callable[[], None],
                       await_turn: Callable[[str], bool] | None) -> WorkerReply:
        phases: dict[str, Any] = {}  # timings, and what a gold check reads (D73)
        names: list[str] = []
        try:
            return self._evaluate(request, workdir, on_compiled, phases, names, await_turn)
        except Outcome as outcome:
            return WorkerReply(**outcome.reply(), **phases)
        except BaseException as exc:  # noqa: BLE001 - anything left is a runtime fault
            return WorkerReply(**classify_exception(exc, self.device).reply(), **phases)
        finally:
            for name in names:
                forget_candidate(name)

    def _load(self, code: str, workdir: Path, task: Any, names: list[str],
              drop_shapes: Iterable[int] = (),
              findings: TaskFindings = NO_FINDINGS) -> LoadedCandidate:
        name = f"cand_{next(_module_counter)}"
        names.append(name)
        try:
            return load_candidate(task, code, drop_shapes=drop_shapes, findings=findings,
                                  workdir=workdir, module_name=name)
        except CandidateLoadError as exc:
            raise Outcome("compile_error", str(exc)) from None

    def _run_check(self, task: Any, module: Any, inputs: tuple, label: str) -> None:
        def run(inputs_: tuple, outputs: list | None) -> tuple:
            return task.call(module, inputs_, None if outputs is None else tuple(outputs))

        try:
            failure = check_call(run, task.reference, inputs, task.tolerance, self._sync,
                                 destination_passing=_dps(task),
                                 call_context=task.hooks.call_context)
        except Outcome:
            raise
        except BaseException as exc:  # noqa: BLE001
            outcome = classify_exception(exc, self.device)
            raise Outcome(outcome.status, f"{label}: {outcome.message}", outcome.recycle,
                          outcome.kind) from None
        if failure is not None:
            raise Outcome("incorrect", f"{label}: {failure.message}")

    def _evaluate(self, request: WorkerRequest, workdir: Path, on_compiled: Callable[[], None],
                  phases: dict[str, Any], names: list[str],
                  await_turn: Callable[[str], bool] | None = None) -> dict[str, Any]:
        # NOTE (D82): a gold-vs-gold check may bound the time it spends on performance inputs:
        # they stop `shape_budget_s` from now, or `shape_floor_s` after the first one was
        # checked if that is later (making the inputs may take most of the budget), but never
        # past `shape_cap_s` from now; those not reached are reported as `not_reached`, not
        # checked, and the operator's own test code still runs
        received = time.perf_counter()
        gold = request if isinstance(request, GoldCheckRequest) else None
        candidate = request if isinstance(request, EvaluateRequest) else None
        budget = gold.shape_budget_s if gold is not None else None
        try:
            task = self._task(request.task_spec, request.task_name)
        except Exception as exc:  # noqa: BLE001 - the caller asked for something that is not there
            raise Outcome("rejected", f"no such task: {type(exc).__name__}: {exc}") from None
        self._spec = request.task_spec
        seed = int(request.seed)
        n_seeds = int(request.n_seeds)
        dev = self.device
        # the memory plan's dropped shapes (indices into the timed list) are left out, and so
        # are the shapes the load-time gold check dropped (the request's findings, which the
        # rebuilt task does not hold); the shapes where the gold code disagrees with itself
        # are timed but not compared (NOTE D73)
        findings = candidate.findings if candidate is not None else NO_FINDINGS
        loaded = self._load(request.code, workdir, task, names,
                            drop_shapes=request.drop_shapes, findings=findings)
        module = loaded.module
        phases["setup_s"] = time.perf_counter() - received  # the task (made once), the module
        unchecked = set(gold.unchecked_shapes if gold is not None else ()) | set(
            findings.shapes_with("unchecked"))
        kept = list(loaded.perf_kept)
        if dev == "cuda":
            check_shapes = [(dict(s), None) for s in task.test_shapes]
            timed = timed_indices(findings, kept)
            timed_shapes = [dict(task.perf_shapes[i]) for i in timed]
        else:  # the CPU shapes stand in for the perf shapes (LoadedCandidate.cpu_kept)
            cpu = list(loaded.cpu_kept)
            check_shapes = [(s, i) for s, i in cpu if i not in unchecked]
            timed_shapes = [s for s, _ in cpu]
        # NOTE (D10): several seeds on every test shape, but each perf shape is checked once,
        # on the very inputs it is then timed with (big inputs dominate evaluation cost).
        # NOTE (D50): the perf shapes' inputs use one fixed seed (PERF_SEED) for every
        # candidate: all candidates of a task are timed on identical inputs, and a worker keeps
        # them (InputCache) instead of rebuilding hundreds of MB per attempt; the varying seeds
        # of the test shapes still catch candidates that memorize outputs.
        # plan entries: (shape, seed, perf-shape index or None)
        plan: list[tuple[dict, int, int | None]] = [
            (s, seed + k, i) for s, i in check_shapes for k in range(n_seeds)]
        timed_seed = PERF_SEED if dev == "cuda" else seed  # CPU: the first check seed's inputs
        if dev == "cuda":
            compared = [i for i in kept if i not in unchecked]
            if gold is None:  # a candidate: the task may check fewer (D74)
                compared = checked_indices(findings, compared, timed)
            plan += [(dict(task.perf_shapes[i]), PERF_SEED, i) for i in compared]
        if not plan and task.hooks.source_check is None:
            raise Outcome("rejected", "no shape left to check (every one dropped or unchecked)")
        # a gold-vs-gold check (check_only) may ask to go on past a failing perf shape and to
        # measure each shape's peak device memory (live.gold.judge, NOTE D73)
        keep_going = gold is not None and gold.keep_going
        peaks: dict[int, int] | None = ({} if gold is not None and gold.measure_peaks
                                        and dev == "cuda" else None)
        flag = candidate.step_aside_flag if candidate is not None else None
        failures: dict[int, dict[str, str]] = {}

        def check(entry: tuple[dict, int, int | None], inputs: tuple | None = None) -> None:
            shape, shape_seed, index = entry
            phases["failed_shape"] = index
            if peaks is not None and index is not None:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                before = torch.cuda.memory_allocated()
            try:
                if inputs is None:
                    inputs = self._make_inputs(task, shape, shape_seed)
                self._run_check(task, module, inputs, f"shape {shape} seed {shape_seed}")
            except Outcome as outcome:
                # out of memory is not a sticky fault (a worker recycles after any runtime
                # error only to be safe): the check goes on with the next shape
                if not keep_going or index is None or not (
                        (outcome.status == "incorrect" and not outcome.recycle)
                        or _out_of_memory(outcome)):
                    raise
                failures[index] = {"status": outcome.status, "error": outcome.message,
                                   "failure_kind": outcome.kind.value}
                if outcome.status == "incorrect" and peaks is not None:
                    peaks[index] = int(torch.cuda.max_memory_allocated() - before)
                self.release_inputs()
            else:
                if peaks is not None and index is not None:
                    torch.cuda.synchronize()
                    peaks[index] = int(torch.cuda.max_memory_allocated() - before)
            phases.pop("failed_shape", None)

        started = time.perf_counter()
        # NOTE (D97): with step-aside the first check runs under the shared side too (taken at
        # its first torch call or launch; Triton compiles with it let go), so that its GPU work
        # (TritonBench-G has no test shapes: a whole perf shape) never overlaps a timing
        first = (StepAside(flag, await_turn, self._sync, first=True)
                 if await_turn is not None and flag and peaks is None and plan else None)
        if plan:  # the first check compiles (a tiny shape); else the source check will
            with _stepping(first):
                check(plan[0])
            if first is not None and first.held_now:
                self._sync()
                if not await_turn("release"):
                    raise _gone("the evaluator went away while checking")
        phases["compile_s"] = time.perf_counter() - started - (
            first.waited_s if first is not None else 0.0)
        on_compiled()
        if await_turn is not None:
            # NOTE (D61): the timed shapes' inputs are made (seeded on the CPU, seconds for the
            # big ones, then copied) before asking for the GPU lock, like compiling: made under
            # the shared side, a cache miss held every timing (and, writers first, every other
            # check) waiting on one worker's CPU work. Their copy to the GPU may overlap another
            # worker's timing (milliseconds of PCIe traffic).
            started = time.perf_counter()
            for shape in timed_shapes:
                self._prefetch_inputs(task, shape, timed_seed)
            inputs_s = time.perf_counter() - started  # counted in check_s, where it was before
        else:
            inputs_s = 0.0
        # compiling (CPU work, plus the first check's tiny launch) overlaps other candidates;
        # from here on the GPU is shared with other checks only, never with a timing
        if await_turn is not None and not await_turn("shared"):
            raise _gone("the evaluator went away before checking")
        started = time.perf_counter()
        deadline = None
        if gold is not None and budget is not None:
            deadline = max(received + float(budget), started + float(gold.shape_floor_s or 0.0))
            if gold.shape_cap_s is not None:
                deadline = min(deadline, received + float(gold.shape_cap_s))
        not_reached: list[int] = []
        # NOTE (D95): a check holds the GPU lock's shared side only while it runs on the GPU:
        # each shape's inputs (TritonBench-G makes them on the CPU, seconds for the big ones,
        # then copies them) are made with the lock let go, so a batch of timings waits for the
        # GPU work of the shape in progress, not for whole checks. (Not when measuring peaks:
        # a gold check counts its inputs in a shape's peak.)
        off_lock = await_turn is not None and peaks is None
        waited = 0.0  # waiting to come back to the lock: the parent's yield_wait_s, not check_s
        longest_shape = 0.0
        # NOTE (D97): while a batch of timings waits, the check steps aside at its next torch
        # call or Triton launch (once its own GPU work is done) instead of holding the shared
        # side to the end of its shape or of the operator's test code
        aside = (StepAside(flag, await_turn, self._sync) if off_lock and flag else None)

        def aside_waits() -> float:
            return aside.waited_s if aside is not None else 0.0

        with _stepping(aside):
            for entry in plan[1:]:
                if (deadline is not None and entry[2] is not None
                        and time.perf_counter() > deadline):
                    not_reached.append(entry[2])
                    continue
                inputs = None
                if off_lock:
                    if aside is not None:  # off the lock: no safe point acts
                        aside.holding = False
                    self._sync()  # our GPU work so far is done before we let go
                    if not await_turn("release"):
                        raise _gone("the evaluator went away while checking")
                    inputs = self._make_inputs(task, entry[0], entry[1])
                    asked = time.perf_counter()
                    if not await_turn("shared"):
                        raise _gone("the evaluator went away while checking")
                    waited += time.perf_counter() - asked
                    if aside is not None:
                        aside.holding = True
                ran, aside_before = time.perf_counter(), aside_waits()
                check(entry, inputs)
                # the longest a shape kept the shared side (its waits while stepped aside
                # left out): what a batch of timings would wait for without D97
                longest_shape = max(longest_shape, time.perf_counter() - ran
                                    - (aside_waits() - aside_before))
            if plan[1:]:
                phases["longest_shape_s"] = longest_shape
            if not_reached:
                phases["not_reached"] = not_reached
            if peaks is not None:
                phases["shape_peaks"] = peaks
            source_check = task.hooks.source_check
            phases["failed_shape"] = None
            if source_check is not None:
                ran, aside_before = time.perf_counter(), aside_waits()
                try:
                    problem = source_check(request.code, dev)
                except BaseException as exc:  # noqa: BLE001
                    outcome = classify_exception(exc, dev)
                    raise Outcome(outcome.status, f"source check: {outcome.message}",
                                  outcome.recycle, outcome.kind) from None
                finally:
                    # the operator's own test code, run whole under the shared side
                    # (TritonBench-G), less its waits while stepped aside (D97)
                    phases["source_check_s"] = (time.perf_counter() - ran
                                                - (aside_waits() - aside_before))
                if problem is not None:
                    raise Outcome("incorrect", f"source check: {problem}")
                source_note = task.hooks.source_note
                note = source_note(dev) if source_note is not None else None
                if note:
                    phases["source_note"] = note
        if aside is not None:
            waited += aside.waited_s
            phases["step_asides"] = aside.steps + (first.steps if first is not None else 0)
            phases["compiles_off_lock"] = aside.compiles_off_lock + (
                first.compiles_off_lock if first is not None else 0)
        phases.pop("failed_shape", None)
        phases["check_s"] = time.perf_counter() - started - waited + inputs_s
        if failures:  # keep_going: every failing perf shape, for the gold check to judge
            first = min(failures)
            phases["shape_failures"] = failures
            raise Outcome(failures[first]["status"], failures[first]["error"],
                          kind=FailureKind(failures[first]["failure_kind"]))
        if candidate is None:  # a gold-vs-gold check: correctness, no timing
            return WorkerReply(status="ok", correct=True, **phases)

        prepared = time.perf_counter()
        baseline_code = candidate.baseline_code
        base_module = None
        if baseline_code is not None:
            base_module = self._load(baseline_code, workdir, task, names).module
        config = candidate.timing
        if await_turn is not None:
            self._sync()  # our own checks are done before we ask for the device alone
            self._release_cached_memory()  # what the plan's pool gets back is free on the card
        phases["prep_s"] = time.perf_counter() - prepared
        if await_turn is not None:
            if not await_turn("timing"):
                raise _gone("the evaluator went away before timing")
        started = time.perf_counter()
        shape_ms, ref_shape_ms, cvs, reps = [], [], [], []
        footprint = None
        for shape in timed_shapes:
            inputs = self._make_inputs(task, shape, timed_seed)
            refs = as_tuple(task.reference(*inputs))
            footprint = float(sum(x.numel() * x.element_size()
                                  for x in (*inputs, *refs) if isinstance(x, torch.Tensor)))
            outs = tuple(poisoned_like(r) for r in refs) if _dps(task) else None
            cand_fn = (lambda i=inputs, o=outs: task.call(module, i, o))
            if base_module is not None:
                base_outs = tuple(poisoned_like(r) for r in refs) if _dps(task) else None
                base_fn = (lambda i=inputs, o=base_outs: task.call(base_module, i, o))
            else:
                base_fn = (lambda i=inputs: task.reference(*i))
            try:
                if dev == "cuda":
                    samples: Samples = time_cuda_interleaved(
                        [base_fn, cand_fn], config, self.limits.l2_bytes)
                else:
                    samples = time_cpu([base_fn, cand_fn], config)
            except BaseException as exc:  # noqa: BLE001
                outcome = classify_exception(exc, dev)
                raise Outcome(outcome.status, f"timing shape {shape}: {outcome.message}",
                              outcome.recycle, outcome.kind) from None
            base_ms, cand_ms = samples.ms
            ref_shape_ms.append(median(base_ms))
            shape_ms.append(median(cand_ms))
            cvs.append(robust_cv(cand_ms))
            reps.append(len(cand_ms))
        phases["timing_s"] = time.perf_counter() - started

        ms = float(sum(shape_ms))
        ref_ms = float(sum(ref_shape_ms))
        weighted = sum(c * m for c, m in zip(cvs, shape_ms, strict=True))
        timing_cv = float(weighted / ms) if ms > 0 else math.nan
        meta = read_compile_meta(module, getattr(task, "language", "triton"))
        occupancy = (theoretical_occupancy_pct(meta.registers, meta.shared_bytes or 0,
                                               meta.num_warps, self.limits)
                     if meta.registers is not None and meta.num_warps else math.nan)
        last = timed_shapes[-1] if timed_shapes else {}
        flops = float(task.flops(last)) if task.flops is not None and last else None
        moved = float(task.bytes_moved(last)) if task.bytes_moved is not None and last else None
        timed = TimedResult(
            ms=ms,
            shape_ms=tuple(shape_ms),
            ref_ms=ref_ms,
            ref_shape_ms=tuple(ref_shape_ms),
            speedup=ref_ms / ms if ms > 0 else None,
            timing_cv=timing_cv,
            timing_reps=tuple(reps),
            registers=meta.registers,
            spills=meta.spills,
            shared_bytes=meta.shared_bytes,
            num_warps=meta.num_warps,
            num_stages=meta.num_stages,
            phi=phi_vector(ms, meta, self.limits),
            runtime_vec=runtime_vector(ms, footprint, flops, moved, meta, occupancy),
            shapes=tuple(timed_shapes),
        )
        return WorkerReply(status="ok", correct=True,
                           timing_backend="cuda" if dev == "cuda" else "cpu-interpreter",
                           timed=timed, **phases)
