"""Configuration of the ``openai`` proposer: flags > config file (YAML/JSON) > environment.

Environment: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` (and ``OPENAI_MODEL`` for the model). A
config file may name another variable to read the key from (``api_key_env: DEEPSEEK_API_KEY``) so
keys never need to sit in files. The key is never part of ``public_dict()`` (what manifests,
cassettes and logs see) nor of ``repr``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

#: stands in for the key of local servers (vLLM, SGLang, Ollama) that ignore it; the SDK needs one
NO_KEY_PLACEHOLDER = "sk-no-key-needed"


@dataclass(frozen=True)
class OpenAIConfig:
    """Everything the ``openai`` proposer needs. Times in seconds, money in USD."""

    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.7
    #: sent with each request as ``max_tokens_param`` (None: the server's default)
    max_reply_tokens: int | None = None
    #: ``max_completion_tokens`` for OpenAI's reasoning models (o1, o3, o4-mini...)
    max_tokens_param: str = "max_tokens"
    #: False omits ``temperature`` from requests (reasoning models accept only their default);
    #: cassette keys still carry ``temperature``
    send_temperature: bool = True
    #: per-request timeout
    timeout_s: float = 180.0
    #: retries after the first attempt, on 408/409/429/5xx, timeouts and connection errors
    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    #: also send a ``seed`` derived from (seed, sample_index) (vLLM and OpenAI honour it)
    send_seed: bool = False
    price_file: str | None = None
    prompt_dir: str | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the openai proposer needs a model name (--model or OPENAI_MODEL)")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.timeout_s <= 0 or self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise ValueError("timeout_s must be > 0 and backoff times >= 0")
        if self.max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_param must be max_tokens or max_completion_tokens, "
                             f"got {self.max_tokens_param!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")

    def public_dict(self) -> dict[str, Any]:
        """Plain data without the key (and without credentials embedded in the URL)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api_key"}
        data["base_url"] = redact_url(self.base_url)
        return data

    def resolved_api_key(self) -> str:
        """The key to send; a placeholder for a custom endpoint without one."""
        if self.api_key:
            return self.api_key
        if self.base_url:
            return NO_KEY_PLACEHOLDER
        raise ValueError(
            f"no API key: set {self.api_key_env} (or pass --base-url for a local server "
            "that needs none)"
        )


def redact_url(url: str | None) -> str | None:
    """Drop user:password@ and the query string from a URL."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


_FIELD_NAMES = {f.name for f in fields(OpenAIConfig)}


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Mapping of OpenAIConfig fields from a YAML or JSON file (optionally under ``openai:``)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if raw is None:
        return {}
    if isinstance(raw, dict) and isinstance(raw.get("openai"), dict):
        raw = raw["openai"]
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping of settings")
    unknown = sorted(set(raw) - _FIELD_NAMES)
    if unknown:
        raise ValueError(
            f"{path}: unknown setting(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_FIELD_NAMES))}"
        )
    return dict(raw)


def resolve_config(
    options: Mapping[str, Any] | None = None,
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> OpenAIConfig:
    """Merge defaults < environment < config file < explicit options (None means unset)."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    file_values = read_config_file(config_file) if config_file else {}
    explicit = {k: v for k, v in (options or {}).items() if v is not None}
    unknown = sorted(set(explicit) - _FIELD_NAMES)
    if unknown:
        raise ValueError(f"unknown openai option(s): {', '.join(unknown)}")
    key_env = explicit.get("api_key_env") or file_values.get("api_key_env") or "OPENAI_API_KEY"
    if env.get("OPENAI_BASE_URL"):
        merged["base_url"] = env["OPENAI_BASE_URL"]
    if env.get("OPENAI_MODEL"):
        merged["model"] = env["OPENAI_MODEL"]
    if env.get(key_env):
        merged["api_key"] = env[key_env]
    merged.update(file_values)
    merged.update(explicit)
    merged["api_key_env"] = key_env
    if "model" not in merged:
        raise ValueError("the openai proposer needs a model name (--model or OPENAI_MODEL)")
    return OpenAIConfig(**merged)


def with_overrides(config: OpenAIConfig, **changes: Any) -> OpenAIConfig:
    return replace(config, **{k: v for k, v in changes.items() if v is not None})
