"""Proposer flags: ``proposer_options`` on a click command and ``proposer_from_cli``."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from live.proposers.cli_options import proposer_from_cli, proposer_options
from live.proposers.mutate import MutateProposer
from tests.live.fakeserver import FakeOpenAIServer, chat_reply
from tests.live.proposer_fixtures import ADD_K0, ADD_TASK, parent_of

GOOD = f"```python\n{ADD_K0.strip()}\n```"


@click.command()
@proposer_options
def tool(**values):
    proposer, budget = proposer_from_cli(values)
    proposal = proposer.propose(ADD_TASK, parent_of(ADD_TASK), "tiling", seed=0, sample_index=0)
    limits = None if budget is None else (budget.max_cost_usd, budget.max_tokens)
    click.echo(f"{proposer.name} {proposal.status} {limits}")


def invoke(*args: str, env: dict[str, str] | None = None) -> click.testing.Result:
    clean = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "OPENAI_MODEL": ""}
    return CliRunner().invoke(tool, list(args), env={**clean, **(env or {})})


def test_default_is_the_mutator():
    result = invoke()
    assert result.exit_code == 0 and result.output.strip() == "mutate ok None"
    proposer, _ = proposer_from_cli({"proposer": "mutate", "max_edits": 2})
    assert isinstance(proposer, MutateProposer) and proposer.max_edits == 2


def test_record_then_replay_through_flags(tmp_path):
    cassette = str(tmp_path / "c.jsonl")
    with FakeOpenAIServer([chat_reply(GOOD)]) as server:
        recorded = invoke("--proposer", "openai", "--model", "m", "--base-url", server.base_url,
                          "--cassette", cassette, "--record", "--max-tokens", "5000")
    assert recorded.exit_code == 0, recorded.output
    assert recorded.output.strip() == "openai ok (None, 5000)"
    replayed = invoke("--cassette", cassette)
    assert replayed.exit_code == 0 and replayed.output.strip() == "cassette ok None"


def test_limits_from_a_config_file_reach_the_budget(tmp_path):
    config = tmp_path / "llm.yaml"
    config.write_text("model: m\nbase_url: http://127.0.0.1:9/v1\nmax_tokens: 7\nmax_retries: 0\n"
                      "timeout_s: 0.5\n")
    result = invoke("--proposer", "openai", "--llm-config", str(config))
    assert result.exit_code == 0 and result.output.strip() == "openai llm_error (None, 7)"


@pytest.mark.parametrize(("args", "message"), [
    (("--record",), "--record needs --cassette FILE"),
    (("--proposer", "cassette"), "--proposer cassette needs --cassette FILE"),
    (("--proposer", "openai"), "needs a model name"),
    (("--proposer", "openai", "--model", "gpt-4o"), "no API key: set OPENAI_API_KEY"),
    (("--cassette", "/nonexistent/c.jsonl"), "does not exist"),
])
def test_usage_errors_are_one_clear_sentence(args, message):
    result = invoke(*args)
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output
