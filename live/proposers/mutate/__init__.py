"""The ``mutate`` proposer: LLM-free, seeded rewrites of the parent's Triton source by AST edits.

For (seed, sample_index, strategy, parent code) it lists the strategy's applicable edits
(``transforms``), picks one (or up to ``max_edits`` on distinct targets) with a
``random.Random`` seeded from those four, applies them and emits the module with
``ast.unparse`` (comments and formatting of the parent are not kept). Same inputs, same code.
Statuses: ``ok``; ``not_applicable`` when the source does not parse or the strategy has nothing
to change (fusion always). It is the offline proposer for tests and for collecting traces on real
hardware without an API key.
"""

from __future__ import annotations

import ast
import hashlib
import random
import time
from typing import Any

from kbsim.strategies import strategy_index
from live.proposers.base import ParentInfo, Proposal
from live.proposers.mutate.transforms import EDITS_BY_STRATEGY, NOT_APPLICABLE_REASON, Edit
from live.pyast import parse
from live.tasks.base import Task

__all__ = ["MutateProposer", "mutate_source"]


def _rng(code: str, strategy: str, seed: int, sample_index: int) -> random.Random:
    digest = hashlib.sha256(code.encode("utf-8")).hexdigest()[:16]
    return random.Random(f"kernelband-mutate:{seed}:{sample_index}:{strategy}:{digest}")


def mutate_source(
    code: str, strategy: str, *, seed: int, sample_index: int, max_edits: int = 1
) -> tuple[str | None, str]:
    """(new code, what changed) or (None, why nothing could change)."""
    strategy_index(strategy)  # a clear error for an unknown strategy
    try:
        baseline = ast.unparse(parse(code))
        tree = parse(code)
    except (SyntaxError, ValueError) as exc:
        return None, f"parent does not parse: {exc}"
    edits: list[Edit] = EDITS_BY_STRATEGY[strategy](tree)
    if not edits:
        return None, NOT_APPLICABLE_REASON[strategy]
    rng = _rng(code, strategy, seed, sample_index)
    targets = sorted({edit.target for edit in edits}, key=repr)
    n_edits = rng.randint(1, max(1, min(max_edits, len(targets))))
    rng.shuffle(targets)
    used: set = set()
    applied = []
    for target in targets:
        if len(applied) == n_edits:
            break
        options = [e for e in edits if e.target == target and not used.intersection(e.targets)]
        if not options:
            continue
        edit = options[rng.randrange(len(options))]
        edit.apply()
        used.update(edit.targets)
        applied.append(edit.description)
    ast.fix_missing_locations(tree)
    new_code = ast.unparse(tree) + "\n"
    if new_code.strip() == baseline.strip():
        return None, f"{strategy}: the chosen edit changed nothing"
    return new_code, f"{strategy}: " + "; ".join(applied)


class MutateProposer:
    """Proposer ``mutate``; ``max_edits`` edits at most per proposal (distinct targets)."""

    name = "mutate"

    def __init__(self, max_edits: int = 1) -> None:
        if max_edits < 1:
            raise ValueError(f"max_edits must be >= 1, got {max_edits}")
        self.max_edits = max_edits

    def describe(self) -> dict[str, Any]:
        return {"kind": self.name, "model": None, "temperature": None, "max_edits": self.max_edits}

    def propose(
        self, task: Task, parent: ParentInfo, strategy: str, *, seed: int, sample_index: int
    ) -> Proposal:
        start = time.perf_counter()
        code, detail = mutate_source(
            parent.code, strategy, seed=seed, sample_index=sample_index, max_edits=self.max_edits
        )
        latency_s = time.perf_counter() - start
        if code is None:
            return Proposal(status="not_applicable", code=None, error=detail,
                            latency_s=latency_s, cost_usd=0.0, detail=detail)
        return Proposal(status="ok", code=code, latency_s=latency_s, cost_usd=0.0, detail=detail)
