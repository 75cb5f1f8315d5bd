"""One chat exchange with an OpenAI-compatible endpoint, with explicit retries.

The SDK's own retries are off (``max_retries=0``); this module retries 408/409/429/5xx replies,
timeouts and connection errors with exponential backoff and jitter drawn from a seeded RNG
(seeded by the request's seed and sample index), honouring ``Retry-After`` / ``retry-after-ms``
(capped at ``backoff_max_s``). Any other HTTP error fails at once. Every outcome is a
``ChatReply`` value; nothing raises for a failed exchange.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from live.proposers.config import OpenAIConfig

#: error messages are cut to this many characters
MAX_ERROR_CHARS = 500
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True)
class ChatRequest:
    """What identifies one exchange (the cassette key is a hash of the first four fields)."""

    model: str
    messages: tuple[dict[str, str], ...]
    temperature: float
    sample_index: int
    seed: int = 0
    max_reply_tokens: int | None = None
    #: what a cassette keys on instead of ``messages``, when set: the same prompt rendered
    #: without the parent's measurements (see ``LLMProposer``); never sent
    key_messages: tuple[dict[str, str], ...] | None = None


@dataclass(frozen=True)
class ChatReply:
    """``text`` on success, else ``error``; tokens from the server's ``usage`` (0 if absent)."""

    text: str | None
    error: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    finish_reason: str | None = None
    #: one entry per failed attempt: "429 (waited 1.00 s)", "timeout (waited 0.52 s)", ...
    history: tuple[str, ...] = field(default_factory=tuple)


class MalformedReply(Exception):
    """A 2xx reply whose body is not a chat completion (truncated, HTML, plain text)."""


class ChatClient(Protocol):
    def complete(self, request: ChatRequest) -> ChatReply: ...


def parse_retry_after(headers: Any, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def backoff_s(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Equal-jitter exponential backoff: half of min(max, base·2^attempt) plus a uniform half."""
    cap = min(max_s, base_s * (2.0**attempt))
    return cap / 2.0 + rng.uniform(0.0, cap / 2.0)


def _redact(text: str, secret: str | None) -> str:
    if secret and len(secret) >= 8:
        text = text.replace(secret, "***")
    return text[:MAX_ERROR_CHARS]


class OpenAIChatClient:
    """Chat Completions through the ``openai`` SDK against any compatible endpoint."""

    def __init__(
        self,
        config: OpenAIConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        import openai  # lazy: only the live path needs the SDK

        self._openai = openai
        self.config = config
        self._key = config.resolved_api_key()
        self._client = openai.OpenAI(
            api_key=self._key,
            base_url=config.base_url,
            max_retries=0,
            timeout=config.timeout_s,
        )
        self._sleep = sleep
        self._clock = clock

    def _classify(self, exc: Exception) -> tuple[bool, str, float | None]:
        """(retryable, short description, server-requested wait in s)."""
        oa = self._openai
        # a 200 whose body is cut short or not JSON (a proxy's error page) is transient
        if isinstance(exc, (MalformedReply, json.JSONDecodeError, oa.APIResponseValidationError)):
            return True, f"malformed reply: {exc}", None
        if isinstance(exc, oa.APITimeoutError):
            return True, f"timeout after {self.config.timeout_s:g} s", None
        if isinstance(exc, oa.APIConnectionError):
            return True, f"connection error: {exc}", None
        if isinstance(exc, oa.APIStatusError):
            status = exc.status_code
            wait = parse_retry_after(getattr(exc.response, "headers", None))
            message = getattr(exc, "message", None) or str(exc)
            message = re.sub(r"^Error code: \d+ - ", "", message)  # the SDK's prefix
            return status in RETRYABLE_STATUS, f"HTTP {status}: {message}", wait
        return False, f"{type(exc).__name__}: {exc}", None

    def complete(self, request: ChatRequest) -> ChatReply:
        cfg = self.config
        rng = random.Random(f"kernelband-backoff:{request.seed}:{request.sample_index}")
        kwargs: dict[str, Any] = {"model": request.model, "messages": list(request.messages)}
        if cfg.send_temperature:
            kwargs["temperature"] = request.temperature
        if request.max_reply_tokens is not None:
            kwargs[cfg.max_tokens_param] = request.max_reply_tokens
        if cfg.send_seed:
            kwargs["seed"] = (request.seed * 1_000_003 + request.sample_index) % (2**31)
        history: list[str] = []
        start = self._clock()
        for attempt in range(cfg.max_retries + 1):
            try:
                response = self._client.chat.completions.create(**kwargs)
                if not hasattr(response, "choices"):  # the SDK hands back non-JSON bodies as text
                    raise MalformedReply(f"not a chat completion: {str(response)[:80]!r}")
            except Exception as exc:  # every failure becomes a value below
                retryable, what, server_wait = self._classify(exc)
                what = _redact(what, self._key)
                if not retryable or attempt == cfg.max_retries:
                    suffix = "" if not retryable else f" (gave up after {attempt + 1} attempts)"
                    return ChatReply(
                        text=None,
                        error=what + suffix,
                        latency_s=self._clock() - start,
                        attempts=attempt + 1,
                        history=tuple(history),
                    )
                wait = backoff_s(attempt, cfg.backoff_base_s, cfg.backoff_max_s, rng)
                if server_wait is not None:
                    wait = min(server_wait, cfg.backoff_max_s)
                history.append(f"{what.split(':')[0]} (waited {wait:.2f} s)")
                self._sleep(wait)
                continue
            return _reply_from_response(response, start, self._clock(), attempt + 1, history)
        raise AssertionError("unreachable")  # the loop always returns


def _reply_from_response(
    response: Any, start: float, end: float, attempts: int, history: list[str]
) -> ChatReply:
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0) if usage else 0
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0) if usage else 0
    choices = getattr(response, "choices", None) or []
    if not choices:
        return ChatReply(
            text=None,
            error="reply has no choices",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=end - start,
            attempts=attempts,
            history=tuple(history),
        )
    choice = choices[0]
    text = getattr(choice.message, "content", None) or ""
    return ChatReply(
        text=text,
        error=None,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        latency_s=end - start,
        attempts=attempts,
        finish_reason=getattr(choice, "finish_reason", None),
        history=tuple(history),
    )
