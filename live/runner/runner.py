"""The live loop: select -> propose -> evaluate -> update -> record, for every task of a run.

Each task runs its own `Episode` in a thread (``in_flight`` at a time) so that one task's LLM
latency overlaps another's GPU work; evaluation and profiling go through one lock on a GPU, so
timings are never taken concurrently on a device. Every attempt is written to the trace as it
finishes (its child kernel first, then the step), so a killed run loses at most the attempts in
flight, and ``resume=True`` feeds the recorded attempts back through the same step loop to rebuild
the policy's state exactly before going on.

The step itself (its order and rules) is `kbsim.policies.episode.Episode.run`; this module runs
the tasks and owns the run-wide parts (evaluator, profiler, trace writer, budgets), and
`live.runner.world.TaskWorld` supplies a task's proposals, evaluations and records.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbsim.policies.episode import Episode
from kbsim.policies.spec import parse_policy
from kbsim.trace.layout import atomic_write_bytes
from kbsim.trace.writer import TraceWriter
from live.evaluator import CandidateEvaluator, kernel_id
from live.profiler import ProfileResult
from live.profiler.interface import KernelProfiler
from live.profiler.provider import SignatureProvider, SignatureTiming
from live.proposers.base import Proposer
from live.proposers.budget import Budget
from live.runner.config import RunConfig
from live.runner.k0_step import check_k0_sources, k0_proposal
from live.runner.kernels import KernelInfo, features
from live.runner.progress import Progress, TaskStatus
from live.runner.records import k0_step_row, kernel_row
from live.runner.resume import RecordedRun, load_recorded
from live.runner.shard import shard_names
from live.runner.wiring import wire
from live.runner.world import Evaluation, TaskWorld
from live.tasks.base import Task
from live.tasks.registry import resolve_tasks

log = logging.getLogger(__name__)


@dataclass
class TaskSummary:
    task_id: str
    steps: int
    k0_ms: float | None
    ref_ms: float | None
    best_ms: float | None
    best_kernel_id: str | None
    best_path: str | None
    status_counts: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None
    #: what the evaluator's memory plan changed for this task (dropped shapes)
    notes: list[str] = field(default_factory=list)

    @property
    def best_speedup_vs_ref(self) -> float | None:
        if self.best_ms and self.ref_ms:
            return self.ref_ms / self.best_ms
        return None


@dataclass
class RunResult:
    out: Path
    run_id: str
    tasks: list[TaskSummary]


class LiveRunner:
    """Runs one `RunConfig` with a proposer; see the module docstring."""

    def __init__(self, config: RunConfig, proposer: Proposer, *, budget: Budget | None = None,
                 resume: bool = False, show_progress: bool = True,
                 evaluator: CandidateEvaluator | None = None,
                 profiler: KernelProfiler | None = None,
                 device_lock: bool | None = None) -> None:
        self.config = config
        self.spec = parse_policy(config.policy)
        self.proposer = proposer
        self.budget = budget
        self.resume = resume
        self.run_id = config.resolved_run_id
        loaded = resolve_tasks(config.tasks)
        #: every task of the run (the manifest's), whichever share this process runs
        self.run_task_names = [t.name for t in loaded]
        share = set(shard_names(self.run_task_names, config.shard))
        self.tasks: list[Task] = [t for t in loaded if t.name in share]
        check_k0_sources(self.tasks, proposer)
        # the evaluator, profiler and device locks, wired once (live.runner.wiring)
        self.parts = wire(config, len(self.tasks), evaluator=evaluator, profiler=profiler,
                          device_lock=device_lock)
        self.evaluator = self.parts.evaluator
        self.profiler = self.parts.profiler
        self.gpu_lock = self.parts.gpu_lock
        self.signatures: SignatureProvider | None = None  # made once the device is known
        self._writer_lock = threading.Lock()
        self._deadline = (time.monotonic() + config.max_wall_s) if config.max_wall_s else None
        self.progress = Progress([t.name for t in self.tasks], config.steps,
                                 enabled=show_progress)
        self.writer: TraceWriter | None = None

    def _signature_provider(self, info: dict[str, Any]) -> SignatureProvider:
        """What the policy sees of signatures, and when (live.profiler.provider)."""
        return SignatureProvider(
            self.config.profile, {t.name: t for t in self.tasks},
            gpu_name=info.get("device_name"), profiler=self.profiler,
            device_alone=self.parts.device_alone, on_profiled=self._on_profiled,
            timing=SignatureTiming(lag_steps=self.config.profile_lag),
            on_reveal=self._on_reveal,
        )

    def _on_reveal(self, task_name: str, kernel_id: str, asked: int, shown: int) -> None:
        """When the policy first saw a kernel's Nsight Compute signature (NOTE D67): one JSON
        line per kernel in OUT/signature-reveals.jsonl, so a replay of this run can follow it."""
        line = json.dumps({"run_id": self.run_id, "task_id": task_name, "kernel_id": kernel_id,
                           "asked_step": asked, "shown_step": shown})
        with self._writer_lock, open(Path(self.config.out) / "signature-reveals.jsonl",
                                     "a") as f:
            f.write(line + "\n")

    def _log_evaluation(self, task_name: str, result: Any) -> None:
        """Where an evaluation's time went: one JSON line per evaluation in
        OUT/evaluations.jsonl (compiling, checking, timing, and the rest: waiting for the GPU
        lock, process hops), beside the trace, which keeps only the latency."""
        fields = ("kernel_id", "status", "eval_latency_s", "worker_overhead_s", "compile_s",
                  "check_s", "timing_s", "pool_wait_s", "shared_wait_s", "timing_wait_s",
                  "yield_wait_s", "setup_s", "prep_s", "longest_shape_s", "source_check_s",
                  "step_asides", "compiles_off_lock", "timing_reps", "ms", "ref_ms",
                  "worker_recycled")
        record = {"run_id": self.run_id, "task_id": task_name,
                  "finished": dt.datetime.now(dt.timezone.utc).isoformat(),
                  **{name: getattr(result, name, None) for name in fields},
                  "error": (result.error or "")[:200] or None}
        with self._writer_lock, open(Path(self.config.out) / "evaluations.jsonl", "a") as f:
            f.write(json.dumps(record, default=list) + "\n")

    def _on_profiled(self, task_name: str, kernel_id: str, result: Any) -> None:
        if result.hw_sig is not None:
            self._record_profile(next(t for t in self.tasks if t.name == task_name),
                                 kernel_id, result)

    # -- manifest --------------------------------------------------------------------------

    def _manifest(self) -> dict[str, Any]:
        info = self.evaluator.device_info
        if self.signatures is None:
            self.signatures = self._signature_provider(info)
        return {
            "hardware": {
                "gpu_name": info.get("device_name"),
                "device": self.evaluator.device,
                "timing_backend": "cuda" if self.evaluator.device == "cuda"
                else "cpu-interpreter",
                **{k: v for k, v in info.items() if k != "device_name"},
            },
            "proposer": self.proposer.describe(),
            "policy": {"name": self.spec.name, "params": dict(self.spec.params),
                       "spec": str(self.spec)},
            "tasks": list(self.run_task_names),
            "run_ids": [self.run_id],
            # issue #18: not_applicable attempts spend no step (traces/SCHEMA.md)
            "not_applicable_rule": "unavailable",
            "config": self.config.public_dict(),
            "signatures": self.signatures.describe(),
            "memory_plan": self.evaluator.memory_plan_info,
            # NOTE (D81): when timings closed the GPU lock to new checks (None: no lock)
            "gpu_lock": self.evaluator.gpu_lock_info,
        }

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> RunResult:
        out = Path(self.config.out)
        if not self.tasks:  # an empty share (--shard K/N past the tasks): nothing is written
            if self.parts.owns_evaluator:
                self.evaluator.close()
            self.progress.close()
            log.warning("share %s of the run's %d task(s) holds none: nothing to run",
                        self.config.shard, len(self.run_task_names))
            return RunResult(out=out, run_id=self.run_id, tasks=[])
        recorded: RecordedRun | None = None
        if self.resume and (out / "manifest.json").exists():
            recorded = load_recorded(out, self.run_id)
            recorded.check_config(self.config)
            if self.budget is not None:
                self.budget.charge(recorded.tokens_spent, recorded.cost_spent)
        elif not self.resume and (out / "manifest.json").exists():
            raise FileExistsError(
                f"{out} already holds a trace; pass --resume to continue it or choose --out"
            )
        try:
            with TraceWriter(out, self._manifest(), resume=self.resume) as writer:
                self.writer = writer
                with ThreadPoolExecutor(max_workers=self.config.in_flight) as pool:
                    futures = [pool.submit(self._run_task, task, recorded)
                               for task in self.tasks]
                    summaries = [f.result() for f in futures]
                if self.signatures is not None:
                    self._close_signatures()
        finally:
            self.progress.close()
            if self.signatures is not None:
                self.signatures.close()
                self._write_profile_batches()
            if self.parts.owns_evaluator:
                self.evaluator.close()
            self._write_lock_closes()
        return RunResult(out=out, run_id=self.run_id, tasks=summaries)

    def _write_lock_closes(self) -> None:
        """OUT/gpu-lock.jsonl: one line per close of the GPU lock in this piece of the run (why
        it closed, the checks inside, how long they took to drain, the timings it served)."""
        if self.gpu_lock is None:
            return
        closes = self.gpu_lock.closes()
        if not closes:
            return
        first = float(closes[0]["at"])
        with open(Path(self.config.out) / "gpu-lock.jsonl", "a") as f:
            for close in closes:
                f.write(json.dumps({"run_id": self.run_id, **close,
                                    "at": float(close["at"]) - first}) + "\n")

    def _write_profile_batches(self) -> None:
        """OUT/profile-batches.jsonl: one line per Nsight Compute batch of this run (kernels,
        tasks, the session's seconds and the seconds it held the device alone)."""
        assert self.signatures is not None
        batches = self.signatures.batches
        if not batches:
            return
        with open(Path(self.config.out) / "profile-batches.jsonl", "a") as f:
            for batch in batches:
                f.write(json.dumps({"run_id": self.run_id, **{
                    k: batch[k] for k in ("kernels", "tasks", "seconds", "held_s")}}) + "\n")

    def _close_signatures(self) -> None:
        """The end of a run: every representative asked for is profiled and recorded, unless
        --max-wall has passed. Then the session in flight is cancelled and the queue dropped:
        profiling them (tens of seconds per batch) would hold the run past its wall-clock
        budget; `kernelband traces profile` adds the missing profiles later."""
        assert self.signatures is not None
        if self._deadline is None or time.monotonic() < self._deadline:
            self.signatures.close(flush=True)
            return
        left = self.signatures.pending()
        self.signatures.close(flush=False)
        if left:
            log.info("--max-wall reached: %d representative(s) asked for were not profiled; "
                     "`kernelband traces profile %s` adds them", left, self.config.out)

    def _stop_reason(self) -> str | None:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return "wall-clock budget (--max-wall) reached"
        if self.budget is not None:
            return self.budget.exhausted()
        return None

    def _run_task(self, task: Task, recorded: RecordedRun | None) -> TaskSummary:
        status = TaskStatus()
        episode = Episode(self.spec, task.name, self.config.seed, self.config.steps + 1)
        cache: dict[str, Evaluation] = {}
        if task.hooks.k0_is_reference:
            k0 = self._written_k0(task, recorded, cache)
        else:
            k0 = self._initial_kernel(task, recorded, cache)
        if k0 is None:
            self.progress.update(task.name, status, note="k0 failed")
            return TaskSummary(task.name, 0, None, None, None, None, None,
                               {"k0_failed": 1}, stopped="the task's k0 failed evaluation",
                               notes=self._notes(task))
        episode.add_member(k0, ms=k0.ms, phi=k0.phi, rt6=k0.rt6)
        if task.hooks.compiled_reference is not None and self.config.compile_timing:
            self._time_compiled(task, k0, recorded)
        if recorded is not None:
            for kid in recorded.correct_kernel_ids(task.name):
                kernel = recorded.kernel_info(task.name, kid, parent_id=None, chain=[])
                cache.setdefault(kid, Evaluation("ok", kernel=kernel, kernel_id=kid,
                                                 ref_ms=kernel.ref_ms if kernel else None))
                if kernel is not None and self.signatures is not None:
                    self.signatures.remember(task.name, kid, kernel.code, kernel.roofline)
        world = TaskWorld(self, task, status, cache, recorded,
                          first_step=1 if task.hooks.k0_is_reference else 0)
        stopped = episode.run(world, self.config.steps,
                              lambda: None if world.replaying else self._stop_reason())
        best: KernelInfo = episode.members[episode.best()]
        best_path = self._write_best(task, best)
        self.progress.update(task.name, status, done=True)
        return TaskSummary(task.name, episode.step, k0.ms, k0.ref_ms, best.ms, best.kernel_id,
                           best_path, dict(status.counts), stopped, self._notes(task))

    def _notes(self, task: Task) -> list[str]:
        return list(self.evaluator.shape_notes(task.name))

    # -- stages ----------------------------------------------------------------------------

    def _initial_kernel(self, task: Task, recorded: RecordedRun | None,
                        cache: dict[str, Evaluation]) -> KernelInfo | None:
        """k0 as the pool's first member: from the trace when resuming, else evaluated now."""
        kid = kernel_id(task.k0)
        if recorded is not None:
            kernel = recorded.kernel_info(task.name, kid, parent_id=None, chain=[])
            if kernel is not None:
                cache[kid] = Evaluation("ok", kernel=kernel, kernel_id=kid,
                                        ref_ms=kernel.ref_ms)
                return kernel
            # NOTE (D86): a k0 that failed on its own in the recorded run stopped its task
            # there; evaluating it again on every resume would not be the run resumed (a flaky
            # operator could pass now) and costs an evaluation per failed task per call; only
            # a call that asks (--retry-k0) evaluates it again
            failure = recorded.own_failure(task.name, kid)
            if failure is not None:
                if not self.config.retry_k0:
                    log.error("%s: k0 failed evaluation (recorded): %s", task.name, failure)
                    return None
                log.warning("%s: k0 failed evaluation (recorded), evaluated again "
                            "(--retry-k0): %s", task.name, failure)
        outcome = self.evaluate(task, task.k0, parent_id=None, chain=[], seed=0)
        cache[kid] = outcome
        if outcome.kernel is None:
            log.error("%s: k0 failed evaluation: %s", task.name, outcome.error)
        return outcome.kernel

    def _written_k0(self, task: Task, recorded: RecordedRun | None,
                    cache: dict[str, Evaluation]) -> KernelInfo | None:
        """k0 written by the proposer from the reference, recorded as the task's step 0
        (`live.runner.k0_step`, NOTE D100); from the trace when resuming."""
        row = recorded.k0_step(task.name) if recorded is not None else None
        if row is not None:
            kid = row["child_id"]
            kernel = (recorded.kernel_info(task.name, kid, parent_id=None, chain=[])
                      if recorded is not None and kid else None)
            if kernel is None:
                log.error("%s: k0 step failed (recorded): %s: %s", task.name, row["status"],
                          row["error"])
                return None
            cache[kid] = Evaluation("ok", kernel=kernel, kernel_id=kid, ref_ms=kernel.ref_ms)
            return kernel
        proposal = k0_proposal(self.proposer, task, self.config.seed)
        outcome = Evaluation(proposal.status, proposal.error)
        if proposal.status == "ok" and proposal.code is not None:
            outcome = self.evaluate(task, proposal.code, parent_id=None, chain=[], seed=0)
            cache[outcome.kernel_id] = outcome
        kernel = outcome.kernel
        self.write_step(k0_step_row(
            run_id=self.run_id, task_id=task.name, policy=str(self.spec),
            seed=self.config.seed, proposal=proposal, status=outcome.status,
            error=outcome.error, child_id=outcome.kernel_id,
            child_ms=kernel.ms if kernel is not None else None, ref_ms=outcome.ref_ms,
            eval_latency_s=outcome.eval_latency_s))
        if kernel is None:
            log.error("%s: k0 step failed: %s: %s", task.name, outcome.status, outcome.error)
        return kernel

    def _time_compiled(self, task: Task, k0: KernelInfo, recorded: RecordedRun | None) -> None:
        """The reference under ``torch.compile``, timed once per task by the evaluator's
        protocol (as the baseline of k0's timing) and kept in the manifest's ``compile_ms``,
        from which `kernelband analyze` fills in ``fast_p`` against ``torch.compile``."""
        if recorded is not None and task.name in (recorded.manifest.get("compile_ms") or {}):
            return
        assert task.hooks.compiled_reference is not None and self.writer is not None
        with self.parts.serial_lock:
            result = self.evaluator.evaluate(task.name, k0.code, seed=0,
                                             baseline_code=task.hooks.compiled_reference)
        if result.status != "ok" or result.ref_ms is None:
            log.warning("%s: torch.compile was not timed: %s: %s", task.name, result.status,
                        result.error)
            return
        with self._writer_lock:
            self.writer.set_compile_ms(task.name, result.ref_ms)

    @property
    def profiling(self) -> bool:
        """Whether signatures can be measured (a profiler that is available)."""
        return self.profiler is not None and self.profiler.available

    def reveal_signatures(self, task: Task, step: int, kernels: list[KernelInfo]
                          ) -> list[tuple[list[float] | None, list[float] | None]]:
        """The signatures the policy sees of `kernels` at `step`, as the signature provider
        says (it profiles in the background and never makes the step wait: NOTE D67)."""
        assert self.signatures is not None
        seen = self.signatures.reveal(task.name, step, kernels)
        for kernel, (hw, prof9) in zip(kernels, seen, strict=True):
            if hw is not None:
                kernel.hw, kernel.prof9 = hw, prof9 if prof9 is not None else kernel.prof9
        return seen

    def _record_profile(self, task: Task, kernel_id: str, result: Any) -> None:
        assert self.writer is not None
        with self._writer_lock:
            self.writer.update_kernel_profile(
                task.name, kernel_id, hw_sig=list(result.hw_sig),
                profile9=list(result.profile9) if result.profile9 else None,
                profiler=result.profiler or "ncu",
            )

    def write_step(self, row: dict[str, Any]) -> None:
        """Append one step row to the trace (any task's thread)."""
        assert self.writer is not None
        with self._writer_lock:
            self.writer.append_step(row)

    def evaluate(self, task: Task, code: str, *, parent_id: str | None, chain: list[str],
                 seed: int) -> Evaluation:
        """Evaluate (and with ``--profile all`` profile) one candidate; its kernel row is
        written to the trace at once."""
        with self.parts.serial_lock:
            result = self.evaluator.evaluate(task.name, code, seed=seed)
        self._log_evaluation(task.name, result)
        kernel = None
        if result.status == "ok" and result.correct:
            phi, rt6 = features(result.phi, result.runtime_vec)
            kernel = KernelInfo(
                kernel_id=result.kernel_id, code=code, ms=float(result.ms),
                ref_ms=result.ref_ms, parent_id=parent_id, chain=chain, phi=phi, rt6=rt6,
                meta={k: v for k, v in (("registers", result.registers),
                                        ("shared_bytes", result.shared_bytes),
                                        ("num_warps", result.num_warps),
                                        ("num_stages", result.num_stages)) if v is not None},
            )
        profile = None
        roofline = None
        if kernel is not None and self.signatures is not None:
            roofline = self.signatures.observe(task.name, kernel.kernel_id, code,
                                               result.shapes, result.shape_ms)
            kernel.roofline = list(roofline) if roofline is not None else None
            if self.signatures.mode == "roofline" and roofline is not None:
                profile = ProfileResult(kernel.kernel_id, task.name, profiled=True,
                                        profiler="roofline", hw_sig=roofline)
        if kernel is not None and self.config.profile == "all" and self.profiling:
            assert self.signatures is not None
            profile = self.signatures.profile_now(task.name, code)
            kernel.profile_tried = True
            if profile.profiled and profile.hw_sig is not None:
                kernel.hw = list(profile.hw_sig)
                kernel.prof9 = list(profile.profile9) if profile.profile9 else None
        assert self.writer is not None
        with self._writer_lock:
            self.writer.append_kernel(
                kernel_row(self.run_id, task.name, code, result, parent_id, chain, profile,
                           roofline)
            )
        return Evaluation(result.status, result.error, kernel, result.kernel_id, result.ref_ms,
                          result.eval_latency_s)

    def _write_best(self, task: Task, best: KernelInfo) -> str:
        best_dir = Path(self.config.out) / "best"
        best_dir.mkdir(parents=True, exist_ok=True)
        path = best_dir / f"{task.name.replace('/', '__')}.py"
        atomic_write_bytes(path, best.code.encode())
        return str(path)


def run_live(config: RunConfig, proposer: Proposer, *, budget: Budget | None = None,
             resume: bool = False, show_progress: bool = True) -> RunResult:
    """Run `config` with `proposer`; see `LiveRunner`."""
    return LiveRunner(config, proposer, budget=budget, resume=resume,
                      show_progress=show_progress).run()
