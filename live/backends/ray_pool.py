"""`RayEvaluatorPool`: the evaluator interface of `live.evaluator.Evaluator`, served by one Ray
actor per GPU across a cluster (`kernelband live --backend ray`).

Each actor (`EvaluatorActor`, ``num_gpus=1``) holds a warm ``Evaluator(workers=W)`` and an
`NcuProfiler` for its own GPU (Ray sets the actor's CUDA_VISIBLE_DEVICES). The driver keeps the
policies, the proposers and the trace writer: a call to `evaluate` / `profile` waits for a free
place on an actor, runs there, and returns the actor's result record to the calling thread.
With one worker (``workers=1``) an actor runs one call at a time. With W > 1 it is a threaded
actor (``max_concurrency=W``) whose workers share the GPU exactly as the local runner's do
(`live.evaluator.gpu_lock`): candidates compile and check side by side, timing and profiling
take the GPU alone. Either way timings on a GPU are never taken concurrently and the live runner
needs no device lock of its own (``device_lock=False``).

Lost actors: when an actor dies (node lost, CUDA fault that takes the process down, killed),
stops answering, or raises (the evaluator itself returns a value for every candidate, so an
exception means the actor is unwell), it is killed for good and a fresh one is started for its
GPU in the background; the candidate it held goes back to the queue and runs on the next free
actor (every call the actor held, with W > 1). The result of a lost call is never used, and the
runner writes a trace row only when a call returns, so a candidate is neither lost nor counted
twice. A candidate that loses
`max_attempts` actors in a row is given up as ``runtime_error`` (a value, like every evaluator
outcome).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import ray

from live.evaluator import EvalResult, Evaluator, EvaluatorConfig, kernel_id
from live.evaluator.affinity import AffinityQueue
from live.evaluator.gpu_lock import GpuLock
from live.evaluator.result import failure
from live.evaluator.task_source import canonical_spec
from live.profiler import NcuProfiler, ProfileResult

log = logging.getLogger(__name__)


class EvaluatorActor:
    """Body of one GPU actor: a warm evaluator (`workers` processes sharing the GPU through a
    `GpuLock` when more than one) and a profiler for its device."""

    def __init__(self, config: EvaluatorConfig, profile: bool,
                 profile_cache_dir: str | None) -> None:
        # several workers: the local runner's arrangement (compile side by side, time alone)
        self.gpu_lock = GpuLock() if config.workers > 1 else None
        self.evaluator = Evaluator(config, gpu_lock=self.gpu_lock)
        self.profiler: NcuProfiler | None = None
        if profile:
            self.profiler = NcuProfiler(
                config.task_spec, cache_dir=_usable_dir(profile_cache_dir),
                device=self.evaluator.device, dropped_shapes=self.evaluator.dropped_shapes,
                # the device alone only while ncu measures
                device_gate=self.gpu_lock.exclusive if self.gpu_lock is not None else None)

    def info(self) -> dict[str, Any]:
        """Where the actor runs and what its warm worker reported (waits for the worker)."""
        context = ray.get_runtime_context()
        return {
            "device": self.evaluator.device,
            "device_info": self.evaluator.device_info,
            "profiler_available": bool(self.profiler and self.profiler.available),
            "profiler_unavailable": (self.profiler.unavailable_reason if self.profiler
                                     else "profiling off"),
            "node_id": context.get_node_id(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "pid": os.getpid(),
            "workers": self.evaluator.n_workers,
            "gpu_lock": self.evaluator.gpu_lock_info,
        }

    def evaluate(self, task_name: str, code: str, seed: int,
                 baseline_code: str | None) -> EvalResult:
        return self.evaluator.evaluate(task_name, code, seed=seed, baseline_code=baseline_code)

    def profile(self, task_name: str, code: str) -> ProfileResult:
        if self.profiler is None:
            return ProfileResult(kernel_id(code), task_name, profiled=False,
                                 error="profiling off")
        return self.profiler.profile(task_name, code)  # gated by the GPU lock, if any

    def profile_many(self, task_name: str, codes: list[str]) -> list[ProfileResult]:
        """Several kernels in one Nsight Compute session (`NcuProfiler.profile_many`)."""
        if self.profiler is None:
            return [ProfileResult(kernel_id(c), task_name, profiled=False, error="profiling off")
                    for c in codes]
        return self.profiler.profile_many(task_name, codes)

    def close(self) -> None:
        self.evaluator.close()


def _usable_dir(path: str | None) -> str | None:
    """`path` if this node can write there (a shared file system, or the driver's node), else
    None: the profile cache is an optimisation, never a reason to fail."""
    if path is None:
        return None
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


@dataclass
class _Slot:
    """One GPU's actor; `generation` counts the actors that held the slot. The pool's free
    queue holds the slot once per worker; `lost` turns its remaining entries into nothing."""

    index: int
    handle: Any
    generation: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    lost: bool = False


@dataclass
class PoolStats:
    """What happened to the pool's actors (for logs, tests and the run's summary)."""

    actors_started: int = 0
    actors_lost: int = 0
    requeued: int = 0  # calls run again on another actor after theirs was lost
    given_up: int = 0  # candidates recorded as runtime_error after max_attempts lost actors
    calls: int = 0


class RayProfiler:
    """The `NcuProfiler` interface the live runner uses, routed to the pool's actors."""

    def __init__(self, pool: RayEvaluatorPool) -> None:
        self._pool = pool

    @property
    def available(self) -> bool:
        return self._pool.profiler_available

    @property
    def unavailable_reason(self) -> str | None:
        return None if self.available else self._pool.profiler_unavailable

    @property
    def name(self) -> str:
        return "ncu"

    def profile(self, task_name: str, code: str) -> ProfileResult:
        return self._pool.profile(task_name, code)

    def profile_many(self, task_name: str, codes: list[str]) -> list[ProfileResult]:
        return self._pool.profile_many(task_name, codes)


class RayEvaluatorPool:
    """Evaluate (and profile) candidates on one Ray actor per GPU; see the module docstring.

    Args:
        config: each actor's `Evaluator` (its tasks, limits, and ``workers``: evaluator worker
            processes per actor, concurrent calls on one GPU compiling side by side and timing
            alone, each reserving ``actor_cpus`` CPUs). Its ``device``: ``auto`` (``cuda`` if
            the cluster has GPUs) | ``cuda`` | ``cpu``; on CPU the actors reserve no GPU and
            run Triton's interpreter: the same code path, for tests.
        actors: number of actors (default: every GPU of the cluster; 1 on CPU).
        profile: give each actor an `NcuProfiler` (``profile_cache_dir`` where nodes can write).
        max_attempts: actors a single call may lose before it is given up.
        ready_timeout_s: limit for an actor to start (import torch, warm its worker), and for a
            call to find a free actor when none is left.
        actor_cpus: CPUs each worker of an actor reserves (workers compile on the CPU).
        runtime_env: Ray runtime environment of the actors (e.g. ``{"env_vars": {...}}``).
        address: the Ray cluster to join when Ray is not yet initialised (None: a local one).
    """

    def __init__(
        self,
        config: EvaluatorConfig,
        *,
        actors: int | None = None,
        profile: bool = True,
        profile_cache_dir: str | Path | None = None,
        max_attempts: int = 3,
        ready_timeout_s: float = 900.0,
        actor_cpus: float = 1.0,
        runtime_env: dict[str, Any] | None = None,
        address: str | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if not ray.is_initialized():
            ray.init(address=address)
        cluster_gpus = int(ray.cluster_resources().get("GPU", 0))
        device = config.device
        if device == "auto":
            device = "cuda" if cluster_gpus > 0 else "cpu"
        self.device = device
        n_actors = actors if actors is not None else (cluster_gpus if device == "cuda" else 1)
        if n_actors < 1:
            raise ValueError("the pool needs at least one actor"
                             + (" (the cluster has no GPU)" if device == "cuda" else ""))
        if device == "cuda" and n_actors > cluster_gpus:
            log.warning("%d GPU actors asked for but the cluster has %d GPUs now: the others "
                        "start when GPUs join", n_actors, cluster_gpus)
        # TritonBench paths made absolute here: the actors' working directory is not ours
        config = replace(config, task_spec=canonical_spec(config.task_spec), device=device)
        self.config = config
        self.task_spec = config.task_spec
        self.max_attempts = max_attempts
        self.workers = config.workers
        self.ready_timeout_s = ready_timeout_s
        # a call's limit: the evaluator's own limits (a recycled worker restarts first) + margin
        self.call_timeout_s = (config.startup_timeout_s + config.compile_timeout_s
                               + config.timeout_s + 120.0)
        self._actor_args = (
            config, profile, str(profile_cache_dir) if profile_cache_dir is not None else None)
        self._actor_class = ray.remote(EvaluatorActor).options(
            num_gpus=1 if device == "cuda" else 0, num_cpus=actor_cpus * self.workers,
            max_restarts=0, max_concurrency=self.workers,
            **({"runtime_env": runtime_env} if runtime_env else {}),
        )
        self.stats = PoolStats()
        self._lock = threading.Lock()
        # free places on actors, each tagged with the task it served last: a task's next
        # candidate goes back to the actor whose workers hold its inputs when it can
        self._idle: AffinityQueue[_Slot] = AffinityQueue()
        self._closed = False
        self._starting: dict[int, _Slot] = {}  # replacements not yet warm, by slot index
        self._replacers: list[threading.Thread] = []
        self._slots = [self._new_slot(i, 0) for i in range(n_actors)]
        infos = self._wait_ready(self._slots)
        self.profiler_available = any(i.get("profiler_available") for i in infos)
        self.profiler_unavailable = next(
            (i.get("profiler_unavailable") for i in infos if i.get("profiler_unavailable")),
            None)
        for slot in self._slots:
            self._free(slot)

    # -- actors ------------------------------------------------------------------------------

    def _free(self, slot: _Slot) -> None:
        """Offer every worker of a fresh actor to the callers."""
        for _ in range(self.workers):
            self._idle.put(slot)

    def _new_slot(self, index: int, generation: int) -> _Slot:
        handle = self._actor_class.remote(*self._actor_args)
        self.stats.actors_started += 1  # under self._lock, or before any thread runs
        return _Slot(index, handle, generation)

    def _wait_ready(self, slots: list[_Slot]) -> list[dict[str, Any]]:
        refs = [slot.handle.info.remote() for slot in slots]
        try:
            infos = ray.get(refs, timeout=self.ready_timeout_s)
        except ray.exceptions.RayError as err:
            for slot in slots:
                ray.kill(slot.handle, no_restart=True)
            if isinstance(err, ray.exceptions.GetTimeoutError):
                raise RuntimeError(
                    f"{len(slots)} evaluator actor(s) did not start within "
                    f"{self.ready_timeout_s:g} s (are there enough GPUs in the cluster?)"
                ) from None
            raise RuntimeError(f"an evaluator actor failed to start: {type(err).__name__}: "
                               f"{_first_line(err)}") from err
        for slot, info in zip(slots, infos, strict=True):
            slot.info = info
        return infos

    def _replace(self, slot: _Slot, reason: str) -> None:
        """Kill `slot`'s actor for good and start a fresh one for its GPU in the background; it
        joins the free actors once warm (calls meanwhile go to the others)."""
        with self._lock:
            if slot.lost:  # another of its calls got here first (several workers)
                return
            slot.lost = True
            self.stats.actors_lost += 1
        log.warning("evaluator actor %d (generation %d) lost: %s; starting a replacement",
                    slot.index, slot.generation, reason)
        try:
            ray.kill(slot.handle, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone is fine
            pass
        with self._lock:
            if self._closed:
                return
            thread = threading.Thread(target=self._start_replacement, args=(slot,), daemon=True,
                                      name=f"ray-actor-{slot.index}")
            self._replacers.append(thread)
        thread.start()

    def _start_replacement(self, old: _Slot) -> None:
        for attempt in range(1, 4):
            with self._lock:
                if self._closed:
                    return
                fresh = self._new_slot(old.index, old.generation + 1)
                self._starting[old.index] = fresh
            try:
                self._wait_ready([fresh])
            except RuntimeError as err:
                if self._closed:
                    return
                log.error("replacement actor %d failed to start (try %d): %s", old.index,
                          attempt, err)
                continue
            with self._lock:
                self._starting.pop(old.index, None)
                if self._closed:
                    ray.kill(fresh.handle, no_restart=True)
                    return
                self._slots[old.index] = fresh
            self._free(fresh)
            return
        log.error("giving up on actor slot %d; the pool goes on with the others", old.index)

    # -- calls -------------------------------------------------------------------------------

    def _submit(self, slot: _Slot, method: str, args: tuple) -> Any:
        """Start `method` on `slot`'s actor; returns the ObjectRef (a seam for tests)."""
        return getattr(slot.handle, method).remote(*args)

    def _call(self, method: str, args: tuple) -> tuple[Any, str | None]:
        # every call's first argument is the task's name
        """Run `method` on a free actor, moving to another when the actor is lost; (result,
        None), or (None, why) after `max_attempts` lost actors."""
        if self._closed:
            raise RuntimeError("evaluator pool is closed")
        reason = ""
        for attempt in range(self.max_attempts):
            slot = self._next_free(prefer=args[0])
            if attempt:
                with self._lock:
                    self.stats.requeued += 1
            try:
                ref = self._submit(slot, method, args)
                result = ray.get(ref, timeout=self.call_timeout_s)
            except ray.exceptions.GetTimeoutError:
                reason = f"no answer within {self.call_timeout_s:g} s"
            except ray.exceptions.RayError as err:
                reason = f"{type(err).__name__}: {_first_line(err)}"
            else:
                with self._lock:
                    self.stats.calls += 1
                self._idle.put(slot, args[0])
                return result, None
            self._replace(slot, reason)
        with self._lock:
            self.stats.given_up += 1
        return None, f"evaluator actor lost {self.max_attempts} times on this call ({reason})"

    def _next_free(self, prefer: str | None = None) -> _Slot:
        """A free worker's actor, preferably one that served task `prefer` last; entries of
        lost actors are dropped on the way."""
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            try:
                slot = self._idle.get(prefer=prefer,
                                      timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no evaluator actor became free within "
                                   f"{self.ready_timeout_s:g} s (all lost?)") from None
            if not slot.lost:
                return slot

    def evaluate(self, task_name: str, code: str, *, seed: int = 0,
                 baseline_code: str | None = None) -> EvalResult:
        """`Evaluator.evaluate` on a free actor's GPU; one `EvalResult` for every outcome."""
        started = time.perf_counter()
        result, why = self._call("evaluate", (task_name, code, seed, baseline_code))
        if why is not None:
            backend = "cuda" if self.device == "cuda" else "cpu-interpreter"
            return failure("runtime_error", kernel_id(code), task_name, why,
                           timing_backend=backend, worker_recycled=True,
                           eval_latency_s=time.perf_counter() - started)
        return result

    def profile(self, task_name: str, code: str) -> ProfileResult:
        """`NcuProfiler.profile` on a free actor's GPU (``profiled=False`` if it cannot)."""
        result, why = self._call("profile", (task_name, code))
        if why is not None:
            return ProfileResult(kernel_id(code), task_name, profiled=False, error=why)
        return result

    def profile_many(self, task_name: str, codes: list[str]) -> list[ProfileResult]:
        """`NcuProfiler.profile_many` (one Nsight Compute session) on a free actor's GPU."""
        results, why = self._call("profile_many", (task_name, list(codes)))
        if why is not None:
            return [ProfileResult(kernel_id(c), task_name, profiled=False, error=why)
                    for c in codes]
        return results

    @property
    def profiler(self) -> RayProfiler:
        return RayProfiler(self)

    @property
    def actors(self) -> list[Any]:
        """The current actor handles, one per GPU slot."""
        with self._lock:
            return [slot.handle for slot in self._slots]

    @property
    def memory_plan_info(self) -> None:
        """None: each actor plans its own GPU's memory; the manifest records no plan."""
        return None

    @property
    def session_memory(self) -> None:
        """None: profiling sessions run on the actors, beside their own evaluators."""
        return None

    def shape_notes(self, task_name: str) -> list[str]:
        """No notes: the actors hold their tasks' shape verdicts and memory plans."""
        return []

    def dropped_shapes(self, task_name: str) -> list[int]:
        """None here: each actor's profiler leaves out its own evaluator's dropped shapes."""
        return []

    @property
    def gpu_lock_info(self) -> dict[str, Any] | None:
        """The first actor's GPU lock patience (NOTE D81; None: one worker, no lock), for the
        trace manifest as `Evaluator.gpu_lock_info`."""
        return self._slots[0].info.get("gpu_lock")

    @property
    def device_info(self) -> dict[str, Any]:
        """The first actor's device report, plus how many actors (GPUs) the pool runs."""
        first = self._slots[0].info
        info = dict(first.get("device_info") or {})
        info["backend"] = "ray"
        info["gpu_actors"] = len(self._slots)
        info["workers_per_actor"] = self.workers
        info["actor_devices"] = sorted({str((s.info.get("device_info") or {})
                                            .get("device_name")) for s in self._slots})
        return info

    def close(self) -> None:
        """Stop every actor (and its warm worker), replacements still starting included."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            slots = list(self._slots)
            starting = list(self._starting.values())
            replacers = list(self._replacers)
        for slot in starting:  # their threads' waits end with an error and return
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        for thread in replacers:
            thread.join(timeout=30)
        refs = []
        for slot in slots:
            try:
                refs.append(slot.handle.close.remote())
            except ray.exceptions.RayError:
                pass
        try:
            ray.get(refs, timeout=60)
        except ray.exceptions.RayError:
            pass
        for slot in slots:
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass

    def __enter__(self) -> RayEvaluatorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""
