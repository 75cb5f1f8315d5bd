"""Live progress display: one tqdm bar per task (step, best speedup, statuses, tokens, cost)."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from live.proposers.base import Proposal

_SHORT = {"ok": "ok", "compile_error": "ce", "runtime_error": "re", "incorrect": "wrong",
          "timeout": "to", "llm_error": "llm", "no_code": "nocode", "not_applicable": "n/a",
          "rejected": "rej"}


@dataclass
class TaskStatus:
    """Running counts for one task."""

    counts: Counter = field(default_factory=Counter)
    tokens: int = 0
    cost_usd: float = 0.0

    def record(self, status: str, proposal: Proposal) -> None:
        self.counts[status] += 1
        self.tokens += proposal.prompt_tokens + proposal.completion_tokens
        self.cost_usd += proposal.cost_usd or 0.0

    def record_row(self, row: dict[str, Any]) -> None:
        """Count a step already in the trace (resume)."""
        self.counts[row["status"]] += 1
        self.tokens += int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)
        self.cost_usd += float(row.get("cost_usd") or 0.0)

    def describe(self) -> str:
        parts = [f"{_SHORT.get(k, k)}={v}" for k, v in sorted(self.counts.items())]
        if self.tokens:
            parts.append(f"tok={self.tokens}")
        if self.cost_usd:
            parts.append(f"${self.cost_usd:.3f}")
        return " ".join(parts)


class Progress:
    """Per-task bars; disabled (no output) when `enabled` is False."""

    def __init__(self, task_ids: list[str], steps: int, *, enabled: bool = True) -> None:
        self._lock = threading.Lock()
        self._bars: dict[str, tqdm] = {}
        self.enabled = enabled
        if not enabled:
            return
        width = max((len(t) for t in task_ids), default=4)
        for pos, task_id in enumerate(task_ids):
            self._bars[task_id] = tqdm(total=steps, desc=task_id.ljust(width), position=pos,
                                       leave=True, file=sys.stderr, dynamic_ncols=True,
                                       mininterval=0.5)

    def update(self, task_id: str, status: TaskStatus, *, step: int | None = None,
               best_ms: float | None = None, ref_ms: float | None = None,
               note: str | None = None, done: bool = False) -> None:
        if not self.enabled:
            return
        with self._lock:
            bar = self._bars[task_id]
            if step is not None:
                bar.n = step
            text = status.describe()
            if best_ms and ref_ms:
                text = f"best {ref_ms / best_ms:.2f}x " + text
            if note:
                text = f"{note} {text}"
            bar.set_postfix_str(text, refresh=False)
            bar.refresh()

    def close(self) -> None:
        with self._lock:
            for bar in self._bars.values():
                bar.close()
            self._bars.clear()
