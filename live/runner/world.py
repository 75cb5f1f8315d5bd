"""The live side of a step: one task's `kbsim.policies.episode.World`.

The step order lives in `kbsim.policies.episode.Episode`; this module only supplies what a
GPU run adds to it: profiling the representatives the policy asks for, proposing and evaluating
a child (each distinct kernel evaluated once per task), and writing every attempt to the trace.
On ``--resume`` the same world first serves the attempts already recorded (checking that the
policy chooses what it chose then, and revealing only the signatures recorded then), so a
resumed run goes through exactly the loop of an uninterrupted one.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbsim.policies.episode import Attempt, Choice, Episode, StepResult
from live.evaluator import kernel_id
from live.proposers.base import ParentInfo, Proposal
from live.runner.kernels import KernelInfo
from live.runner.progress import TaskStatus
from live.runner.records import step_row
from live.runner.resume import RecordedRun, ResumeError
from live.tasks.base import Task

if TYPE_CHECKING:
    from live.runner.runner import LiveRunner


@dataclass
class Evaluation:
    """What became of one candidate: a correct `kernel`, or a failure status and error."""

    status: str
    error: str | None = None
    kernel: KernelInfo | None = None
    kernel_id: str | None = None
    ref_ms: float | None = None
    eval_latency_s: float | None = None


@dataclass
class _Live:
    """What `record` needs of a live attempt."""

    proposal: Proposal
    evaluation: Evaluation


class TaskWorld:
    """One task of a live run as the world of its `Episode` (see the module docstring)."""

    def __init__(self, runner: LiveRunner, task: Task, status: TaskStatus,
                 cache: dict[str, Evaluation], recorded: RecordedRun | None,
                 first_step: int = 0) -> None:
        self.runner = runner
        #: the trace's step of the policy's first attempt (1 after a k0 step, NOTE D100)
        self.first_step = first_step
        self.task = task
        self.status = status
        self.cache = cache
        self.recorded = recorded
        self.pending: deque[dict[str, Any]] = deque(
            recorded.steps_of(task.name) if recorded is not None else ())
        self._profile_s: float | None = None

    @property
    def replaying(self) -> bool:
        """True while attempts recorded before a resumption are being fed back."""
        return bool(self.pending)

    # -- World -----------------------------------------------------------------------------

    def reveal(self, episode: Episode, wanted: list[int]) -> None:
        """Reveal the wanted signatures: what the runner's signature provider shows at this
        step (NOTE D67), or, while replaying a resumed run, what the run showed then."""
        kernels: list[KernelInfo] = [episode.members[i] for i in wanted]
        if not kernels:
            return
        if self.replaying:
            seen = self._recorded_reveal(episode, wanted, kernels)
        else:
            started = time.perf_counter()
            shown = self.runner.reveal_signatures(self.task, episode.step, kernels)
            provider = self.runner.signatures
            seen = [(hw, prof9, hw is not None and provider is not None
                     and provider.provisional(self.task.name, k.kernel_id))
                    for k, (hw, prof9) in zip(kernels, shown, strict=True)]
            if self.runner.profiling:
                self._profile_s = time.perf_counter() - started
        for idx, kernel, (hw, prof9, provisional) in zip(wanted, kernels, seen, strict=True):
            kernel.profile_tried = True
            episode.reveal(idx, hw, prof9, provisional=provisional)

    def _recorded_reveal(self, episode: Episode, wanted: list[int], kernels: list[KernelInfo]
                         ) -> list[tuple[Any, Any, bool]]:
        """What the recorded run showed at this step: with ``--profile reps`` a kernel's
        roofline signature until the ``shown_step`` of ``signature-reveals.jsonl`` (for ever
        where none is recorded), its recorded Nsight Compute signature from then on; else the
        recorded signature at once. The signature provider learns what was asked and shown,
        so the run goes on from there as the uninterrupted one would."""
        assert self.recorded is not None
        provider = self.runner.signatures
        if not self.recorded.reveals_timed:
            return [(k.hw, k.prof9, False) for k in kernels]
        out = []
        for idx, kernel in zip(wanted, kernels, strict=True):
            shown_at = self.recorded.shown_step(self.task.name, kernel.kernel_id)
            shown = shown_at is not None and episode.step >= shown_at and kernel.hw is not None
            out.append((kernel.hw, kernel.prof9, False) if shown
                       else (kernel.roofline, None, kernel.roofline is not None))
            if provider is not None:
                provider.remember(self.task.name, kernel.kernel_id, kernel.code,
                                  kernel.roofline)
                provider.resume_asked(self.task.name, kernel.kernel_id,
                                      asked_step=episode.asked.get(idx, episode.step),
                                      shown=shown, hw=kernel.hw, prof9=kernel.prof9)
        return out

    def attempt(self, episode: Episode, choice: Choice) -> Attempt:
        if self.pending:
            return self._recorded_attempt(episode, choice, self.pending.popleft())
        parent: KernelInfo = episode.members[choice.parent]
        proposal = self._propose(episode, choice)
        evaluation = Evaluation(proposal.status, proposal.error)
        if proposal.status == "ok" and proposal.code is not None:
            kid = kernel_id(proposal.code)
            if kid in self.cache:
                known = self.cache[kid]
                evaluation = Evaluation(known.status, known.error, known.kernel, kid,
                                        known.ref_ms, 0.0)
            else:
                evaluation = self.runner.evaluate(
                    self.task, proposal.code, parent_id=parent.kernel_id,
                    chain=[*parent.chain, choice.strategy_name], seed=episode.step)
                self.cache[kid] = evaluation
        return self._as_attempt(evaluation, parent, choice, _Live(proposal, evaluation))

    def record(self, episode: Episode, result: StepResult) -> None:
        note = result.attempt.note
        if isinstance(note, dict):  # an attempt recorded before the resumption
            self.status.record_row(note)
            if not self.pending:
                self._progress(episode, episode.members[0])
            return
        choice = result.choice
        parent: KernelInfo = episode.members[choice.parent]
        evaluation = note.evaluation
        child = episode.members[result.child] if result.child is not None else None
        row = step_row(
            run_id=self.runner.run_id, task_id=self.task.name,
            step=self.first_step + result.index,
            policy=str(episode.spec), seed=episode.seed, choice=choice, parent=parent,
            proposal=note.proposal, status=evaluation.status, error=evaluation.error,
            child_id=evaluation.kernel_id, child_ms=child.ms if child else None,
            ref_ms=evaluation.ref_ms if evaluation.ref_ms is not None else parent.ref_ms,
            reward=result.reward, eval_latency_s=evaluation.eval_latency_s,
            profile_latency_s=self._profile_s,
        )
        self._profile_s = None
        self.runner.write_step(row)
        self.status.record(evaluation.status, note.proposal)
        self._progress(episode, parent)

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def _as_attempt(evaluation: Evaluation, parent: KernelInfo, choice: Choice,
                    note: Any) -> Attempt:
        if evaluation.kernel is None:
            return Attempt(evaluation.status, note=note)
        child = evaluation.kernel.as_child(parent, choice.strategy_name)
        return Attempt("ok", ms=child.ms, phi=child.phi, rt6=child.rt6, member=child,
                       note=note)

    def _progress(self, episode: Episode, parent: KernelInfo) -> None:
        best: KernelInfo = episode.members[episode.best()]
        self.runner.progress.update(self.task.name, self.status, step=episode.step,
                                    best_ms=best.ms, ref_ms=parent.ref_ms)

    def _propose(self, episode: Episode, choice: Choice) -> Proposal:
        parent: KernelInfo = episode.members[choice.parent]
        hw = parent.hw or []
        profile = dict(zip(("sm_pct", "dram_pct", "l2_pct"), hw, strict=False))
        info = ParentInfo(kernel_id=parent.kernel_id, code=parent.code, ms=parent.ms,
                          ref_ms=parent.ref_ms, profile=profile, meta=dict(parent.meta))
        return self.runner.proposer.propose(self.task, info, choice.strategy_name,
                                            seed=episode.seed, sample_index=episode.step)

    def _recorded_attempt(self, episode: Episode, choice: Choice,
                          row: dict[str, Any]) -> Attempt:
        """The attempt the trace recorded for this choice (the policy must choose the same)."""
        task_id = self.task.name
        parent: KernelInfo = episode.members[choice.parent]
        if choice.strategy_name != row["strategy"] or parent.kernel_id != row["parent_id"]:
            raise ResumeError(
                f"{task_id} step {row['step']}: the policy now chooses "
                f"({parent.kernel_id}, {choice.strategy_name}) but the trace recorded "
                f"({row['parent_id']}, {row['strategy']}); the run's code or parameters "
                "changed, so it cannot be resumed"
            )
        assert self.recorded is not None
        if row["status"] == "ok":
            kernel = self.recorded.kernel_info(task_id, row["child_id"], parent_id=None,
                                               chain=[])
            if kernel is None:
                raise ResumeError(f"{task_id} step {row['step']}: child {row['child_id']}"
                                  " is missing from the kernels table")
            self.cache.setdefault(kernel.kernel_id, Evaluation(
                "ok", kernel=kernel, kernel_id=kernel.kernel_id, ref_ms=row["ref_ms"]))
            evaluation = Evaluation("ok", kernel=kernel, kernel_id=kernel.kernel_id)
        else:
            if row["child_id"] is not None:
                self.cache.setdefault(row["child_id"], Evaluation(
                    row["status"], row["error"], None, row["child_id"], row["ref_ms"]))
            evaluation = Evaluation(row["status"], row["error"])
        return self._as_attempt(evaluation, parent, choice, row)
