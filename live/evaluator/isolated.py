"""Run named functions in sandboxed evaluator workers, several in parallel (parent side), and
serve them (worker side).

A *call* is ``{"op": "call", "function": "live.pkg.mod.fn", "kwargs": {...}}``: the worker
imports ``fn`` (only from kernelband's own ``live.`` package) and returns
``fn(runner=..., workdir=..., **kwargs)``, a JSON-able dict with at least ``status``. This is how
gold-vs-gold checks and plain-script runs of a benchmark's operators reach the workers: each in
a process of its own, a crash, hang or CUDA fault confined to that worker, which is then
replaced while the other workers go on.
"""

from __future__ import annotations

import importlib
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from live.devices import usable_cores, worker_count
from live.evaluator.failures import FailureKind, exception_kind
from live.evaluator.host_memory import HostRoom, KillOrder
from live.evaluator.sandbox import WorkerProcess, WorkerStartError
from live.evaluator.settings import WorkerSettings

#: the package a call's function must come from
CALLABLE_PREFIX = "live."


@dataclass(frozen=True)
class Call:
    """One function call to run in a worker; `key` names it in the results."""

    key: str
    function: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 300.0
    #: a *tail* call waits until no other call is queued, runs beside few other tail calls
    #: (`run_calls`'s `tail_slots`), in a worker of its own started with `memory_limit_mb` and
    #: `gpu_workers` over the pool's settings (a check retried with more room); its result's
    #: ``beside`` says how many other calls ran at once at most while it ran (0: it had the
    #: machine to itself)
    tail: bool = False
    memory_limit_mb: int | None = None
    gpu_workers: int | None = None
    #: once the call has run this long, `run_calls`'s ``overtime(call)`` may queue another
    #: call beside it (None: never)
    overtime_s: float | None = None
    #: run in a newly started worker (the thread's previous one is shut down first): a check
    #: again after a failure that may come from the worker's state (its allocator's layout)
    fresh: bool = False
    #: queued ahead of the calls waiting (a check the system killed for memory, again: D92)
    front: bool = False


def serve_call(request: dict[str, Any], runner: Any, workdir: Path) -> dict[str, Any]:
    """Worker side: run one call; every exception becomes ``status: error`` and recycles the
    worker (a failed benchmark script may have left CUDA or module state behind)."""
    name = str(request.get("function", ""))
    if not name.startswith(CALLABLE_PREFIX):
        return {"status": "error", "error": f"refused call of {name!r}: not a kernelband "
                f"function ({CALLABLE_PREFIX}*)", "recycle": False}
    module_name, _, function_name = name.rpartition(".")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
        result = dict(function(runner=runner, workdir=workdir, **request.get("kwargs", {})))
    except BaseException as exc:  # noqa: BLE001 - the call's failure is its result
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {"status": "error", "error": last[:2000], "recycle": True,
                "failure_kind": exception_kind(exc).value}
    result.setdefault("status", "ok")
    return result


def default_workers(device: str, n_calls: int) -> int:
    """One worker per CPU core (compiling is CPU work) up to 16 on a GPU, 4 on a CPU."""
    return worker_count(device, asked=None, parallel=n_calls, cores=usable_cores(),
                        gpu_cap=16, cpu_cap=4)


def run_calls(
    calls: Sequence[Call],
    *,
    device: str,
    workers: int | None = None,
    memory_limit_mb: int | None = None,
    startup_timeout_s: float = 300.0,
    on_result: Callable[[Call, dict[str, Any]], None] | None = None,
    settings: WorkerSettings | None = None,
    follow_up: Callable[[Call, dict[str, Any]], Call | Sequence[Call] | None] | None = None,
    tail_slots: int = 1,
    host_room: HostRoom | None = None,
    overtime: Callable[[Call], Call | None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run every call in a pool of sandboxed workers; the result dict of each, by key.

    A worker that dies, hangs past the call's ``timeout_s`` or asks to be recycled is killed
    and replaced; its call's result says what happened (``crashed`` / ``timeout``).
    ``follow_up(call, result)`` may return another call (or several) to run in the same
    pool (a failed check's plain-script run), so it overlaps the calls still pending instead of
    waiting for all of them; its result is reported like the others. A ``tail`` call (queued or a
    follow-up) starts once nothing else is queued, beside the calls still running at most and
    `tail_slots` tail calls in all. With `host_room`, no call starts while the host's available
    memory is under its reserve and another call is running (NOTE (D84)); a call that waited
    so has ``host_wait_s`` in its result, and the system's out-of-memory killer is steered to
    the youngest running call (NOTE (D93), `KillOrder`). A call with ``overtime_s`` that
    runs past it is passed to ``overtime(call)`` once, which may return a call to queue at once
    (beside it); idle workers stay while such a call may still come.

    Workers start with `settings` (``WorkerSettings``; its device and memory limit are the
    pool's), by default `workers` sharing the GPU.
    """
    if not calls:
        return {}
    n_workers = workers or default_workers(device, len(calls))
    if memory_limit_mb is None:
        memory_limit_mb = 16384 if device == "cpu" else 32768
    pending: deque[Call] = deque()
    tails: deque[Call] = deque()
    results: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()
    # calls running (tail calls too), and for each running tail call the most other calls
    # seen running beside it
    state: dict[str, Any] = {"in_flight": 0}
    beside: dict[int, int] = {}
    waiting_since: dict[int, float] = {}  # threads held back by host memory, since when
    host_waits: dict[str, float] = {}  # calls that were held back, how long
    wait = object()  # take(): nothing to start now, look again
    running: dict[int, tuple[Call, float]] = {}  # slot -> call, when it started
    fired: set[str] = set()  # calls passed to overtime()
    # the running calls' workers, ranked for the out-of-memory killer (D93); only with
    # host-memory admission (a GPU host)
    kill_order = KillOrder() if host_room is not None else None

    def may_overrun() -> bool:
        """Whether a running call may still reach its overtime (lock held)."""
        return overtime is not None and any(
            call.overtime_s is not None and call.key not in fired
            for call, _ in running.values())

    def queue_call(call: Call) -> None:
        if call.front and not call.tail:
            pending.appendleft(call)
        else:
            (tails if call.tail else pending).append(call)

    for call in calls:
        queue_call(call)

    def spawn(call: Call | None = None) -> WorkerProcess:
        base = settings if settings is not None else WorkerSettings(gpu_workers=n_workers)
        limit, sharing = memory_limit_mb, base.gpu_workers
        if call is not None and call.tail:
            limit = call.memory_limit_mb or memory_limit_mb
            sharing = call.gpu_workers or sharing
        return WorkerProcess(replace(base, device=device, memory_limit_mb=limit,
                                     gpu_workers=sharing))

    def take(slot: int) -> Any:
        """The next queued call, else a tail call if a tail slot is free; None: nothing for
        this thread (a running tail call's thread comes back for the rest); `wait`: there is
        a call, but the host is short of memory while others run."""
        with lock:
            startable = pending or (tails and len(beside) < max(1, tail_slots))
            if (startable and host_room is not None and state["in_flight"] > 0
                    and not host_room.room()):
                waiting_since.setdefault(slot, time.perf_counter())
                return wait
            if pending:
                call = pending.popleft()
            elif tails and len(beside) < max(1, tail_slots):
                call = tails.popleft()
            elif may_overrun():
                return wait  # a running call may still queue its overtime call
            else:
                return None
            state["in_flight"] += 1
            for tail_slot in beside:
                beside[tail_slot] = max(beside[tail_slot], state["in_flight"] - 1)
            if call.tail:
                beside[slot] = state["in_flight"] - 1
            if slot in waiting_since:
                waited = time.perf_counter() - waiting_since.pop(slot)
                host_room.note_wait(waited)  # type: ignore[union-attr]
                host_waits[call.key] = waited
            return call

    def serve(slot: int) -> None:
        worker: WorkerProcess | None = None
        try:
            while True:
                call = take(slot)
                if call is None:
                    return
                if call is wait:
                    time.sleep(host_room.poll_s if host_room is not None else 0.25)
                    continue
                if (call.tail or call.fresh) and worker is not None:
                    worker.shutdown()  # an idle worker holds device memory the tail wants
                    worker = None
                if call.tail or worker is None or not worker.alive:
                    current = spawn(call)
                    if not call.tail:
                        worker = current
                else:
                    current = worker
                call_started = time.perf_counter()
                with lock:
                    running[slot] = (call, call_started)
                if kill_order is not None:
                    kill_order.started(slot, current.proc.pid)
                result, healthy = _one_call(current, call, startup_timeout_s)
                result["wall_s"] = time.perf_counter() - call_started
                result["worker_pid"] = current.proc.pid  # which worker ran it
                if call.key in host_waits:
                    result["host_wait_s"] = round(host_waits[call.key], 3)
                with lock:
                    running.pop(slot, None)
                    state["in_flight"] -= 1
                    if call.tail:
                        result["beside"] = beside.pop(slot)
                    results[call.key] = result
                if kill_order is not None:
                    kill_order.ended(slot)
                if call.tail and healthy:
                    current.shutdown()
                elif not healthy:
                    current.kill()
                    worker = None
                if on_result is not None:
                    on_result(call, result)
                then = follow_up(call, result) if follow_up is not None else None
                if then is not None:
                    with lock:  # this thread is still serving, so it is picked up
                        for extra in [then] if isinstance(then, Call) else then:
                            queue_call(extra)
        finally:
            if worker is not None:
                worker.shutdown()

    def watch() -> None:
        """Pass each call that runs past its ``overtime_s`` to ``overtime`` once."""
        while any(thread.is_alive() for thread in threads):
            now = time.perf_counter()
            with lock:
                due = [call for call, started in running.values()
                       if call.overtime_s is not None and call.key not in fired
                       and now - started >= call.overtime_s]
                fired.update(call.key for call in due)
            for call in due:
                extra = overtime(call)  # type: ignore[misc]
                if extra is not None:
                    with lock:
                        queue_call(extra)
            time.sleep(0.2)

    threads = [threading.Thread(target=serve, args=(i,), name=f"kb-isolated-{i}", daemon=True)
               for i in range(n_workers)]
    for thread in threads:
        thread.start()
    watcher = None
    if overtime is not None:
        watcher = threading.Thread(target=watch, name="kb-isolated-overtime", daemon=True)
        watcher.start()
    for thread in threads:
        thread.join()
    if watcher is not None:
        watcher.join()
    return results


def _one_call(worker: WorkerProcess, call: Call,
              startup_timeout_s: float) -> tuple[dict[str, Any], bool]:
    """Send one call and wait for its result; (result, worker still healthy)."""
    try:
        worker.wait_ready(startup_timeout_s)
    except WorkerStartError as exc:
        return {"status": "crashed", "error": str(exc),
                "failure_kind": _value(exc.failure)}, False
    request = {"op": "call", "function": call.function, "kwargs": call.kwargs}
    if not worker.send(request):
        death = worker._death()
        return {"status": "crashed", "error": death.detail,
                "failure_kind": _value(death.failure)}, False
    while True:
        got = worker.receive(call.timeout_s)
        if got.kind == "timeout":
            return {"status": "timeout",
                    "error": f"exceeded {call.timeout_s:g} s; worker killed"}, False
        if got.kind == "died":
            return {"status": "crashed", "error": got.detail,
                    "failure_kind": _value(got.failure)}, False
        if got.kind == "memory":
            return {"status": "crashed", "error": f"memory limit exceeded: {got.detail}",
                    "failure_kind": _value(got.failure)}, False
        tag, payload = got.message
        if tag == "result":
            return dict(payload), not payload.get("recycle", False)


def _value(kind: FailureKind | None) -> str | None:
    """A failure kind as a reply carries it (plain data)."""
    return None if kind is None else kind.value
