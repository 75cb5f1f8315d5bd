"""A spending limit shared by every proposer of a run (``--max-cost``, ``--max-tokens``).

A proposer asks ``exhausted()`` before each LLM request and refuses (status ``llm_error``,
"budget exhausted") once a limit is reached; after a reply it ``charge``s what was spent. The
check happens before a request and the charge after, so a run can overshoot a limit by at most
the requests in flight (one per worker).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Budget:
    """Limits (None: unlimited) and what has been spent so far."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    spent_cost_usd: float = 0.0
    spent_tokens: int = 0
    #: requests whose cost was unknown (model without a price): their tokens still count
    unpriced_requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ValueError(f"max_cost_usd must be >= 0, got {self.max_cost_usd}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")

    def exhausted(self) -> str | None:
        """None while there is budget left; otherwise the reason, in words."""
        with self._lock:
            if self.max_cost_usd is not None and self.spent_cost_usd >= self.max_cost_usd:
                return (
                    f"budget exhausted: spent ${self.spent_cost_usd:.4f} of "
                    f"--max-cost ${self.max_cost_usd:.4f}"
                )
            if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
                return (
                    f"budget exhausted: spent {self.spent_tokens} tokens of "
                    f"--max-tokens {self.max_tokens}"
                )
            return None

    def charge(self, tokens: int, cost_usd: float | None) -> None:
        with self._lock:
            self.spent_tokens += int(tokens)
            if cost_usd is None:
                self.unpriced_requests += 1
            else:
                self.spent_cost_usd += float(cost_usd)

    def snapshot(self) -> dict[str, float | int | None]:
        """Plain data for manifests and logs."""
        with self._lock:
            return {
                "max_cost_usd": self.max_cost_usd,
                "max_tokens": self.max_tokens,
                "spent_cost_usd": self.spent_cost_usd,
                "spent_tokens": self.spent_tokens,
                "unpriced_requests": self.unpriced_requests,
            }
