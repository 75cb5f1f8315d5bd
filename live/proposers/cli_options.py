"""Click options for choosing and configuring a proposer, shared by ``kernelband live`` (and any
command that proposes), and ``proposer_from_cli`` which turns them into a ``Proposer``.

Usage in a command::

    @click.command()
    @proposer_options
    def live(**kwargs):
        proposer, budget = proposer_from_cli(kwargs)

Cassettes: ``--cassette FILE --record`` calls the endpoint and records every exchange to FILE;
``--cassette FILE`` alone (or ``--proposer cassette``) replays FILE with no network at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from live.proposers import KINDS, Budget, Proposer, make_proposer

#: the keyword names the options below add to a command
OPTION_NAMES = (
    "proposer", "model", "base_url", "api_key_env", "llm_config", "temperature",
    "max_reply_tokens", "request_timeout", "max_retries", "price_file", "prompt_dir",
    "max_cost", "max_tokens", "cassette", "record", "on_cassette_miss", "max_edits",
)


def proposer_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a click command with the proposer options (see OPTION_NAMES)."""
    options = [
        click.option("--proposer", type=click.Choice(KINDS), default="mutate", show_default=True,
                     help="Who writes candidates: an LLM endpoint, the AST mutator, or a "
                          "recorded cassette."),
        click.option("--model", default=None, help="Model name (or OPENAI_MODEL)."),
        click.option("--base-url", default=None,
                     help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 for vLLM "
                          "(or OPENAI_BASE_URL)."),
        click.option("--api-key-env", default=None,
                     help="Environment variable holding the API key [OPENAI_API_KEY]."),
        click.option("--llm-config", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="YAML/JSON file of openai settings; flags override it."),
        click.option("--temperature", type=float, default=None, help="Sampling temperature."),
        click.option("--max-reply-tokens", type=int, default=None,
                     help="max_tokens sent with each request."),
        click.option("--request-timeout", type=float, default=None,
                     help="Seconds per request before it is retried."),
        click.option("--max-retries", type=int, default=None,
                     help="Retries on 429/5xx/timeouts per request."),
        click.option("--price-file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="USD per 1M input/output tokens per model, merged over the shipped "
                          "table."),
        click.option("--prompt-dir", type=click.Path(exists=True, file_okay=False), default=None,
                     help="Folder of prompt templates overriding the shipped ones."),
        click.option("--max-cost", type=float, default=None,
                     help="Stop asking the LLM once this many USD are spent."),
        click.option("--max-tokens", type=int, default=None,
                     help="Stop asking the LLM once this many tokens are spent."),
        click.option("--cassette", type=click.Path(dir_okay=False), default=None,
                     help="JSONL cassette: replayed (no network), or recorded with --record."),
        click.option("--record", is_flag=True, default=False,
                     help="Call the endpoint and record every exchange to --cassette."),
        click.option("--on-cassette-miss", type=click.Choice(("error", "abort")),
                     default="error", show_default=True,
                     help="A replayed request the cassette lacks: an llm_error row, or stop."),
        click.option("--max-edits", type=int, default=None,
                     help="mutate: at most this many edits per proposal [1]."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def proposer_from_cli(values: dict[str, Any]) -> tuple[Proposer, Budget | None]:
    """The proposer the options ask for, and the run's shared budget (None: unlimited)."""
    kind = values.get("proposer") or "mutate"
    cassette = values.get("cassette")
    record = bool(values.get("record"))
    if record and not cassette:
        raise click.UsageError("--record needs --cassette FILE")
    budget = None
    if values.get("max_cost") is not None or values.get("max_tokens") is not None:
        budget = Budget(max_cost_usd=values.get("max_cost"), max_tokens=values.get("max_tokens"))
    if kind == "mutate" and not cassette:
        max_edits = values.get("max_edits")
        return make_proposer("mutate", **({"max_edits": max_edits} if max_edits else {})), None
    on_miss = values.get("on_cassette_miss") or "error"
    try:
        proposer = _build(kind, values, cassette, record, budget, on_miss)
    except (ValueError, FileNotFoundError) as exc:
        raise click.UsageError(str(exc)) from None
    # limits may also come from --llm-config: the proposer holds the budget it enforces
    return proposer, getattr(proposer, "budget", budget)


def _build(kind: str, values: dict[str, Any], cassette: str | None, record: bool,
           budget: Budget | None, on_miss: str) -> Proposer:
    if cassette and not record:
        return make_proposer(
            "cassette", path=cassette, model=values.get("model"),
            temperature=values.get("temperature"), price_file=values.get("price_file"),
            prompt_dir=values.get("prompt_dir"), budget=budget, on_miss=on_miss,
        )
    if kind == "cassette":
        raise click.UsageError("--proposer cassette needs --cassette FILE")
    return make_proposer(
        "openai",
        model=values.get("model"),
        base_url=values.get("base_url"),
        api_key_env=values.get("api_key_env"),
        config_file=values.get("llm_config"),
        temperature=values.get("temperature"),
        max_reply_tokens=values.get("max_reply_tokens"),
        timeout_s=values.get("request_timeout"),
        max_retries=values.get("max_retries"),
        price_file=values.get("price_file"),
        prompt_dir=values.get("prompt_dir"),
        budget=budget,
        cassette=cassette if record else None,
        on_miss=on_miss,
    )
