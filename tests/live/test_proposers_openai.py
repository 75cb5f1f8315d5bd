"""The openai proposer against a local fake OpenAI-compatible server, and cassette record/replay.

Acceptance (issue 5): scripted 429 (Retry-After), 500 burst, a timeout, a reply without code, a
non-retryable 400 and good kernels are retried, classified and recorded; a cassette recorded from
that run replays the same with the server stopped.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from live.proposers import Budget, CassetteMiss, make_proposer
from live.proposers.llm import OpenAIChatClient
from tests.live.fakeserver import FakeOpenAIServer, chat_reply, error_reply
from tests.live.proposer_fixtures import ADD_K0, ADD_TASK, parent_of

SECRET = "sk-test-SECRET-0123456789"
GOOD = f"Here is a faster kernel.\n\n```python\n{ADD_K0.strip()}\n```\n"
NO_CODE = "I would increase BLOCK_SIZE and use more warps, but I will not write code today."


class SleepRecorder:
    """Stands in for time.sleep: records the backoff waits without spending them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def openai_proposer(server: FakeOpenAIServer, sleeper: SleepRecorder, **extra):
    options = dict(
        model="fake-model",
        base_url=server.base_url,
        api_key=SECRET,
        timeout_s=0.5,
        max_retries=3,
        backoff_base_s=0.01,
        backoff_max_s=5.0,
        client_factory=lambda cfg: OpenAIChatClient(cfg, sleep=sleeper),
    )
    options.update(extra)
    return make_proposer("openai", **options)


def propose(proposer, sample_index: int, strategy: str = "tiling"):
    return proposer.propose(
        ADD_TASK, parent_of(ADD_TASK), strategy, seed=7, sample_index=sample_index
    )


ACCEPTANCE_SCRIPT = [
    error_reply(429, "rate limited", retry_after="1"),
    chat_reply(GOOD, prompt_tokens=100, completion_tokens=50),
    error_reply(500),
    error_reply(502),
    error_reply(503),
    chat_reply(GOOD, prompt_tokens=101, completion_tokens=51),
    dataclasses.replace(chat_reply(GOOD), delay_s=3.0),  # the client times out at 0.5 s
    chat_reply(GOOD, prompt_tokens=102, completion_tokens=52),
    chat_reply(NO_CODE, prompt_tokens=103, completion_tokens=20),
    error_reply(400, "bad request: unknown parameter"),
    error_reply(500),
    error_reply(500),
    error_reply(500),
    error_reply(500),
]


@pytest.fixture(scope="module")
def acceptance_run(tmp_path_factory):
    """The scripted run, once for the module (it waits out a 0.5 s client timeout); its
    tests only read the proposals and replay the cassette."""
    sleeper = SleepRecorder()
    cassette = tmp_path_factory.mktemp("acceptance") / "run.jsonl"
    with FakeOpenAIServer(ACCEPTANCE_SCRIPT) as server:
        proposer = openai_proposer(server, sleeper, cassette=cassette)
        proposals = [propose(proposer, i) for i in range(6)]
        served = len(server.requests)
        auth = list(server.auth_headers)
        remaining = server.remaining
    return proposals, sleeper, cassette, served, auth, remaining


def test_retries_and_classifies_every_scripted_reply(acceptance_run):
    proposals, sleeper, _, served, auth, remaining = acceptance_run
    assert served == len(ACCEPTANCE_SCRIPT) and remaining == 0
    assert all(header == f"Bearer {SECRET}" for header in auth)

    rate_limited, burst, timed_out, no_code, bad_request, exhausted = proposals
    assert rate_limited.status == "ok" and rate_limited.attempts == 2
    assert sleeper.waits[0] == pytest.approx(1.0)  # Retry-After honoured
    assert (rate_limited.prompt_tokens, rate_limited.completion_tokens) == (100, 50)
    assert "def add(" in rate_limited.code and "@triton.jit" in rate_limited.code

    assert burst.status == "ok" and burst.attempts == 4
    assert (burst.prompt_tokens, burst.completion_tokens) == (101, 51)
    assert timed_out.status == "ok" and timed_out.attempts == 2
    assert "timeout" in timed_out.detail
    assert timed_out.latency_s >= 0.5  # waited for the client timeout
    assert (timed_out.prompt_tokens, timed_out.completion_tokens) == (102, 52)

    assert no_code.status == "no_code" and no_code.code is None
    assert "no fenced code block" in no_code.error
    assert no_code.prompt_tokens == 103  # tokens are counted even without code

    assert bad_request.status == "llm_error" and bad_request.attempts == 1
    assert "HTTP 400" in bad_request.error

    assert exhausted.status == "llm_error" and exhausted.attempts == 4
    assert "gave up after 4 attempts" in exhausted.error
    for proposal in proposals:
        assert proposal.model == "fake-model"
        assert proposal.cost_usd is None  # fake-model has no price: null, never a guess


def test_cassette_replays_the_run_with_the_server_stopped(acceptance_run):
    proposals, _, cassette, _, _, _ = acceptance_run
    text = cassette.read_text()
    assert SECRET not in text
    assert len(text.splitlines()) == 6
    replayer = make_proposer("cassette", path=cassette)  # model and temperature from the file
    replayed = [propose(replayer, i) for i in range(6)]
    keep = ("status", "code", "error", "model", "prompt_tokens", "completion_tokens",
            "latency_s", "cost_usd")
    for original, again in zip(proposals, replayed, strict=True):
        assert {k: getattr(again, k) for k in keep} == {k: getattr(original, k) for k in keep}
        assert again.attempts == 0  # nothing was sent


def test_cassette_miss_is_a_clear_error_or_aborts(acceptance_run):
    _, _, cassette, _, _, _ = acceptance_run
    replayer = make_proposer("cassette", path=cassette)
    miss = propose(replayer, sample_index=99)
    assert miss.status == "llm_error" and miss.error.startswith("cassette miss:")
    assert "sample_index=99" in miss.error
    other_strategy = propose(replayer, sample_index=0, strategy="pipeline")
    assert other_strategy.error.startswith("cassette miss:")
    aborting = make_proposer("cassette", path=cassette, on_miss="abort")
    with pytest.raises(CassetteMiss, match="cassette miss"):
        propose(aborting, sample_index=99)


def test_cassette_survives_a_torn_last_line(tmp_path):
    sleeper = SleepRecorder()
    cassette = tmp_path / "torn.jsonl"
    with FakeOpenAIServer([chat_reply(GOOD)]) as server:
        first = propose(openai_proposer(server, sleeper, cassette=cassette), 0)
    with open(cassette, "a") as handle:
        handle.write('{"key": "abc", "reply": {"te')  # a writer killed mid-line
    again = propose(make_proposer("cassette", path=cassette), 0)
    assert again.code == first.code


def test_budget_stops_requests_before_they_are_sent():
    sleeper = SleepRecorder()
    script = [chat_reply(GOOD, prompt_tokens=30, completion_tokens=10) for _ in range(3)]
    with FakeOpenAIServer(script) as server:
        budget = Budget(max_tokens=50)
        proposer = openai_proposer(server, sleeper, budget=budget)
        results = [propose(proposer, i) for i in range(3)]
        assert len(server.requests) == 2  # the third was refused locally
    assert [p.status for p in results] == ["ok", "ok", "llm_error"]
    assert "budget exhausted" in results[2].error and results[2].attempts == 0
    assert budget.spent_tokens == 80


def test_cost_from_the_price_table_and_max_cost(tmp_path):
    sleeper = SleepRecorder()
    prices = tmp_path / "prices.yaml"
    prices.write_text("fake-model: {input_per_1m: 2.0, output_per_1m: 10.0}\n")
    script = [chat_reply(GOOD, prompt_tokens=1_000_000, completion_tokens=100_000)] * 2
    with FakeOpenAIServer(script) as server:
        proposer = openai_proposer(server, sleeper, price_file=str(prices), max_cost_usd=2.5)
        first, second = propose(proposer, 0), propose(proposer, 1)
        assert len(server.requests) == 1
    assert first.cost_usd == pytest.approx(3.0)
    assert second.status == "llm_error" and "--max-cost" in second.error


def test_max_cost_without_a_price_is_refused_up_front():
    with pytest.raises(ValueError, match="needs a price for model 'mystery-model'"):
        make_proposer("openai", model="mystery-model", base_url="http://127.0.0.1:9/v1",
                      max_cost_usd=1.0)


def test_missing_usage_counts_zero_tokens_and_a_connection_error_is_retried():
    sleeper = SleepRecorder()
    with FakeOpenAIServer([chat_reply(GOOD, with_usage=False)]) as server:
        proposal = propose(openai_proposer(server, sleeper), 0)
        port = server.port
    assert proposal.status == "ok" and proposal.prompt_tokens == 0
    # nothing listens on the port any more: connection errors, retried, then given up
    proposer = make_proposer("openai", model="fake-model", base_url=f"http://127.0.0.1:{port}/v1",
                             max_retries=2, backoff_base_s=0.0, timeout_s=0.5,
                             client_factory=lambda cfg: OpenAIChatClient(cfg, sleep=sleeper))
    down = propose(proposer, 0)
    assert down.status == "llm_error" and "connection error" in down.error
    assert down.attempts == 3


def test_request_carries_model_temperature_and_the_prompt():
    sleeper = SleepRecorder()
    with FakeOpenAIServer([chat_reply(GOOD)]) as server:
        proposer = openai_proposer(server, sleeper, temperature=0.3, max_reply_tokens=2048)
        propose(proposer, 0, strategy="vectorization")
        request = server.requests[0]
    assert request["model"] == "fake-model" and request["temperature"] == 0.3
    assert request["max_tokens"] == 2048
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user"]
    user = request["messages"][1]["content"]
    assert "Vectorization" in user and "add_kernel" in user
    assert "DRAM throughput 88% of peak: memory-bound" in user
    assert json.dumps(request).find(SECRET) == -1


def test_cassette_replays_on_other_hardware_but_not_for_other_code(acceptance_run):
    """Measurements in the prompt (runtime, profile, registers) differ between machines; the
    key ignores them (NOTE D5), but a different parent kernel is a different request."""
    proposals, _, cassette, _, _, _ = acceptance_run
    replayer = make_proposer("cassette", path=cassette)
    elsewhere = parent_of(ADD_TASK, ms=0.73, ref_ms=2.5,
                          profile={"sm_pct": 12.0, "dram_pct": 95.5, "l2_pct": 61.0},
                          meta={"registers": 40, "shared_bytes": 2048, "num_warps": 8})
    again = replayer.propose(ADD_TASK, elsewhere, "tiling", seed=7, sample_index=0)
    assert again.status == "ok" and again.code == proposals[0].code
    other_code = parent_of(ADD_TASK, code=ADD_K0.replace("num_warps=4", "num_warps=8"))
    miss = replayer.propose(ADD_TASK, other_code, "tiling", seed=7, sample_index=0)
    assert miss.status == "llm_error" and miss.error.startswith("cassette miss:")


def test_reasoning_model_settings_shape_the_request():
    """OpenAI's reasoning models take max_completion_tokens and only their default temperature."""
    sleeper = SleepRecorder()
    with FakeOpenAIServer([chat_reply(GOOD)]) as server:
        proposer = openai_proposer(server, sleeper, max_reply_tokens=4096,
                                   max_tokens_param="max_completion_tokens",
                                   send_temperature=False)
        assert propose(proposer, 0).status == "ok"
        request = server.requests[0]
    assert request["max_completion_tokens"] == 4096
    assert "max_tokens" not in request and "temperature" not in request


def test_fake_server_stops_by_itself():
    import time
    import urllib.request

    with FakeOpenAIServer([], lifetime_s=0.2) as server:
        url = f"{server.base_url}/chat/completions"
        time.sleep(0.5)
        with pytest.raises(OSError):  # connection refused: nothing listens any more
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}"), timeout=1.0)
