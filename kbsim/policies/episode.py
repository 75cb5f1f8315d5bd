"""THE Python step: one task's episode (policy state, pool) and the order of a step.

Every caller that runs a policy one step at a time from Python goes through `Episode.run`
(or `Episode.run_step`): the live runner (`live.runner`), its ``--resume`` (which feeds the
recorded attempts back through the same loop) and `kbsim.replay.record.record_trace` (an
environment as the world). The caller supplies a `World`: how to profile, how to attempt a
choice (propose and evaluate, or ask an environment), and how to record the attempt. The order
of a step is fixed here::

    prepare -> reveal the representatives' signatures -> select -> attempt (propose, evaluate)
            -> update -> add a correct child to the pool -> record

A ``not_applicable`` attempt (DESIGN.md, "Not-applicable proposals") is no step of T: the pair
is marked (`kernels.mark_na`, no statistic changes), the attempt is recorded, and the policy
selects again within the same step; when no applicable (parent, strategy) pair is left the
episode stops with `NO_APPLICABLE_PAIR` as its reason. Every attempt has its own index (the
trace's ``step`` column: attempts numbered 0, 1, ... per task), so a step of T may span several
rows: its not-applicable ones, then the one that consumed it.

The policy's RNG is `kbsim.rng.policy_rng(seed, task_id)`, so the compiled `select` /
`update` make the same draws here as in the compiled replay loop (`kbsim.replay.engine`, which
inlines the same order for speed; tests/live/test_live_tape_exact.py holds the two equal).

An `Episode` knows nothing of GPUs, proposers or files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kbsim.policies.kernels import (
    mark_na,
    prepare,
    representatives,
    select,
    show_signature,
    update,
)
from kbsim.policies.spec import PolicySpec
from kbsim.policies.state import HW_DIM, PROF_DIM, new_pool, new_state, pool_add
from kbsim.rng import policy_rng
from kbsim.strategies import STRATEGIES

NOT_APPLICABLE = "not_applicable"
#: why an episode stops when every (parent, strategy) pair is known not applicable
NO_APPLICABLE_PAIR = "no applicable (parent, strategy) pair left: every proposal was not_applicable"


@dataclass(frozen=True)
class Choice:
    """What `select` chose: arm (cluster, strategy), parent pool index, its propensity."""

    cluster: int
    strategy: int
    parent: int
    propensity: float

    @property
    def strategy_name(self) -> str:
        return STRATEGIES[self.strategy]


@dataclass
class Attempt:
    """What the world made of a choice.

    status: ``ok`` (a correct child; `ms`, `phi`, `rt6` required), ``not_applicable`` (the
    proposer cannot apply the strategy to that parent: no step is spent) or a failure status of
    the trace schema. `member`: the caller's record of the child, kept as `Episode.members[idx]`.
    `key`: the child's pool key (default: its pool index). `prof9`: the child's 9-dim profile
    given to the policy at once (v1 reads it), else unknown. `note`: anything the world wants
    back in `World.record`.
    """

    status: str
    ms: float = float("nan")
    phi: np.ndarray | None = None
    rt6: np.ndarray | None = None
    prof9: np.ndarray | None = None
    key: int | None = None
    member: Any = None
    note: Any = None

    @property
    def correct(self) -> bool:
        return self.status == "ok"

    @property
    def not_applicable(self) -> bool:
        return self.status == NOT_APPLICABLE


@dataclass
class StepResult:
    """One recorded attempt, as `World.record` receives it."""

    step: int  # the step of T this attempt belongs to
    index: int  # the attempt's number in the task (the trace's `step` column)
    choice: Choice
    attempt: Attempt
    reward: float  # the policy's reward; 0.0 for a not-applicable attempt (no update)
    child: int | None  # pool index of the correct child, None otherwise


class World(Protocol):
    """The caller's side of a step."""

    def reveal(self, episode: Episode, wanted: list[int]) -> None:
        """Profile the pool members the policy asks for (indices) and give each signature to
        the policy with `episode.reveal(idx, hw, prof9)` (an unprofiled member: leave it;
        a signature to be replaced later, such as a roofline one: ``provisional=True``)."""

    def attempt(self, episode: Episode, choice: Choice) -> Attempt | None:
        """Propose and evaluate a child of `episode.members[choice.parent]` under the chosen
        strategy; None ends the episode (the world has nothing more to give)."""

    def record(self, episode: Episode, result: StepResult) -> None:
        """Record one attempt (called after the policy's update and the pool's growth)."""


@dataclass
class Episode:
    """Policy state, pool and the caller's records of the pool members of one task."""

    spec: PolicySpec
    task_id: str
    seed: int
    max_pool: int
    members: list[Any] = field(default_factory=list)
    step: int = 0  # steps of T done
    attempts: int = 0  # attempts recorded (not-applicable ones included)
    stopped: str | None = None

    def __post_init__(self) -> None:
        self.state = new_state(self.spec, self.max_pool)
        self.pool = new_pool(self.max_pool)
        self.rng = policy_rng(self.seed, self.task_id)
        #: pool index -> the step of T at which the policy first asked for its signature
        self.asked: dict[int, int] = {}
        #: pool indices showing a signature that a later one replaces (a roofline signature
        #: until Nsight Compute's is shown: docs/profiling-and-memory.md); asked for again
        self.provisional: set[int] = set()

    # -- pool ------------------------------------------------------------------------------

    def add_member(self, member: Any, *, ms: float, phi: np.ndarray, rt6: np.ndarray,
                   prof9: np.ndarray | None = None, key: int | None = None) -> int:
        """Add a correct kernel to the pool (hardware signature hidden until the policy asks
        and the world reveals it); returns its pool index."""
        nan3 = np.full(HW_DIM, np.nan)
        prof = np.full(PROF_DIM, np.nan) if prof9 is None else np.asarray(prof9, np.float64)
        idx = int(pool_add(self.pool, np.asarray(phi, np.float64), nan3, prof,
                           np.asarray(rt6, np.float64), float(ms),
                           len(self.members) if key is None else int(key)))
        if idx < 0:
            raise RuntimeError(f"{self.task_id}: candidate pool is full ({self.max_pool})")
        self.members.append(member)
        return idx

    def adopt(self, members: Sequence[Any]) -> None:
        """Record the caller's records of members put into `pool` directly (an environment's
        initial kernels): one per pool entry not yet tracked."""
        self.members.extend(members)
        if len(self.members) != int(self.pool.n[0]):
            raise ValueError(f"{len(self.members)} member records for a pool of "
                             f"{int(self.pool.n[0])}")

    def reveal(self, idx: int, hw: Sequence[float] | None,
               prof9: Sequence[float] | None = None, *, provisional: bool = False) -> None:
        """Give the policy the hardware signature (and v1 profile) of pool member `idx`
        (`kernels.show_signature`: a replaced signature is noticed). `provisional`: a later
        one replaces it, so the policy asks for it again while it represents a cluster."""
        if hw is not None:
            show_signature(self.spec.kind, self.state, self.pool, idx,
                           np.asarray(hw, dtype=np.float64))
        if prof9 is not None:
            self.pool.prof9[idx, :] = np.asarray(prof9, dtype=np.float64)
        if provisional:
            self.provisional.add(idx)
        else:
            self.provisional.discard(idx)

    def best(self) -> int:
        """Pool index of the fastest member (ties: the earliest)."""
        n = int(self.pool.n[0])
        return int(np.argmin(self.pool.ms[:n]))

    # -- the policy's operations -----------------------------------------------------------

    def wanted_signatures(self) -> list[int]:
        """Bring the clustering up to date; pool indices whose signature the policy wants:
        the representatives without one and those showing a provisional one, in cluster
        order. The first time each is asked for is kept in `asked`."""
        s = self.spec
        prepare(s.kind, s.fparams, s.iparams, self.state, self.pool, self.rng)
        wanted = [int(i) for i in representatives(s.kind, self.state, self.pool)]
        if self.provisional:
            st = self.state
            again = {int(r) for c, r in enumerate(st.rep)
                     if st.size[c] > 0 and r >= 0 and int(r) in self.provisional}
            if again:
                chosen = set(wanted) | again
                wanted = [int(r) for c, r in enumerate(st.rep)
                          if st.size[c] > 0 and r >= 0 and int(r) in chosen]
        for idx in wanted:
            self.asked.setdefault(idx, self.step)
        return wanted

    def select(self) -> Choice:
        s = self.spec
        cluster, strategy, parent, propensity = select(
            s.kind, s.fparams, s.iparams, self.state, self.pool, self.rng
        )
        return Choice(int(cluster), int(strategy), int(parent), float(propensity))

    def update(self, choice: Choice, attempt: Attempt) -> tuple[float, int | None]:
        """Feed an outcome back; a correct child joins the pool after the update.
        Returns (the policy's reward, the child's pool index or None)."""
        s = self.spec
        success = attempt.correct
        child_ms = float(attempt.ms) if success else np.nan
        reward = float(update(s.kind, s.fparams, s.iparams, self.state, self.pool,
                              choice.cluster, choice.strategy, choice.parent, child_ms,
                              success))
        child = None
        if success:
            if attempt.phi is None or attempt.rt6 is None:
                raise ValueError("a correct attempt needs the child's phi and runtime vector")
            child = self.add_member(attempt.member, ms=child_ms, phi=attempt.phi,
                                    rt6=attempt.rt6, prof9=attempt.prof9, key=attempt.key)
        return reward, child

    # -- the step --------------------------------------------------------------------------

    def mark_not_applicable(self, choice: Choice) -> None:
        """The chosen strategy cannot be applied to the chosen parent: the policy learns it
        (no statistic is updated)."""
        mark_na(self.state, choice.parent, choice.strategy)

    def run_step(self, world: World) -> bool:
        """One step of the budget T in the documented order (not-applicable attempts within
        it); False when the episode ended (`stopped` says why)."""
        wanted = self.wanted_signatures()
        if wanted:
            world.reveal(self, wanted)
        while True:
            choice = self.select()
            if choice.parent < 0:
                self.stopped = NO_APPLICABLE_PAIR
                return False
            attempt = world.attempt(self, choice)
            if attempt is None:
                self.stopped = "the world ended the episode"
                return False
            index = self.attempts
            self.attempts += 1
            if attempt.not_applicable:
                self.mark_not_applicable(choice)
                world.record(self, StepResult(self.step, index, choice, attempt, 0.0, None))
                continue
            reward, child = self.update(choice, attempt)
            step = self.step
            self.step += 1
            world.record(self, StepResult(step, index, choice, attempt, reward, child))
            return True

    def run(self, world: World, steps: int,
            should_stop: Callable[[], str | None] | None = None) -> str | None:
        """Run steps until `steps` are done, `should_stop()` gives a reason (asked before
        each step) or the episode ends; returns why it stopped early (None: T reached)."""
        while self.step < steps and self.stopped is None:
            reason = should_stop() if should_stop is not None else None
            if reason:
                self.stopped = reason
                break
            self.run_step(world)
        return self.stopped
