"""Record every LLM exchange to a JSONL file, and serve a recorded file back without a network.

Each line is one exchange, keyed by ``sha256`` of the canonical JSON of (model, messages,
temperature, sample_index), where messages are the request's ``key_messages`` when set (the
proposer's prompt rendered without the parent's measurements) and the numbers in their prose are
masked (measurements differ between runs and machines; see `_stable_text`). Recording appends
and flushes one line per exchange (a killed run loses at most the exchange in flight); failures
are recorded too (``error``), so a replay reproduces the recorded run's proposals exactly: text,
tokens, latency and errors. The API key is never part of a line (requests carry none).

Replay never calls anything: a key that is not in the file raises ``CassetteMiss`` inside the
client; the proposer turns it into status ``llm_error`` with the message (``on_miss="error"``,
the default, so a replay that diverges keeps going and the trace shows where) or lets it abort the
run (``on_miss="abort"``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live.proposers.llm import ChatClient, ChatReply, ChatRequest

log = logging.getLogger(__name__)

CASSETTE_FORMAT = 1
MODES = ("record", "replay")
ON_MISS = ("error", "abort")


class CassetteMiss(LookupError):
    """A replayed request that the cassette does not hold."""


_FENCE = re.compile(r"(```.*?```)", re.DOTALL)
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _stable_text(text: str) -> str:
    """`text` with every number outside fenced code blocks replaced by ``#``.

    NOTE (D5): the prose of a prompt carries measurements (the parent's runtime, its profile,
    its register count) that differ between runs and machines; a cassette keyed on them could
    never replay a run on other hardware, which is what cassettes are for. Code is kept as is:
    a different parent kernel is a different request."""
    parts = _FENCE.split(text)
    return "".join(p if p.startswith("```") else _NUMBER.sub("#", p) for p in parts)


def _stable_messages(messages: Any) -> list[Any]:
    out = []
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("content"), str):
            message = {**message, "content": _stable_text(message["content"])}
        out.append(message)
    return out


def cassette_key(model: str, messages: Any, temperature: float, sample_index: int) -> str:
    payload = json.dumps(
        {"model": model, "messages": _stable_messages(messages),
         "temperature": float(temperature), "sample_index": int(sample_index)},
        sort_keys=True, ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def request_key(request: ChatRequest) -> str:
    messages = request.key_messages if request.key_messages is not None else request.messages
    return cassette_key(request.model, messages, request.temperature, request.sample_index)


def read_cassette(path: str | Path) -> dict[str, dict[str, Any]]:
    """key -> record; the last record of a key wins. A torn last line (killed writer) is skipped
    with a warning; any other bad line is an error naming the line."""
    path = Path(path)
    records: dict[str, dict[str, Any]] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                log.warning("%s: skipping a torn last line (%s)", path, exc)
                continue
            raise ValueError(f"{path}:{number}: not a JSON line ({exc})") from None
        if not isinstance(record, dict) or "key" not in record or "reply" not in record:
            raise ValueError(f"{path}:{number}: not a cassette record (needs 'key' and 'reply')")
        records[record["key"]] = record
    return records


def _reply_to_dict(reply: ChatReply) -> dict[str, Any]:
    return {
        "text": reply.text,
        "error": reply.error,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "latency_s": reply.latency_s,
        "attempts": reply.attempts,
        "finish_reason": reply.finish_reason,
        "history": list(reply.history),
    }


def _reply_from_dict(data: dict[str, Any]) -> ChatReply:
    return ChatReply(
        text=data.get("text"),
        error=data.get("error"),
        prompt_tokens=int(data.get("prompt_tokens") or 0),
        completion_tokens=int(data.get("completion_tokens") or 0),
        latency_s=float(data.get("latency_s") or 0.0),
        attempts=0,  # nothing was sent during replay
        finish_reason=data.get("finish_reason"),
        history=(),
    )


@dataclass
class CassetteStats:
    hits: int = 0
    misses: int = 0
    recorded: int = 0


class CassetteClient:
    """A ``ChatClient`` that records what ``inner`` answers, or replays a file."""

    def __init__(self, path: str | Path, mode: str, inner: ChatClient | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"cassette mode must be one of {MODES}, got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self.inner = inner
        self.stats = CassetteStats()
        self._lock = threading.Lock()
        if mode == "record":
            if inner is None:
                raise ValueError("recording a cassette needs a client to record from")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._records: dict[str, dict[str, Any]] = {}
        else:
            if not self.path.is_file():
                raise FileNotFoundError(f"cassette {self.path} does not exist")
            self._records = read_cassette(self.path)

    def models(self) -> list[str]:
        return sorted({str(r.get("model")) for r in self._records.values()})

    def temperatures(self) -> list[float]:
        return sorted({float(r.get("temperature", 0.0)) for r in self._records.values()})

    def complete(self, request: ChatRequest) -> ChatReply:
        key = request_key(request)
        if self.mode == "replay":
            record = self._records.get(key)
            if record is None:
                self.stats.misses += 1
                raise CassetteMiss(
                    f"cassette miss: {self.path} holds no exchange for model={request.model!r}, "
                    f"temperature={request.temperature}, sample_index={request.sample_index} "
                    f"(key {key[:16]}); the prompt differs from the recorded run's, or the run "
                    "went further. Record it with --cassette FILE --record."
                )
            self.stats.hits += 1
            return _reply_from_dict(record["reply"])
        assert self.inner is not None
        reply = self.inner.complete(request)
        record = {
            "format": CASSETTE_FORMAT,
            "key": key,
            "model": request.model,
            "temperature": request.temperature,
            "sample_index": request.sample_index,
            "messages": list(request.messages),
            "reply": _reply_to_dict(reply),
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            self._records[key] = record
            self.stats.recorded += 1
        return reply
