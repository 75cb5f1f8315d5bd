"""The ``openai`` proposer: prompt → one chat exchange → code extraction → a ``Proposal``.

Statuses: ``ok`` (a code block was extracted and parses), ``no_code`` (a reply without usable
code), ``llm_error`` (retries exhausted, a non-retryable HTTP error, the budget spent: the
proposer refuses before sending, or a cassette miss with ``on_miss="error"``; with
``on_miss="abort"`` a ``CassetteMiss`` propagates and stops the run). Tokens come from the
server's ``usage``; cost from the price table (None for a model without a price).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from live.proposers.base import ParentInfo, Proposal
from live.proposers.budget import Budget
from live.proposers.cassette import ON_MISS, CassetteMiss
from live.proposers.extract import extract_code
from live.proposers.llm import ChatClient, ChatRequest
from live.proposers.pricing import PriceTable
from live.proposers.prompting import build_k0_messages, build_messages
from live.tasks.base import Task


class LLMProposer:
    """Proposes children by asking a chat model; ``client`` does the exchange (HTTP or cassette)."""

    def __init__(
        self,
        client: ChatClient,
        *,
        model: str,
        temperature: float = 0.7,
        prices: PriceTable | None = None,
        budget: Budget | None = None,
        prompt_dir: str | Path | None = None,
        max_reply_tokens: int | None = None,
        name: str = "openai",
        description: dict[str, Any] | None = None,
        on_miss: str = "error",
    ) -> None:
        if on_miss not in ON_MISS:
            raise ValueError(f"on_miss must be one of {ON_MISS}, got {on_miss!r}")
        self.on_miss = on_miss
        self.client = client
        self.model = model
        self.temperature = temperature
        self.prices = prices if prices is not None else PriceTable.load()
        self.budget = budget
        self.prompt_dir = prompt_dir
        self.max_reply_tokens = max_reply_tokens
        self.name = name
        self._description = dict(description or {})
        unpriced = self.prices.price(model) is None
        if budget is not None and budget.max_cost_usd is not None and unpriced:
            raise ValueError(
                f"--max-cost needs a price for model {model!r}; add it with --price-file "
                "(USD per 1M input/output tokens) or use --max-tokens"
            )

    def describe(self) -> dict[str, Any]:
        """Plain data for the trace manifest (no secrets)."""
        return {"kind": self.name, "model": self.model, "temperature": self.temperature,
                **self._description}

    def propose(
        self, task: Task, parent: ParentInfo, strategy: str, *, seed: int, sample_index: int
    ) -> Proposal:
        # NOTE (D5): cassettes key on the prompt without the parent's measurements (runtime,
        # profile and its verdict, compile metadata): they differ between machines and runs,
        # and a recorded run must replay elsewhere; the parent's code and the strategy remain.
        unmeasured = ParentInfo(kernel_id=parent.kernel_id, code=parent.code, ms=None,
                                ref_ms=None)
        return self._ask(
            task, tuple(build_messages(task, parent, strategy, self.prompt_dir)),
            tuple(build_messages(task, unmeasured, strategy, self.prompt_dir)),
            seed=seed, sample_index=sample_index)

    def write_k0(self, task: Task, *, seed: int) -> Proposal:
        """The task's first kernel, written from its reference (a live run's step 0 where the
        task has no k0 of its own: NOTE D100)."""
        messages = tuple(build_k0_messages(task, self.prompt_dir))
        return self._ask(task, messages, messages, seed=seed, sample_index=0)

    def _ask(self, task: Task, messages: tuple[dict[str, str], ...],
             key_messages: tuple[dict[str, str], ...], *, seed: int,
             sample_index: int) -> Proposal:
        """One exchange and its code extraction, as a `Proposal`."""
        if self.budget is not None:
            reason = self.budget.exhausted()
            if reason is not None:
                return Proposal(status="llm_error", code=None, error=reason, model=self.model,
                                cost_usd=0.0)
        request = ChatRequest(
            model=self.model,
            messages=messages,
            key_messages=key_messages,
            temperature=self.temperature,
            sample_index=sample_index,
            seed=seed,
            max_reply_tokens=self.max_reply_tokens,
        )
        try:
            reply = self.client.complete(request)
        except CassetteMiss as miss:
            if self.on_miss == "abort":
                raise
            return Proposal(status="llm_error", code=None, error=str(miss), model=self.model,
                            cost_usd=0.0)
        tokens = reply.prompt_tokens + reply.completion_tokens
        cost = self.prices.cost_usd(self.model, reply.prompt_tokens, reply.completion_tokens)
        if self.budget is not None and (tokens or reply.attempts):
            self.budget.charge(tokens, cost)
        detail = "; ".join(reply.history) if reply.history else None
        common: dict[str, Any] = {
            "model": self.model,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "latency_s": reply.latency_s,
            "cost_usd": cost,
            "attempts": reply.attempts,
            "detail": detail,
        }
        if reply.error is not None:
            return Proposal(status="llm_error", code=None, error=reply.error, **common)
        extraction = extract_code(reply.text or "", task.entry,
                                  getattr(task, "language", "triton"))
        if extraction.code is None:
            error = extraction.error
            if reply.finish_reason == "length":
                error = f"{error} (the reply hit its token limit)"
            return Proposal(status="no_code", code=None, error=error, **common)
        return Proposal(status="ok", code=extraction.code, **common)
