"""One interface for every proposer: turn (task, parent code, strategy) into a new candidate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from live.tasks.base import Task


@dataclass(frozen=True)
class ParentInfo:
    """What a proposer is told about the parent kernel."""

    kernel_id: str
    code: str
    ms: float | None  # aggregate runtime on the perf shapes (None if unknown)
    ref_ms: float | None  # reference runtime, same aggregation
    #: profile in words-ready numbers: e.g. {"sm_pct": 41.0, "dram_pct": 88.2, "l2_pct": 30.1, ...}
    profile: dict[str, float] = field(default_factory=dict)
    #: compile metadata: registers, shared_bytes, num_warps, num_stages
    meta: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Proposal:
    """The outcome of one proposal. ``status`` is ``ok`` when ``code`` holds a candidate;
    otherwise one of ``llm_error``, ``no_code``, ``not_applicable`` with ``error`` saying why."""

    status: str
    code: str | None
    error: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    #: None when the model's price is unknown (never a made-up price); 0.0 for LLM-free proposers
    cost_usd: float | None = 0.0
    #: HTTP requests made for this proposal (retries included); 0 when none (mutate, cassette)
    attempts: int = 0
    #: what the proposer did, in words (mutate: the edits; openai: retry history); for logs
    detail: str | None = None


#: every status a proposal can end with (a subset of kbsim.trace.schema.STATUSES)
PROPOSAL_STATUSES: tuple[str, ...] = ("ok", "llm_error", "no_code", "not_applicable")


@runtime_checkable
class Proposer(Protocol):
    """Anything that proposes a child kernel. ``sample_index`` distinguishes repeated requests
    with identical inputs (it keys cassettes and seeds the mutate proposer). Satisfied by
    `live.proposers.mutate.MutateProposer` and `live.proposers.openai_proposer.LLMProposer`
    (the ``openai`` and ``cassette`` proposers)."""

    name: str

    def describe(self) -> dict[str, Any]:
        """Plain data for the trace manifest: ``kind`` (the name) and the settings that make
        its proposals what they are; no secrets."""
        ...

    def propose(
        self, task: Task, parent: ParentInfo, strategy: str, *, seed: int, sample_index: int
    ) -> Proposal: ...


@runtime_checkable
class K0Writer(Protocol):
    """A proposer that can also write a task's first kernel from its reference (step 0 of a
    task without a k0 of its own, NOTE D100). Satisfied by the LLM proposers (``openai``,
    ``cassette``); the mutate proposer only edits kernels."""

    def write_k0(self, task: Task, *, seed: int) -> Proposal: ...
