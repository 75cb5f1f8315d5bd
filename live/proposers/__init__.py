"""Proposers: turn (task, parent kernel, strategy) into a candidate child kernel.

``make_proposer(kind, **options)`` builds one of:

- ``openai``: any OpenAI-compatible Chat Completions endpoint (see ``config.OpenAIConfig`` for
  the options; ``config_file=`` reads YAML/JSON; ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``);
- ``mutate``: the LLM-free AST mutator (options: none);
- ``cassette``: replays a recorded JSONL file without any network (``path=``; ``model=`` and
  ``temperature=`` may be left out when the file holds one of each).

``openai`` with ``cassette=FILE`` records every exchange to FILE while calling the endpoint.

Shared options: ``budget=`` (a ``Budget`` shared by the run; else one is made from
``max_cost_usd`` / ``max_tokens``), ``on_miss=`` (``error`` or ``abort``, for cassettes).
"""

from __future__ import annotations

from typing import Any

from live.proposers.base import PROPOSAL_STATUSES, ParentInfo, Proposal, Proposer
from live.proposers.budget import Budget
from live.proposers.cassette import CassetteClient, CassetteMiss

KINDS = ("openai", "mutate", "cassette")

__all__ = [
    "KINDS",
    "PROPOSAL_STATUSES",
    "Budget",
    "CassetteMiss",
    "ParentInfo",
    "Proposal",
    "Proposer",
    "make_proposer",
]


def _budget(given: Budget | None, max_cost_usd: Any, max_tokens: Any) -> Budget | None:
    """The run's shared budget if one is given, else one from the limits (None: unlimited)."""
    if given is not None:
        return given
    if max_cost_usd is None and max_tokens is None:
        return None
    return Budget(max_cost_usd=max_cost_usd, max_tokens=max_tokens)


def make_proposer(kind: str, **options: Any) -> Proposer:
    """Build a proposer by kind; unknown kinds and options are clear errors."""
    if kind == "mutate":
        from live.proposers.mutate import MutateProposer

        allowed = {"max_edits"}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ValueError(f"mutate proposer takes no option(s) {', '.join(unknown)}")
        return MutateProposer(**options)
    if kind == "openai":
        return _make_openai(options)
    if kind == "cassette":
        return _make_replay(options)
    raise ValueError(f"unknown proposer {kind!r}; expected one of {', '.join(KINDS)}")


def _make_openai(options: dict[str, Any]) -> Proposer:
    from live.proposers.config import resolve_config
    from live.proposers.llm import OpenAIChatClient
    from live.proposers.openai_proposer import LLMProposer
    from live.proposers.pricing import PriceTable

    options = dict(options)
    given = options.pop("budget", None)
    cassette_path = options.pop("cassette", None)
    on_miss = options.pop("on_miss", "error")
    client_factory = options.pop("client_factory", None)  # tests: config -> ChatClient
    config_file = options.pop("config_file", None)
    config = resolve_config(options, config_file=config_file)
    budget = _budget(given, config.max_cost_usd, config.max_tokens)
    client = (client_factory or OpenAIChatClient)(config)
    description = {"config": config.public_dict()}
    name = "openai"
    if cassette_path is not None:
        client = CassetteClient(cassette_path, "record", inner=client)
        description["cassette"] = {"path": str(cassette_path), "mode": "record"}
    return LLMProposer(
        client,
        model=config.model,
        temperature=config.temperature,
        prices=PriceTable.load(config.price_file),
        budget=budget,
        prompt_dir=config.prompt_dir,
        max_reply_tokens=config.max_reply_tokens,
        name=name,
        description=description,
        on_miss=on_miss,
    )


def _make_replay(options: dict[str, Any]) -> Proposer:
    from live.proposers.openai_proposer import LLMProposer
    from live.proposers.pricing import PriceTable

    options = dict(options)
    path = options.pop("path", None) or options.pop("cassette", None)
    if path is None:
        raise ValueError("the cassette proposer needs path= (--cassette FILE)")
    budget = _budget(options.pop("budget", None), options.pop("max_cost_usd", None),
                     options.pop("max_tokens", None))
    client = CassetteClient(path, "replay")
    model = options.pop("model", None)
    if model is None:
        models = client.models()
        if len(models) != 1:
            raise ValueError(
                f"cassette {path} holds {len(models)} models ({', '.join(models) or 'none'}); "
                "pick one with --model"
            )
        model = models[0]
    temperature = options.pop("temperature", None)
    if temperature is None:
        temperatures = client.temperatures()
        temperature = temperatures[0] if len(temperatures) == 1 else 0.7
    prices = PriceTable.load(options.pop("price_file", None))
    prompt_dir = options.pop("prompt_dir", None)
    on_miss = options.pop("on_miss", "error")
    unknown = sorted(options)
    if unknown:
        raise ValueError(f"cassette proposer takes no option(s) {', '.join(unknown)}")
    return LLMProposer(
        client,
        model=model,
        temperature=temperature,
        prices=prices,
        budget=budget,
        prompt_dir=prompt_dir,
        name="cassette",
        description={"cassette": {"path": str(path), "mode": "replay"}},
        on_miss=on_miss,
    )
