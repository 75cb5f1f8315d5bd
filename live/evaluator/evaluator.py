"""`Evaluator`: a pool of warm, sandboxed workers that judge candidates (parent side).

Usage::

    with Evaluator(EvaluatorConfig("builtin", device="auto", workers=1)) as ev:
        result = ev.evaluate("softmax", code, seed=0)

Each candidate runs in a worker process (torch and triton already imported). Compile and run
have their own timeouts; a hang is killed and classified ``timeout``, a crash ``runtime_error``
("worker died: signal 11 (SIGSEGV)"); either way the worker is replaced by a fresh one that starts
at once in the background, and the evaluator keeps serving.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import fields
from typing import Any

from live.devices import resolve_device
from live.evaluator.affinity import AffinityQueue
from live.evaluator.config import EvaluatorConfig
from live.evaluator.failures import FailureKind, kind_of
from live.evaluator.gpu_lock import GpuLock, StepAsideSignal
from live.evaluator.gpu_lock import timing_batch as _timing_batch
from live.evaluator.hashing import kernel_id
from live.evaluator.host_memory import HostRoom, KillOrder, total_bytes
from live.evaluator.memory_plan import (
    MemoryPlan,
    MemoryPool,
    plan_memory,
    resolve_cap,
    session_reservation,
)
from live.evaluator.messages import EvaluateRequest, WorkerReply, check_reply_fields
from live.evaluator.result import EvalResult, failure
from live.evaluator.sandbox import WorkerProcess, WorkerStartError
from live.evaluator.settings import WorkerSettings
from live.evaluator.static_check import static_check_for_task
from live.evaluator.task_source import canonical_spec
from live.tasks.findings import NO_FINDINGS, TaskFindings

log = logging.getLogger(__name__)

_RESULT_FIELDS = {f.name for f in fields(EvalResult)}
# every reply field is a result field or named as the worker's own: none is dropped unseen
check_reply_fields(_RESULT_FIELDS)
#: the reply fields an EvalResult takes as they are
_FROM_REPLY = tuple(f.name for f in fields(WorkerReply)
                    if f.name in _RESULT_FIELDS and f.name not in ("failure_kind",
                                                                   "timing_backend"))

#: NOTE (D94) how many workers an evaluation may start when the system kills them as they start
STARTUP_TRIES = 3


def gpu_worker_host_limit_mb() -> int:
    """A GPU evaluator worker's host-memory limit (RSS watch): half the host, 32-64 GiB.

    NOTE (D84): TritonBench-G's `context_attn_nopad` makes 33 GB of inputs on the host: under
    the old fixed 32 GiB every evaluation of it (k0 included) was killed as ``memory limit
    exceeded`` on a 128 GiB H200 host. The limit stops a runaway worker; host-memory admission
    keeps the workers together inside the host."""
    return int(min(65536, max(32768, total_bytes() / 2**20 / 2)))


class Evaluator:
    """Evaluate candidates of the tasks in `config.task_spec` in sandboxed worker processes.

    Args:
        config: the settings (`EvaluatorConfig`: tasks, device, workers, limits, timing).
        gpu_lock: share the device between concurrent ``evaluate`` calls (several workers):
            loading, compiling and checking hold it shared, timing holds it exclusive (the worker
            waits for its turn before timing), so timings are never taken while anything else
            runs on the device. Without it, callers serialize evaluations themselves.
        memory_plan: the plan to follow (`live.evaluator.memory_plan`); None on a GPU makes one
            from the tasks and the cap (workers may then be fewer than asked), ``False`` none.
            With a plan, each check reserves its task's bytes from the plan's pool, workers cap
            their allocator and input cache by it, and the plan's dropped shapes are skipped.
            None also reads the tasks' per-shape verdicts from their load-time gold check
            (NOTE D73: dropped shapes skipped, unchecked ones timed but not compared), which a
            worker's rebuilt task does not hold; ``False`` skips both.
        host_room: host-memory admission (`live.evaluator.host_memory`, NOTE D84): no
            evaluation starts while the host's available memory is under its reserve and
            another one is running; None: the default reserve on a GPU, none on a CPU;
            ``False``: none. With admission, the running evaluations' workers are also ranked
            for the system's out-of-memory killer, the youngest first to go (D93), and an
            evaluation whose worker the system killed runs once more in a fresh worker (D94).
    """

    def __init__(
        self,
        config: EvaluatorConfig,
        *,
        gpu_lock: GpuLock | None = None,
        memory_plan: MemoryPlan | None | bool = None,
        host_room: HostRoom | None | bool = None,
    ):
        self.config = config
        self.task_spec = canonical_spec(config.task_spec)
        self.device = resolve_device(config.device)
        self.timeout_s = float(config.timeout_s)
        self.compile_timeout_s = float(config.compile_timeout_s)
        memory_limit_mb = config.memory_limit_mb
        if memory_limit_mb is None:
            memory_limit_mb = 16384 if self.device == "cpu" else gpu_worker_host_limit_mb()
        self.memory_limit_mb = memory_limit_mb
        self.n_seeds = config.n_seeds
        self.timing = config.timing
        self.startup_timeout_s = config.startup_timeout_s
        self.static_check = config.static_check
        self.gpu_lock = gpu_lock
        workers = config.workers
        # each task's load-time findings (`TaskFindings`: the gold check's per-shape verdicts,
        # D73, peaks, the source's limits on shapes checked and timed, D74): a worker rebuilds a
        # task without them, so they travel with each request
        self._findings: dict[str, TaskFindings] = {}
        if memory_plan is None:
            from live.evaluator.task_source import resolve_loaded

            loaded = resolve_loaded(self.task_spec)
            self._findings = dict(loaded.findings)
            if self.device == "cuda":
                cap, source = resolve_cap(config.gpu_memory_gib)
                memory_plan = plan_memory(loaded.tasks, cap, workers, source,
                                          findings=self._findings)
        self.memory_plan: MemoryPlan | None = memory_plan or None
        self.memory_pool: MemoryPool | None = None
        if self.memory_plan is not None:
            workers = min(workers, self.memory_plan.workers)
            self.memory_pool = MemoryPool(self.memory_plan.pool_bytes)
        self.n_workers = workers
        if self.gpu_lock is not None:
            # NOTE (D81): the batch follows the workers actually started (the plan may cut them)
            self.gpu_lock.set_patience(
                batch=(config.timing_batch if config.timing_batch is not None
                       else _timing_batch(workers)),
                patience_s=config.timing_patience_s)
        self._signal: StepAsideSignal | None = None
        if self.gpu_lock is not None and config.step_aside:
            self._signal = StepAsideSignal()
            self.gpu_lock.attach_signal(self._signal)
        # NOTE (D84): on a GPU host no evaluation starts while the host's memory is short
        # (TritonBench-G's operators make their inputs on the host, up to 33 GB each)
        if host_room is None:
            host_room = HostRoom() if self.device == "cuda" else False
        self.host_room: HostRoom | None = host_room or None
        self.kill_order: KillOrder | None = KillOrder() if self.host_room is not None else None
        #: evaluations whose worker the system killed (D94), each run again once
        self.killed_by_system = 0
        self._running = 0
        self._idle: AffinityQueue[WorkerProcess] = AffinityQueue()
        self._all: set[WorkerProcess] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.workers_started = 0
        for _ in range(workers):
            self._idle.put(self._spawn())

    def _spawn(self) -> WorkerProcess:
        plan = self.memory_plan
        worker = WorkerProcess(WorkerSettings(
            device=self.device, memory_limit_mb=self.memory_limit_mb,
            gpu_workers=self.n_workers,
            # NOTE (D79): autotuning happens in the check phase, beside other checks (the GPU
            # lock's shared side), so full-length tuning benchmarks measured contention anyway
            # and made autotuned candidates' checks 15-60 s, holding every timing behind them
            quick_autotune=self.gpu_lock is not None,
            gpu_cap_bytes=plan.worker_cap_bytes if plan is not None else None,
            input_cache_bytes=plan.cache_bytes if plan is not None else None))
        with self._lock:
            self._all.add(worker)
            self.workers_started += 1
        return worker

    def _retire(self, worker: WorkerProcess) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)

    def shape_notes(self, task_name: str) -> list[str]:
        """The notes on `task_name`'s shapes: the gold check's verdicts (D73) and the memory
        plan's dropped shapes; empty without any."""
        notes = self.findings(task_name).shape_notes()
        if self.memory_plan is not None:
            notes += self.memory_plan.notes().get(task_name, [])
        return notes

    def dropped_shapes(self, task_name: str) -> list[int]:
        """The perf-shape indices of `task_name` not run: the load-time gold check's dropped
        ones (D73) and the memory plan's; a worker's rebuilt task holds neither."""
        dropped = self.findings(task_name).shapes_with("dropped")
        planned = self.memory_plan.dropped_shapes(task_name) if self.memory_plan else []
        return sorted({*dropped, *planned})

    def findings(self, task_name: str) -> TaskFindings:
        """`task_name`'s load-time findings (``NO_FINDINGS`` for a task without any)."""
        return self._findings.get(task_name, NO_FINDINGS)

    @property
    def session_memory(self) -> Callable[[list[str]], AbstractContextManager] | None:
        """What a profiling session reserves of this evaluator's memory pool while it runs
        beside the checks in flight (`session_reservation`); None without a plan."""
        if self.memory_pool is None or self.memory_plan is None:
            return None
        return functools.partial(session_reservation, self.memory_pool, self.memory_plan)

    @property
    def memory_plan_info(self) -> dict[str, Any] | None:
        """The plan as plain data for the trace manifest (None without a plan)."""
        return None if self.memory_plan is None else self.memory_plan.describe()

    @property
    def gpu_lock_info(self) -> dict[str, Any] | None:
        """The GPU lock's patience (timing batch and patience) for the trace manifest; None
        without a lock."""
        if self.gpu_lock is None:
            return None
        info = {**self.gpu_lock.describe(), "workers": self.n_workers,
                "step_aside": self._signal is not None}
        if self.host_room is not None:
            info["host_reserve_gib"] = self.host_room.info()["host_reserve_gib"]
        return info

    @property
    def device_info(self) -> dict[str, Any]:
        """What a worker reported at start (device name, limits, versions); starts one if needed."""
        worker = self._idle.get()
        try:
            worker.wait_ready(self.startup_timeout_s)
            return dict(worker.info or {})
        finally:
            self._idle.put(worker)

    def evaluate(
        self,
        task_name: str,
        code: str,
        *,
        seed: int = 0,
        baseline_code: str | None = None,
    ) -> EvalResult:
        """Judge `code` as a candidate for `task_name`; one `EvalResult` for every outcome.

        The candidate is timed interleaved with the task's PyTorch reference, or with
        `baseline_code` (another candidate, e.g. the task's k0) when given.
        """
        if self._closed:
            raise RuntimeError("evaluator is closed")
        started = time.perf_counter()
        kid = kernel_id(code)
        problem = (static_check_for_task(code, self.task_spec, task_name)
                   if self.static_check else None)
        if problem is not None:
            return failure("rejected", kid, task_name, problem,
                           eval_latency_s=time.perf_counter() - started)
        if self.host_room is not None:
            self.host_room.wait(lambda: self._running, lambda: self._closed)
        with self._lock:
            self._running += 1
        try:
            result = self._evaluate(task_name, code, kid, seed, baseline_code, started)
            if self.host_room is not None and _killed_by_system(result) and not self._closed:
                # NOTE (D94): the host ran out of memory (the system's killer sent SIGKILL; a
                # time-out or the worker's own limit reads otherwise): the machine's failure,
                # not the candidate's. Once more (the killed worker is replaced), when the host
                # has room
                with self._lock:
                    self.killed_by_system += 1
                log.warning("%s: the system killed the worker evaluating a candidate (the host "
                            "ran out of memory); evaluating it again", task_name)
                self.host_room.wait(lambda: self._running - 1, lambda: self._closed)
                result = self._evaluate(task_name, code, kid, seed, baseline_code, started)
            return result
        finally:
            with self._lock:
                self._running -= 1

    def _evaluate(self, task_name: str, code: str, kid: str, seed: int,
                  baseline_code: str | None, started: float) -> EvalResult:
        worker = self._idle.get(prefer=task_name)
        healthy = False
        turn = object()  # this evaluation, in the kill order
        if self.kill_order is not None:
            self.kill_order.started(turn, worker.proc.pid)
        try:
            worker = self._wait_ready(worker, turn, task_name)
            ready_s = time.perf_counter() - started
            result, healthy = self._run(worker, task_name, code, kid, seed, baseline_code)
            latency = time.perf_counter() - started - ready_s
            work = sum(x or 0.0 for x in (result.compile_s, result.check_s, result.timing_s))
            return result.with_(eval_latency_s=latency,
                                worker_overhead_s=max(0.0, latency - work),
                                worker_recycled=not healthy,
                                device_name=(worker.info or {}).get("device_name"))
        finally:
            if self.kill_order is not None:
                self.kill_order.ended(turn)
            if healthy and worker.alive:
                self._idle.put(worker, task_name)
            else:
                self._retire(worker)
                if not self._closed:
                    self._idle.put(self._spawn())

    def _wait_ready(self, worker: WorkerProcess, turn: object, task_name: str) -> WorkerProcess:
        """`worker` once it has started, or a replacement if the system killed it while it
        started (D94: the youngest process is the killer's first pick); raises as
        `WorkerProcess.wait_ready` for any other failure, or after `STARTUP_TRIES` kills."""
        for attempt in range(1, STARTUP_TRIES + 1):
            try:
                worker.wait_ready(self.startup_timeout_s)
                return worker
            except WorkerStartError as exc:
                if (self.host_room is None or self._closed or attempt == STARTUP_TRIES
                        or exc.failure is not FailureKind.KILLED_BY_SYSTEM):
                    raise
                with self._lock:
                    self.killed_by_system += 1
                log.warning("%s: the system killed an evaluator worker while it started (the "
                            "host ran out of memory); starting another", task_name)
                self._retire(worker)
                # the host has room again (this evaluation is counted in _running) first
                assert self.host_room is not None
                self.host_room.wait(lambda: self._running - 1, lambda: self._closed)
                worker = self._spawn()
                if self.kill_order is not None:
                    self.kill_order.ended(turn)
                    self.kill_order.started(turn, worker.proc.pid)
        raise AssertionError("unreachable")

    def _run(self, worker: WorkerProcess, task_name: str, code: str, kid: str, seed: int,
             baseline_code: str | None) -> tuple[EvalResult, bool]:
        backend = "cuda" if self.device == "cuda" else "cpu-interpreter"
        base = {"timing_backend": backend,
                "baseline": "reference" if baseline_code is None else "k0"}
        request = EvaluateRequest(
            task_spec=self.task_spec, task_name=task_name, code=code, seed=seed,
            n_seeds=self.n_seeds, baseline_code=baseline_code, timing=self.timing,
            exclusive_timing=self.gpu_lock is not None,
            step_aside_flag=self._signal.path if self._signal is not None else None,
            drop_shapes=tuple(self.dropped_shapes(task_name)),
            findings=self.findings(task_name))
        reserved = [0]
        if self.gpu_lock is None:
            try:
                if self.memory_pool is not None:  # serialized by the caller: hold it throughout
                    reserved[0] = self.memory_pool.acquire(self.memory_plan.need(task_name))
                return self._exchange(worker, request, task_name, kid, base, None)
            finally:
                self._give_back(reserved)
        held = ["none"]  # compiling holds nothing; the worker asks for more as it goes
        try:
            return self._exchange(worker, request, task_name, kid, base, held, reserved)
        finally:
            self._give_back(reserved)
            if held[0] == "shared":
                self.gpu_lock.release_shared()
            elif held[0] == "exclusive":
                self.gpu_lock.release_exclusive()

    def _give_back(self, reserved: list[int]) -> None:
        if reserved[0] and self.memory_pool is not None:
            self.memory_pool.release(reserved[0])
        reserved[0] = 0

    def _exchange(self, worker: WorkerProcess, request: EvaluateRequest, task_name: str,
                  kid: str, base: dict[str, str],
                  held: list[str] | None,
                  reserved: list[int] | None = None) -> tuple[EvalResult, bool]:
        """Send `request` and follow the worker's phases to its result; `held` tracks which
        side of the GPU lock this call holds (None: no lock)."""
        if not worker.send(request):
            got = worker._death()
            return failure("runtime_error", kid, task_name, got.detail,
                           failure_kind=got.failure, **base), False
        phase_timeout, phase = self.compile_timeout_s, "compile"
        waits = {"pool_wait_s": 0.0, "shared_wait_s": 0.0, "timing_wait_s": 0.0,
                 "yield_wait_s": 0.0, "shared_turns": 0}
        # the check's time limit runs from its first turn on the shared side, across the shapes
        # it makes off the lock (D95), less the waits to come back (not the candidate's time)
        check_deadline: float | None = None
        while True:
            if check_deadline is not None:
                phase_timeout = max(0.0, check_deadline - time.perf_counter())
            got = worker.receive(phase_timeout)
            if got.kind == "timeout":
                limit = self.compile_timeout_s if phase == "compile" else self.timeout_s
                return failure("timeout", kid, task_name,
                               f"{phase} exceeded {limit:g} s; worker killed", **base), False
            if got.kind in ("died", "memory"):
                prefix = "memory limit exceeded: " if got.kind == "memory" else ""
                return failure("runtime_error", kid, task_name, prefix + got.detail,
                               failure_kind=got.failure, **base), False
            tag, payload = got.message
            if tag == "phase" and payload == "release":
                # NOTE (D95): a check lets the shared side go while it makes a shape's inputs
                # on the CPU; it keeps its memory-pool reservation and asks for "shared" again
                if held is not None and held[0] == "shared":
                    self.gpu_lock.release_shared()
                    held[0] = "none"
                if not worker.send({"op": "go"}):
                    got = worker._death()
                    return failure("runtime_error", kid, task_name, got.detail,
                                   failure_kind=got.failure, **base), False
                continue
            if (tag == "phase" and payload in ("shared", "shared:first", "timing")
                    and held is not None):
                asked = time.perf_counter()
                self._take(held, "exclusive" if payload == "timing" else "shared", task_name,
                           reserved if reserved is not None else [0], waits)
                granted = time.perf_counter()
                if not worker.send({"op": "go"}):
                    got = worker._death()
                    return failure("runtime_error", kid, task_name, got.detail,
                                   failure_kind=got.failure, **base), False
                if payload == "shared:first":
                    # NOTE (D97): the first check's GPU work under the shared side; it is still
                    # the compile phase, under its own time limit
                    continue
                phase_timeout, phase = self.timeout_s, "run"
                if payload == "timing":
                    check_deadline = None  # timing has a time limit of its own
                elif check_deadline is None:
                    check_deadline = granted + self.timeout_s
                else:
                    check_deadline += granted - asked
                continue
            if tag == "phase":
                phase_timeout, phase = self.timeout_s, "run"
                continue
            if not isinstance(payload, WorkerReply):
                raise TypeError(f"worker answered {type(payload).__name__}, not a WorkerReply")
            values = {name: getattr(payload, name) for name in _FROM_REPLY}
            if held is not None:
                values.update({k: v for k, v in waits.items() if k in _RESULT_FIELDS})
            result = EvalResult(kernel_id=kid, task_id=task_name, **values,
                                failure_kind=kind_of(payload.failure_kind),
                                timing_backend=payload.timing_backend or base["timing_backend"],
                                baseline=base["baseline"])
            return result, not payload.recycle

    def _take(self, held: list[str], want: str, task_name: str, reserved: list[int],
              waits: dict[str, Any]) -> None:
        """Move this call's hold on the GPU lock to `want` (waiting is not the candidate's
        time: the phase timeout starts once it is granted). Checking (shared) first reserves
        the task's bytes from the memory plan's pool, before waiting for the lock so that a
        waiting reservation never holds timings back, and keeps them to the end of the
        evaluation: NOTE (D95) checks that let the lock go to make a shape's inputs still hold
        their tensors beside a timing, so the pool must still count the timing's."""
        assert self.gpu_lock is not None
        if held[0] == want:
            return
        if held[0] == "shared":
            self.gpu_lock.release_shared()
        elif held[0] == "exclusive":
            self.gpu_lock.release_exclusive()
        held[0] = "none"
        started = time.perf_counter()  # waits: pool_wait_s, shared_wait_s, timing_wait_s
        if want == "shared":
            # back to checking after a shape's inputs were made off the lock (D95): the
            # reservation is still held, and the wait is the timings' (yield_wait_s)
            again = waits["shared_turns"] > 0
            waits["shared_turns"] += 1
            if (not reserved[0] and self.memory_pool is not None
                    and self.memory_plan is not None):
                reserved[0] = self.memory_pool.acquire(self.memory_plan.need(task_name))
            pooled = time.perf_counter()
            waits["pool_wait_s"] += pooled - started
            self.gpu_lock.acquire_shared()
            waits["yield_wait_s" if again else "shared_wait_s"] += time.perf_counter() - pooled
        else:
            self.gpu_lock.acquire_exclusive()
            waits["timing_wait_s"] += time.perf_counter() - started
        held[0] = want

    def close(self) -> None:
        """Stop every worker."""
        self._closed = True
        with self._lock:
            workers = list(self._all)
            self._all.clear()
        for worker in workers:
            worker.shutdown()
        if self._signal is not None:
            if self.gpu_lock is not None:
                self.gpu_lock.attach_signal(None)
            self._signal.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _killed_by_system(result: EvalResult) -> bool:
    """A worker that died of a SIGKILL the evaluator did not send (D80, D94), as the sandbox
    saw its death (`FailureKind`), never read from the error text."""
    return (result.status == "runtime_error"
            and result.failure_kind is FailureKind.KILLED_BY_SYSTEM)
