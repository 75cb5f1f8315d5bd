"""`wire`: the parts of a live run (evaluator, profiler, device locks), made once from its
config, before the run starts; nothing is set on them afterwards.

Local (`kernelband live`): on a GPU a readers-writer lock (`live.evaluator.gpu_lock`) lets
candidates compile and check side by side while timing and profiling take the device alone;
the evaluator is an `Evaluator` built from the run's `EvaluatorConfig`
(`RunConfig.evaluator_config`), and the Nsight Compute profiler holds the device through the
same lock only while it measures, its sessions reserving their memory from the evaluator's
pool. On the CPU (Triton's interpreter) there is no timing worth guarding and one worker.

From outside (the Ray backend, `live.backends.ray_live`, or a test): any `CandidateEvaluator`
and `KernelProfiler`; with ``device_lock`` and no lock of ours, the runner serializes whole
evaluations itself, and ``device_lock=False`` leaves that to the evaluator (the Ray pool: one
call at a time per GPU, or its actors' own GPU locks).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from live.devices import EVAL_WORKERS_CAP, resolve_device, usable_cores, worker_count
from live.evaluator import CandidateEvaluator, Evaluator
from live.evaluator.gpu_lock import GpuLock
from live.profiler import NcuProfiler
from live.profiler.interface import KernelProfiler
from live.runner.config import RunConfig


@dataclass(frozen=True)
class RunParts:
    """What a live run evaluates and profiles with, and how it shares the device."""

    evaluator: CandidateEvaluator
    #: None: no profiler (``--profile roofline|off``)
    profiler: KernelProfiler | None
    #: the runner's readers-writer lock on the device (its own evaluator on a GPU); None else
    gpu_lock: GpuLock | None
    #: held around each whole evaluation (an evaluator from outside, on a GPU, without our
    #: lock); a no-op otherwise
    serial_lock: AbstractContextManager
    #: the runner made the evaluator, and closes it at the end of the run
    owns_evaluator: bool

    def device_alone(self) -> AbstractContextManager:
        """The device to ourselves (profiling): the GPU lock's exclusive side, or the serial
        lock."""
        return self.gpu_lock.exclusive() if self.gpu_lock is not None else self.serial_lock


def eval_workers(config: RunConfig, n_tasks: int) -> int:
    """Warm evaluator workers of a local run: ``config.eval_workers`` when set; else one per
    task in flight on a GPU (at most `EVAL_WORKERS_CAP`, and half the CPU cores: workers
    compile on them), one on the CPU."""
    return worker_count(resolve_device(config.device), asked=config.eval_workers,
                        parallel=min(config.in_flight, n_tasks), cores=usable_cores() // 2,
                        gpu_cap=EVAL_WORKERS_CAP)


def wire(config: RunConfig, n_tasks: int, *, evaluator: CandidateEvaluator | None = None,
         profiler: KernelProfiler | None = None,
         device_lock: bool | None = None) -> RunParts:
    """The parts of a run of `config` over `n_tasks` tasks; see the module docstring.

    `evaluator` / `profiler`: given parts (None: made here); `device_lock`: whether evaluations
    and profiling must not overlap on the device (None: on a GPU)."""
    if device_lock is None:
        device_lock = resolve_device(config.device) == "cuda"
    owns_evaluator = evaluator is None
    gpu_lock = GpuLock() if device_lock and owns_evaluator else None
    if evaluator is None:
        evaluator = Evaluator(config.evaluator_config(eval_workers(config, n_tasks)),
                              gpu_lock=gpu_lock)
    # an evaluator from outside without our lock: whole evaluations one at a time
    serial_lock: AbstractContextManager = (
        threading.Lock() if device_lock and gpu_lock is None else nullcontext())
    parts = RunParts(evaluator, profiler, gpu_lock, serial_lock, owns_evaluator)
    if profiler is not None or config.profile not in ("reps", "all"):
        return parts
    return replace(parts, profiler=NcuProfiler(
        config.tasks, cache_dir=Path(config.out) / ".profile-cache", device=evaluator.device,
        quiet=True, dropped_shapes=evaluator.dropped_shapes,
        # the device alone only while Nsight Compute measures; a session's program overlaps
        # the checks in flight, so it reserves its memory from their pool
        device_gate=parts.device_alone, session_memory=evaluator.session_memory))
