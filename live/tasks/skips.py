"""What a task source could not load, as data: one ``Skipped`` per task, one reason each.

Format-independent: the TritonBench-G adapter fills it today, the next benchmark format reuses
it. ``skip_table`` renders the table ``kernelband tasks list|check`` ends with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Skipped:
    """One task a source skipped.

    Attributes:
        op: the task's name within its source (a TritonBench operator: ``add``).
        reason: one sentence, why it was skipped.
        plain_script: whether the task also fails when run the benchmark's own way (a plain
            script): ``"passes"``, ``"fails: <why>"``, or None when it was not run.
        hollow: where the plain script passes, why that pass proves nothing, when it was
            looked for (``kernelband tasks check --explain-skips``: compute-sanitizer's
            findings), else None.
    """

    op: str
    reason: str
    plain_script: str | None = None
    hollow: str | None = None

    @property
    def pair(self) -> tuple[str, str]:
        """``(op, reason)``, the reason followed by the plain-script outcome when known."""
        if self.plain_script is None:
            return self.op, self.reason
        return self.op, f"{self.reason} [as a plain script: {self.plain_script}]"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Loaded:
    """What a source's ``load`` returns: the tasks, what it skipped, and how it went."""

    tasks: list[Any]
    skipped: list[Skipped] = field(default_factory=list)
    #: e.g. {"checked": 12, "cached": 172, "seconds": 3.1}; empty for sources without checks
    stats: dict[str, Any] = field(default_factory=dict)
    #: each task's ``TaskFindings`` by task name (`live.tasks.findings`); a task without an
    #: entry has none (every shape checked and timed)
    findings: dict[str, Any] = field(default_factory=dict)

    def findings_of(self, name: str) -> Any:
        """Task `name`'s ``TaskFindings`` (``NO_FINDINGS`` without an entry)."""
        from live.tasks.findings import NO_FINDINGS

        return self.findings.get(name, NO_FINDINGS)

    @property
    def skipped_pairs(self) -> list[tuple[str, str]]:
        return [s.pair for s in self.skipped]


def hollow_pass_reason(sentence: str) -> str:
    """The skip reason of a task whose gold check passes while a tool that checks every memory
    access finds errors in its gold code (`sentence`: what it found, e.g. compute-sanitizer's
    findings from ``live.tasks.tritonbench.sanitize``)."""
    return f"its gold check passes, but hollowly: {sentence}"


def skip_table(skipped: Sequence[Skipped], width: int = 100) -> list[str]:
    """Lines of a table: operator, plain-script outcome, reason (cut to fit `width`)."""
    if not skipped:
        return []
    op_w = max(len("operator"), *(len(s.op) for s in skipped))
    plain = [_plain_label(s.plain_script) for s in skipped]
    plain_w = max(len("plain script"), *(len(p) for p in plain))
    reason_w = max(20, width - op_w - plain_w - 4)
    lines = [f"{'operator':<{op_w}}  {'plain script':<{plain_w}}  reason"]
    for s, label in zip(skipped, plain, strict=True):
        reason = " ".join(s.reason.split())
        if len(reason) > reason_w:
            reason = reason[: reason_w - 1] + "…"
        lines.append(f"{s.op:<{op_w}}  {label:<{plain_w}}  {reason}")
    return lines


def _plain_label(outcome: str | None) -> str:
    if outcome is None:
        return "not run"
    return "fails too" if outcome.startswith("fails") else outcome
