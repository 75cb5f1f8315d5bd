"""Load a benchmark's tasks behind a gold-vs-gold check: cached, isolated, parallel, reported.

Format-independent (TritonBench-G uses it; the next benchmark format reuses it): a source
describes each task as a ``CheckItem`` (its name, the bytes that decide its check, how to run it
as a plain script), names its worker function (``check``: one that calls
``live.gold.judge.gold_check_in_worker`` with what the source keeps of a checked task) and says
how to build a ``Task`` and its ``TaskFindings`` from the metadata its check returns.

1. Each item's check result is looked up in the on-disk cache (``live.gold.cache``).
2. The rest are checked in sandboxed evaluator workers, several in parallel (the source's
   ``check`` through ``live.evaluator.isolated``), with a
   progress bar; a check that ran out of GPU memory beside the others is retried with more
   room once no other check is queued, and alone if it runs out beside the last ones too.
3. Every item whose check failed is run once more the benchmark's own way (a plain script, in a
   worker), so its skip reason says whether it also fails outside kernelband; one that failed
   in a way a worker's state may explain (a fault, the gold code disagreeing with itself) is
   checked once more beside it, in a fresh worker, and passes if that check does.
4. Passing items become tasks; the others ``Skipped`` records with one reason each.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from live.devices import resolve_device
from live.evaluator.failures import FailureKind
from live.evaluator.host_memory import HostRoom
from live.evaluator.isolated import CALLABLE_PREFIX, Call, default_workers, run_calls
from live.evaluator.settings import WorkerSettings
from live.gold import cache
from live.tasks.skips import Loaded, Skipped, hollow_pass_reason

#: results of plain-script runs are keyed by this prefix and the item's name
PLAIN_KEY = "plain-script:"
#: NOTE (D89, which replaces D66 here): each autotuned kernel runs the first of its
#: configurations that compiles and runs (``first_config``), so the gold code and k0 run the
#: same configuration, compare like with like, and compile one configuration per input instead
#: of every one (D66 had them share Triton's on-disk autotuning cache, which still compiled
#: them all: on an H200, `int8_dequant_matmul`'s 418 configurations and
#: `triton_linear_activation`'s 58 for each of 5 test variants ran past the time limit)
#: Each check worker may take up to 0.45 of the GPU's memory (``gpu_workers=2`` for the
#: allocator cap, with CHECK_MEMORY_MB), not 1/16 as 16 evaluator workers would: on an H200, 60
#: of 181 operators ran out of memory under 1/16 each with 80-120 GiB of the card free, and 10 of
#: 135 under 0.225 (2026-11-24, git history). Checks rarely peak together; a real out-of-memory is
#: retried alone. ``quick_autotune``: short autotuning benchmarks in check workers (D71).
#: (The device and memory limit are the pool's, `run_calls`.)
CHECK_SETTINGS = WorkerSettings(first_config=True, quick_autotune=True, gpu_workers=2)
#: host memory per check worker (MB); with gpu_workers=2 it also lets each take up to 0.45 of
#: the GPU (the worker caps its allocator at the smaller of this and 0.9 / gpu_workers): under
#: 32 GB (0.225 of an H200) 10 of 135 operators ran out of memory with 40-96 GiB of the card free
CHECK_MEMORY_MB = 65536
#: a check that ran out of GPU memory (or past the worker's host-memory limit) beside the others
#: is retried alone, allowed this much host memory and, through it, 0.7 of the GPU (TritonBench-G's
#: `context_attn_nopad` makes 33 GB of inputs on the host)
RETRY_WORKERS = 1
RETRY_MEMORY_MB = 100000
#: memory retries that may run at once in the pool's tail (D83): on an H200 the two that ran out
#: beside the others, `chunk_retention` (24 GiB of inputs on the host) and `context_attn_nopad`
#: (33 GB), take 90-120 s each; one that runs out of memory beside the other is checked alone
TAIL_SLOTS = 2
#: NOTE (D82): on a GPU a check stops checking performance inputs once this share of its time
#: limit has passed (but see the floor and cap below); those not reached are dropped (not
#: checked, not timed) and the operator's own test code still runs. On an H200,
#: `int8_matmul_kernel` (a constexpr K, 15 autotuned configurations: every input compiles 15
#: kernels) spent 241 s on its 31 inputs and was skipped at the 180 s limit, though its plain
#: script passes.
SHAPE_BUDGET_SHARE = 0.5
#: ... but a check whose inputs took most of that still checks inputs for this share of its
#: limit (`context_attn_nopad` makes 33 GB of inputs on the host: 90 s beside other checks),
#: never past this share of it (its test code must still fit)
SHAPE_FLOOR_SHARE = 0.25
SHAPE_CAP_SHARE = 0.75
#: NOTE (D85): the checks that start first (the pool's first wave: the likely slowest, by their
#: cost hints) run beside the whole queue, so they get this much more of the time limit (their
#: time for performance inputs stays D82's share of the base limit: the extra goes to the test
#: code). On an H200 the queue of 184 checks drained at about 200 s and the last check ended at
#: 241 s, while `triton_linear_activation` (58 autotuned configurations compiled for each of its
#: test code's 5 variants; its plain script passes) was killed at the 180 s limit in the first
#: wave; 1.4 x 180 s = 252 s
FIRST_WAVE_LIMIT_SHARE = 1.4
#: a check whose gold code faults on a shape (illegal memory access) runs again in a fresh
#: worker without that shape and every larger one, at most this many times (D73)
MAX_FAULT_RETRIES = 3
#: NOTE (D87): a check that failed with one of these runs once more from the start, in a newly
#: started worker, beside its plain script; the operator passes if that second check does. On
#: an H200, 6 operators whose plain scripts pass failed in one of two cold loads and passed in
#: the other (illegal memory accesses, the gold code disagreeing with itself: reads of memory
#: they do not own, whose layout is the worker's history); a timeout (minutes) and a script
#: that does not build are not checked again
SECOND_CHECK_STATUSES = frozenset({"runtime_error", "incorrect", "nondeterministic",
                                   "crashed", "error"})
#: the key of a second check's call (its results and records use the item's name)
SECOND_KEY = "second-check:"


@dataclass(frozen=True)
class CheckItem:
    """One task to check: `name` in the source, `task_name` as the worker resolves it,
    `contents` (the bytes its check depends on), and the plain-script call, if any."""

    name: str
    task_name: str
    contents: tuple[bytes, ...]
    plain_script: Call | None = None
    #: a guess at the check's cost (bigger first): a pool that starts the slow checks first
    #: ends sooner than one that meets them last (the load's wall time is its slowest worker's)
    cost_hint: float = 0.0


def worker_function_name(function: Callable[..., Any]) -> str:
    """The name a worker imports `function` by (a call to a worker carries a name, not the
    function): a module-level function of kernelband's own ``live.`` package."""
    name = f"{function.__module__}.{function.__qualname__}"
    if not name.startswith(CALLABLE_PREFIX) or "<" in name:
        raise ValueError(f"{name} is not a module-level function of the live package")
    return name


def checked_load(
    task_spec: str,
    items: Sequence[CheckItem],
    options: Any,
    *,
    check: Callable[..., dict[str, Any]],
    build: Callable[[CheckItem, Any], tuple[Any, Any]],
) -> Loaded:
    """The tasks of `items` whose gold check passes (each with its ``TaskFindings``), and a
    ``Skipped`` for each other one.

    `check` is the source's worker function (``check(runner, workdir, **request)``, calling
    ``gold_check_in_worker`` with the source's ``describe``), whose ``meta`` `build(item,
    meta)` needs in this process to make ``(task, findings)``; `options` a ``LoadOptions``.
    """
    started = time.perf_counter()
    device = resolve_device(getattr(options, "device", "auto") or "auto")
    load = GoldLoad(task_spec, items, device, options, worker_function_name(check))
    admission = load.run()
    records = load.records
    tasks, skipped, findings = [], [], {}
    for item in items:
        record = records[item.name]
        if record["passed"] and record.get("hollow"):
            # a pass that compute-sanitizer showed to be hollow (`tasks check --sanitize`)
            record = {**record, "reason": hollow_pass_reason(record["hollow"])}
        elif record["passed"]:
            meta = record["meta"]
            if isinstance(meta, dict):  # the check's per-shape findings travel with it (D73)
                meta = {**meta, "verdicts": record.get("shape_verdicts") or {},
                        "peaks": record.get("shape_peaks") or {}}
            try:
                task, found = build(item, meta)
                tasks.append(task)
                findings[item.task_name] = found
                continue
            except Exception as exc:  # noqa: BLE001 - a cached entry that no longer builds
                record = {**record, "reason": f"could not build the task from its check: "
                                              f"{type(exc).__name__}: {exc}"}
        skipped.append(Skipped(item.name, record["reason"], record.get("plain_script"),
                               record.get("hollow")))
    passed = {name: record for name, record in records.items()
              if record["passed"] and not record.get("hollow")}
    with_verdicts = {name: record.get("shape_verdicts") for name, record in passed.items()
                     if record.get("shape_verdicts")}
    flaky = {name: record["first_check"] for name, record in passed.items()
             if record.get("first_check")}
    stats = {"device": device, "device_name": load.env["device_name"],
             "operators": len(items), "passed": len(tasks), "checked": len(load.todo),
             "cached": len(items) - len(load.todo),
             "seconds": time.perf_counter() - started,
             "passed_with_shape_verdicts": with_verdicts,
             # NOTE (D76): operators whose own test code is compared only where runs of the
             # gold code agree
             "passed_with_results_set_aside": {
                 name: record["source_note"] for name, record in passed.items()
                 if record.get("source_note")},
             # NOTE (D87): operators that failed a first check and passed a second one in a
             # fresh worker, with the first check's reason
             "passed_on_second_check": flaky}
    if admission is not None:
        stats["host_memory"] = admission
    return Loaded(tasks, skipped, stats, findings)


class GoldLoad:
    """One load's gold checks: what the cache holds, the checks and plain scripts still to
    run in a pool of workers, and what each retry path has seen so far (see the module
    docstring). The pool calls `done` as each call ends, `follow_up` for what to queue after
    it, and `overtime` for a first-wave check past the base limit, from its worker threads."""

    def __init__(self, task_spec: str, items: Sequence[CheckItem], device: str, options: Any,
                 check: str) -> None:
        self.task_spec, self.device, self.options, self.check = task_spec, device, options, check
        self.timeout_s = float(getattr(options, "timeout_s", 300.0))
        self.env = cache.environment(device)
        self.keys = {item.name: cache.entry_key(list(item.contents), self.env)
                     for item in items}
        #: each item's record, cached or made as its check ends
        self.records: dict[str, dict[str, Any]] = {}
        if getattr(options, "use_cache", True):
            for item in items:
                cached = cache.read(self.keys[item.name])
                if cached is not None:
                    self.records[item.name] = cached
        #: the checks to run, the likely slowest first (stable: equal hints keep their order)
        self.todo = sorted((item for item in items if item.name not in self.records),
                           key=lambda item: -item.cost_hint)
        #: failures cached before their plain-script run finished get that run now
        self.unexplained = [item for item in items if item.name in self.records
                            and not self.records[item.name]["passed"]
                            and self.records[item.name].get("plain_script") is None
                            and item.plain_script is not None]
        self.started = time.perf_counter()
        self.fault_retries: dict[str, int] = {}
        self.requeued: set[str] = set()  # checks killed by the system and queued again (D92)
        self.killed: list[dict[str, Any]] = []  # each kill by the system: which, when (D93)
        self.second: dict[str, dict[str, Any]] = {}  # first-check records, second check due
        self.second_lock = threading.Lock()  # `second` and its records, between threads
        self.again: dict[str, Call] = {}  # checks to run again in a fresh worker (a fault)
        self.alone: dict[str, Call] = {}  # checks to run again alone, after the pool
        self.early: dict[str, dict[str, Any] | None] = {}  # plain scripts started at overtime
        self.early_lock = threading.Lock()
        self.calls: list[Call] = []
        self.originals: dict[str, Call] = {}
        self.plain_calls: dict[str, Call] = {}
        self.bar: Any = _NoBar()

    def keep(self, name: str, record: dict[str, Any], persist: bool = True) -> None:
        """`record` is `name`'s, as each check ends: a killed load keeps what it had done, but
        a result still to be retried (out of memory) is not written to the cache."""
        self.records[name] = record
        if persist:
            cache.write(self.keys[name], record)

    def run(self) -> dict[str, Any] | None:
        """Gold-check the items to do in workers; the plain script of every failed one (and of
        the unexplained failures checked earlier) runs in the same pool as soon as its check
        fails. On a GPU, what host-memory admission did and which checks the system killed
        for memory (when in the load, after how long running)."""
        items, unexplained = self.todo, self.unexplained
        if not items and not unexplained:
            return None
        device, timeout_s = self.device, self.timeout_s
        # NOTE (D84): on a GPU host, no check starts while the host's memory is short (the
        # system's out-of-memory killer otherwise takes the largest check, which then runs
        # again)
        room = HostRoom() if device == "cuda" else None
        self.started = time.perf_counter()
        budget = {"shape_budget_s": SHAPE_BUDGET_SHARE * timeout_s,
                  "shape_floor_s": SHAPE_FLOOR_SHARE * timeout_s,
                  "shape_cap_s": SHAPE_CAP_SHARE * timeout_s} if device == "cuda" else {}
        workers = getattr(self.options, "workers", None)
        first_wave = workers or default_workers(device, len(items) + len(unexplained))
        # NOTE (D85): a first-wave check still running at the base limit would have failed
        # there; its plain script starts then, beside it, so that a check killed at the
        # longer limit does not add a plain-script run after it to the load's end
        self.calls = [
            Call(item.name, self.check, {"task_spec": self.task_spec,
                                         "task_name": item.task_name, **budget},
                 timeout_s * (FIRST_WAVE_LIMIT_SHARE if index < first_wave else 1.0),
                 overtime_s=(timeout_s if index < first_wave and item.plain_script is not None
                             else None))
            for index, item in enumerate(items)]
        self.originals = {call.key: call for call in self.calls}
        self.plain_calls = {
            PLAIN_KEY + item.name: Call(PLAIN_KEY + item.name, item.plain_script.function,
                                        item.plain_script.kwargs, item.plain_script.timeout_s)
            for item in [*items, *unexplained] if item.plain_script is not None}
        with _progress(len(self.calls) + len(unexplained),
                       getattr(self.options, "progress", False),
                       "gold checks (and plain scripts of failures)") as self.bar:
            first = [*self.calls,
                     *(self.plain_calls[PLAIN_KEY + item.name] for item in unexplained)]
            run_calls(first, device=device, workers=workers, on_result=self.done,
                      memory_limit_mb=CHECK_MEMORY_MB, settings=CHECK_SETTINGS,
                      follow_up=self.follow_up, tail_slots=TAIL_SLOTS, host_room=room,
                      overtime=self.overtime)
            # a check that ran out of memory beside 15 others is retried with room for more
            # (RETRY_MEMORY_MB host memory, up to 0.7 of the GPU) in the pool's tail, and
            # alone here if it ran out beside the last checks too; a shape that runs out of
            # memory alone is dropped (with every larger one), not the operator (D73)
            if self.alone:
                self.bar.total += len(self.alone)
                self.bar.set_description("gold checks out of memory, again alone")
                run_calls(list(self.alone.values()), device=device, workers=RETRY_WORKERS,
                          on_result=lambda call, result: self.done(call, result, retried=True),
                          memory_limit_mb=RETRY_MEMORY_MB,
                          settings=replace(CHECK_SETTINGS, gpu_workers=RETRY_WORKERS),
                          follow_up=lambda call, result: self.follow_up(call, result,
                                                                        retried=True))
        if room is None and not self.killed:
            return None
        return {**(room.info() if room is not None else {}), "killed_by_system": self.killed}

    def overtime(self, call: Call) -> Call | None:
        """A first-wave check past the base limit: its plain script, at once (D85)."""
        plain = self.plain_calls.get(PLAIN_KEY + call.key)
        with self.early_lock:
            if plain is None or call.key in self.early:
                return None
            self.early[call.key] = None
        self.bar.total += 1
        # at the front: its check already runs longest, so the plain script is on the load's
        # critical path (queued at the back, it waited ~40 s for the queue and ended an H200
        # cold load 21 s after the last check did)
        return replace(plain, front=True)

    def attach_early(self, name: str) -> None:
        """A failed check's plain-script outcome, if its early run has ended."""
        with self.early_lock:
            result, record = self.early.get(name), self.records.get(name)
            if (result is not None and record is not None and not record["passed"]
                    and record.get("plain_script") is None):
                self.keep(name, {**record, "plain_script": _plain_outcome(result)})

    def check_record(self, name: str, result: dict[str, Any]) -> dict[str, Any]:
        """The cache's record of one check's `result`."""
        passed = result.get("status") == "ok"
        return {"name": name, "passed": passed, "status": result.get("status"),
                "reason": None if passed else _reason(result), "plain_script": None,
                "meta": result.get("meta"), "check_s": result.get("check_s"),
                "wall_s": result.get("wall_s"),
                # where a check's time went: making the task (importing the operator and its
                # performance script), compiling (the first input's call), checking
                "build_s": result.get("build_s"), "compile_s": result.get("compile_s"),
                "rounds": result.get("rounds"),
                "shape_verdicts": result.get("shape_verdicts") or {},
                "shape_peaks": result.get("shape_peaks") or {},
                "source_note": result.get("source_note"),
                "host_wait_s": result.get("host_wait_s"),
                "finished_at_s": time.perf_counter() - self.started}

    def done(self, call: Call, result: dict[str, Any], retried: bool = False) -> None:
        """One call ended: a check's record, a second check's, or a plain script's outcome."""
        if call.key.startswith(PLAIN_KEY):
            self._plain_done(call.key.removeprefix(PLAIN_KEY), result)
        elif result.get("status") == "retry" and self._fault_retry(call, result):
            return
        elif call.key.startswith(SECOND_KEY):
            self._second_done(call.key.removeprefix(SECOND_KEY),
                              result if result.get("status") != "retry"
                              else {**result, "status": "runtime_error"})
        else:
            self._check_done(call, result if result.get("status") != "retry"
                             else {**result, "status": "runtime_error"}, retried)
        self.bar.update(1)

    def _plain_done(self, name: str, result: dict[str, Any]) -> None:
        if name in self.early:  # started beside its check: kept if the check fails
            with self.early_lock:
                self.early[name] = result
            self.attach_early(name)
            return
        with self.second_lock:  # its second check may be ending in another thread
            if name in self.second:  # still running: kept with its result
                self.second[name]["plain_script"] = _plain_outcome(result)
                self.records[name] = {**self.records[name],
                                      "plain_script": _plain_outcome(result)}
            else:
                self.keep(name, {**self.records[name], "plain_script": _plain_outcome(result)})

    def _fault_retry(self, call: Call, result: dict[str, Any]) -> bool:
        """A fault dropped shapes: the check goes on in a fresh worker (True), at most
        `MAX_FAULT_RETRIES` times (then False: a runtime error)."""
        tries = self.fault_retries.get(call.key, 0)
        if tries >= MAX_FAULT_RETRIES:
            return False
        self.fault_retries[call.key] = tries + 1
        self.again[call.key] = replace(call, kwargs={
            **call.kwargs, "verdicts": result.get("shape_verdicts") or {}})
        self.bar.total += 1
        self.bar.update(1)
        return True

    def _second_done(self, name: str, result: dict[str, Any]) -> None:
        record = self.check_record(name, result)
        with self.second_lock:
            first = self.second.pop(name)
            if record["passed"]:
                record["first_check"] = first["reason"]
                record["plain_script"] = first.get("plain_script")
            else:
                again_why = " ".join(str(result.get("error") or "").split())
                if not again_why.startswith(f"{result.get('status')}:"):
                    again_why = f"{result.get('status')}: {again_why}"
                record = {**first, "reason": f"{first['reason']} [checked again in a "
                          f"fresh worker: {again_why[:200]}]"}
            self.keep(name, record)

    def _check_done(self, call: Call, result: dict[str, Any], retried: bool) -> None:
        record = self.check_record(call.key, result)
        due = (not retried and not record["passed"] and not call.tail
               and call.key not in self.early and record["status"] in SECOND_CHECK_STATUSES
               and not _out_of_room(call, result))
        with self.second_lock:
            if due:  # NOTE (D87): not a verdict yet: checked again in a fresh worker
                self.second[call.key] = record
            self.keep(call.key, record,
                      persist=not due and (retried or not _out_of_room(call, result)))
        if not record["passed"] and call.key in self.early:
            self.attach_early(call.key)

    def follow_up(self, call: Call, result: dict[str, Any],
                  retried: bool = False) -> Call | list[Call] | None:
        """A failed check's plain-script run, queued at once in the same pool (with, after a
        failure that a worker's state may explain, the check again in a fresh worker: D87);
        the check again in a fresh worker, after a fault on a shape it has now dropped; or,
        for a check out of memory beside the others, the check again with more room once
        nothing else is queued (NOTE D83: beside the last checks still running, instead of
        after all of them; one that runs out of memory even there is checked once more
        alone, after the pool)."""
        if call.key in self.again:
            return self.again.pop(call.key)
        if call.key.startswith((PLAIN_KEY, SECOND_KEY)) or result.get("status") == "ok":
            return None
        if not retried and _out_of_room(call, result):
            return self._out_of_room_again(call, result)
        if call.key in self.early:  # its plain script started at the check's overtime
            return None
        queued = []
        if call.key in self.second:
            queued.append(replace(self.originals[call.key], key=SECOND_KEY + call.key,
                                  timeout_s=self.timeout_s, overtime_s=None, fresh=True))
        plain = self.plain_calls.get(PLAIN_KEY + call.key)
        if plain is not None:
            queued.append(plain)
        self.bar.total += len(queued)
        return queued or None

    def _out_of_room_again(self, call: Call, result: dict[str, Any]) -> Call | None:
        """A check out of memory beside others: again at once in a fresh worker if the system
        killed it (D92, once), else in the pool's tail with more room (D83), else alone."""
        if call.tail:
            self.alone[call.key] = replace(call, tail=False)
            return None
        self.bar.total += 1
        by_system = _killed_by_system(result)
        if by_system:
            self.killed.append({"check": call.key,
                                "at_s": round(time.perf_counter() - self.started, 1),
                                "after_s": round(float(result.get("wall_s") or 0.0), 1)})
        if by_system and call.key not in self.requeued:
            # NOTE (D92): the host ran short beside the others; checked again at once, as
            # the next call to start (once the host has room), in a fresh worker
            self.requeued.add(call.key)
            return replace(self.originals.get(call.key, call), timeout_s=self.timeout_s,
                           overtime_s=None, fresh=True, front=True,
                           kwargs={**call.kwargs,
                                   "verdicts": result.get("shape_verdicts") or {}})
        return replace(call, kwargs={**call.kwargs, "drop_out_of_memory": True,
                                     "verdicts": result.get("shape_verdicts") or {}},
                       tail=True, front=False, memory_limit_mb=RETRY_MEMORY_MB,
                       gpu_workers=RETRY_WORKERS)


def _out_of_room(call: Call, result: dict[str, Any]) -> bool:
    """Out of memory beside other checks: not the operator's verdict yet."""
    return _oom(result) and (not call.tail or bool(result.get("beside")))


def _oom(result: dict[str, Any]) -> bool:
    """Out of GPU memory, killed past the worker's host-memory limit, or killed by the system.

    NOTE (D80): a worker that dies of SIGKILL that kernelband did not send (a timeout says so
    itself) was killed by the operating system's out-of-memory killer: on an H200 host (128 GiB)
    `chunk_retention`, whose performance script makes 24 GiB of inputs on the host, died so
    beside 11 other checks and passes alone, as its plain script does."""
    return result.get("failure_kind") in _OUT_OF_ROOM


#: the failure kinds that say a check ran out of room (device memory, the worker's host-memory
#: limit, the host: D80), not that the operator failed; set where each failure was caught
_OUT_OF_ROOM = (FailureKind.OUT_OF_MEMORY, FailureKind.MEMORY_LIMIT,
                FailureKind.KILLED_BY_SYSTEM)


def _killed_by_system(result: dict[str, Any]) -> bool:
    """A worker that died of a SIGKILL kernelband did not send (D80)."""
    return (result.get("status") == "crashed"
            and result.get("failure_kind") == FailureKind.KILLED_BY_SYSTEM)


def _reason(result: dict[str, Any]) -> str:
    status, error = result.get("status"), " ".join(str(result.get("error") or "").split())
    if status == "build_error":
        return error
    if status == "nondeterministic":
        return f"gold-vs-gold check failed: {error}"
    return f"gold-vs-gold check failed ({status}): {error}"


def _plain_outcome(result: dict[str, Any]) -> str:
    if result.get("status") == "ok":
        return "passes"
    error = " ".join(str(result.get("error") or "").split())
    return f"fails: {result.get('status')}: {error}"[:500]


class _NoBar:
    total = 0

    def update(self, n: int) -> None:
        pass

    def set_description(self, text: str) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _progress(total: int, show: bool, description: str) -> Any:
    if not show:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="op", dynamic_ncols=True)
