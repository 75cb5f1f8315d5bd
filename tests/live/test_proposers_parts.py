"""The openai proposer's parts: code extraction, config, prices, budget, Retry-After, prompts."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from kbsim.strategies import STRATEGIES
from live.proposers import Budget, make_proposer
from live.proposers.config import OpenAIConfig, redact_url, resolve_config
from live.proposers.extract import MAX_REPLY_CHARS, extract_code
from live.proposers.llm import backoff_s, parse_retry_after
from live.proposers.pricing import PriceTable
from live.proposers.prompting import build_messages, profile_in_words, runtime_in_words
from tests.live.proposer_fixtures import ADD_K0, ADD_TASK, MATMUL_TASK, parent_of

KERNEL = ADD_K0.strip()

# --- extraction ------------------------------------------------------------------------------

EXTRACTION_CASES = [
    # (reply, expected status, a substring of the code or of the error)
    (f"Sure.\n```python\n{KERNEL}\n```\nDone.", "ok", "def add("),
    (f"```py\n{KERNEL}\n```", "ok", "def add("),
    (f"```\n{KERNEL}\n```", "ok", "def add("),
    ("no code here, only words", "no_code", "no fenced code block"),
    ("", "no_code", "empty reply"),
    ("```python\ndef add(:\n```", "no_code", "parses"),
    ("```python\nx = 1\n```", "no_code", "entry function 'add'"),
    (f"<think>```python\ndef add(x, y, out):\n    pass\n```</think>\n```python\n{KERNEL}\n```",
     "ok", "add_kernel"),
    (f"Cut off by the token limit:\n```python\n{KERNEL}\n", "ok", "def add("),
    (f"{KERNEL}\n", "ok", "def add("),  # a bare module that parses and defines the entry
]


@pytest.mark.parametrize(("reply", "status", "needle"), EXTRACTION_CASES)
def test_extraction_table(reply, status, needle):
    result = extract_code(reply, "add")
    if status == "ok":
        assert result.error is None and needle in result.code
    else:
        assert result.code is None and needle in result.error


def test_extraction_prefers_python_blocks_with_the_entry_and_a_kernel():
    helper = "```python\ndef helper():\n    return 1\n```"
    shell = "```bash\npip install triton\n```"
    draft = "```python\ndef add(x, y, out):\n    out.copy_(x + y)\n```"
    reply = f"{shell}\n{helper}\n```python\n{KERNEL}\n```\n{draft}"
    assert "@triton.jit" in extract_code(reply, "add").code
    final = KERNEL.replace("num_warps=4", "num_warps=8")
    two = f"```python\n{KERNEL}\n```\nBetter:\n```python\n{final}\n```"
    assert "num_warps=8" in extract_code(two, "add").code  # the last of equals


def test_enormous_replies_are_cut_safely():
    reply = f"```python\n{KERNEL}\n```\n" + "x" * (MAX_REPLY_CHARS * 3)
    assert extract_code(reply, "add").code is not None
    runaway = "```python\n" + "a = 1\n" * MAX_REPLY_CHARS
    result = extract_code(runaway, "add")
    assert result.code is None and result.error


# --- config ---------------------------------------------------------------------------------


def test_config_precedence_flags_over_file_over_env(tmp_path):
    config_file = tmp_path / "llm.yaml"
    config_file.write_text("openai:\n  model: file-model\n  temperature: 0.2\n"
                           "  base_url: http://file:1/v1\n")
    env = {"OPENAI_API_KEY": "sk-env-key-123456", "OPENAI_BASE_URL": "http://env:2/v1",
           "OPENAI_MODEL": "env-model"}
    assert resolve_config({}, None, env).model == "env-model"
    from_file = resolve_config({}, config_file, env)
    assert (from_file.model, from_file.base_url, from_file.temperature) == (
        "file-model", "http://file:1/v1", 0.2)
    assert from_file.api_key == "sk-env-key-123456"
    flagged = resolve_config({"model": "flag-model", "temperature": None}, config_file, env)
    assert flagged.model == "flag-model" and flagged.temperature == 0.2


def test_api_key_from_a_named_variable_and_never_shown(tmp_path):
    config = resolve_config({"model": "m", "api_key_env": "DEEPSEEK_API_KEY"}, None,
                            {"DEEPSEEK_API_KEY": "sk-deep-secret-999", "OPENAI_API_KEY": "other"})
    assert config.api_key == "sk-deep-secret-999"
    assert "sk-deep-secret-999" not in repr(config)
    assert "sk-deep-secret-999" not in str(config.public_dict())


CONFIG_ERRORS = [
    ({}, {}, "needs a model name"),
    ({"model": "m", "temperature": 3.0}, {}, "temperature must be in"),
    ({"model": "m", "max_retries": -1}, {}, "max_retries must be"),
    ({"model": "m", "colour": "red"}, {}, "unknown openai option"),
]


@pytest.mark.parametrize(("options", "env", "message"), CONFIG_ERRORS)
def test_config_errors(options, env, message):
    with pytest.raises(ValueError, match=message):
        resolve_config(options, None, env)


def test_missing_key_without_a_custom_endpoint_is_an_error():
    with pytest.raises(ValueError, match="no API key: set OPENAI_API_KEY"):
        OpenAIConfig(model="gpt-4o").resolved_api_key()
    assert OpenAIConfig(model="m", base_url="http://localhost:8000/v1").resolved_api_key()


def test_unknown_config_file_setting_is_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": "m", "temprature": 0.1}')
    with pytest.raises(ValueError, match="unknown setting.*temprature"):
        resolve_config({}, bad, {})


def test_urls_lose_credentials_and_queries():
    assert redact_url("https://user:pw@host.example:8443/v1?key=abc") == "https://host.example:8443/v1"


def test_unknown_proposer_kind():
    with pytest.raises(ValueError, match="unknown proposer 'gpt'"):
        make_proposer("gpt")


# --- prices and budget ------------------------------------------------------------------------


def test_prices_exact_match_and_null_for_unknown(tmp_path, caplog):
    table = PriceTable.load()
    assert table.cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    with caplog.at_level("WARNING"):
        assert table.cost_usd("gpt-4o-mini-2099-01-01", 10, 10) is None
        assert table.cost_usd("gpt-4o-mini-2099-01-01", 10, 10) is None
    assert sum("no price for model" in r.message for r in caplog.records) == 1  # warned once
    override = tmp_path / "p.json"
    override.write_text('{"gpt-4o-mini": {"input_per_1m": 1.0, "output_per_1m": 1.0}}')
    assert PriceTable.load(override).cost_usd("gpt-4o-mini", 500_000, 500_000) == 1.0


def test_bad_price_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("my-model: {input: 1.0}\n")
    with pytest.raises(ValueError, match="input_per_1m and output_per_1m"):
        PriceTable.load(bad)


def test_budget_limits_and_snapshot():
    budget = Budget(max_cost_usd=1.0, max_tokens=1000)
    assert budget.exhausted() is None
    budget.charge(400, 0.5)
    budget.charge(100, None)
    assert budget.exhausted() is None
    budget.charge(10, 0.6)
    assert "max-cost" in budget.exhausted()
    assert budget.snapshot()["unpriced_requests"] == 1
    with pytest.raises(ValueError):
        Budget(max_tokens=-1)


# --- retries -----------------------------------------------------------------------------------


def test_retry_after_forms():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(7.0)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_is_capped_and_seeded():
    waits = [backoff_s(a, 1.0, 10.0, random.Random("s")) for a in range(6)]
    assert 0.5 <= waits[0] <= 1.0 and 4.0 <= waits[3] <= 8.0 and 5.0 <= waits[5] <= 10.0
    assert waits == [backoff_s(a, 1.0, 10.0, random.Random("s")) for a in range(6)]


# --- prompts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_has_its_own_prompt(strategy):
    system, user = build_messages(MATMUL_TASK, parent_of(MATMUL_TASK), strategy)
    assert system["role"] == "system" and "```python" in system["content"]
    text = user["content"]
    assert f"Strategy to apply: {strategy}" in text
    assert "def matmul(a, b, c)" in MATMUL_TASK.k0 and "`matmul(a, b, c)`" in text
    assert "destination-passing" in text
    assert "1.5 ms" in text and "speedup 0.80x" in text
    assert "DRAM throughput 88% of peak: memory-bound; SM 31%; L2 40%" in text
    assert "32 registers/thread" in text and "$" not in text.replace("$$", "")
    others = [s for s in STRATEGIES if s != strategy]
    assert all(f"Strategy to apply: {o}" not in text for o in others)


def test_profile_and_runtime_words():
    assert profile_in_words({}).startswith("not profiled")
    assert "compute-bound" in profile_in_words({"sm_pct": 90, "dram_pct": 20})
    assert "latency-bound" in profile_in_words({"sm_pct": 10, "dram_pct": 12, "l2_pct": 5})
    assert "achieved occupancy 45%" in profile_in_words(
        {"sm_pct": 50, "dram_pct": 50, "achieved_occupancy_pct": 45.0})
    assert runtime_in_words(None, 1.0) == "not measured."


def test_prompt_dir_overrides_a_template(tmp_path):
    (tmp_path / "tiling.txt").write_text("Use bigger tiles, always.")
    _, user = build_messages(ADD_TASK, parent_of(ADD_TASK), "tiling", prompt_dir=tmp_path)
    assert "Use bigger tiles, always." in user["content"]


def test_extraction_never_raises_on_arbitrary_replies():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pieces = st.sampled_from(["```", "```python\n", "```py\n", "\n```\n", "<think>", "</think>",
                              "def add(x, y, out):\n    pass\n", "@triton.jit\n", "x = (",
                              "\n", "    ", "~~~\n", "text "])

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(st.lists(st.one_of(pieces, st.text(max_size=20)), max_size=30))
    def check(parts):
        result = extract_code("".join(parts), "add")
        assert (result.code is None) != (result.error is None)
        if result.code is not None:
            assert "def add" in result.code

    check()
