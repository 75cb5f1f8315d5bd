"""`TaskFindings`: what a task source found out about one task's perf shapes, apart from the task.

A ``Task`` (`live.tasks.base`) is the definition: what to compute, on which shapes, against which
reference. What a source learned at load time (the gold check's per-shape verdicts and peak
memory, NOTE D73) and its rules for how much of a task to check and time (NOTE D74, D78) are
this record. The loading process keeps one per task (``Loaded.findings``); the evaluator sends
it to its worker with each request (``EvaluateRequest.findings``), whose rebuilt task never had
it, and the memory plan reads it (``live.evaluator.memory_plan``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from live.tasks.base import ShapeVerdict


@dataclass(frozen=True)
class TaskFindings:
    """One task's findings; the default (no verdicts, no limits) is a task checked and timed on
    every shape.

    Attributes:
        shape_verdicts: per perf-shape index, what the load-time gold check found there
            (``ShapeVerdict``): ``dropped`` (neither checked nor timed: the gold code runs out
            of memory on this card or faults on it) or ``unchecked`` (timed, not compared: the
            gold code disagrees with itself there). Shapes without a verdict are checked and
            timed. NOTE (D73).
        shape_bytes: optional bytes of each perf shape's inputs (for choosing the timed ones,
            and the shapes a dropped one takes with it).
        max_timed_shapes: time at most this many perf shapes, the largest by ``shape_bytes``
            (None: every kept shape). NOTE (D74).
        max_checked_shapes: check a candidate on at most this many perf shapes: the timed ones
            and the smallest (None: every kept shape; a load-time gold check checks all).
        measured_peak_bytes: per perf-shape index, the device bytes its load-time check peaked
            at (the memory plan's figure for tasks it cannot estimate under fake tensors).
        max_check_share: the most of the card's usable memory one live check may need; larger
            perf shapes are left out of live checks with a note (None: every shape that fits).
            NOTE (D78).
    """

    shape_verdicts: dict[int, ShapeVerdict] = field(default_factory=dict)
    shape_bytes: tuple[int, ...] | None = None
    max_timed_shapes: int | None = None
    max_checked_shapes: int | None = None
    measured_peak_bytes: dict[int, int] = field(default_factory=dict)
    max_check_share: float | None = None

    def shapes_with(self, kind: str) -> list[int]:
        """Perf-shape indices whose verdict is `kind` (``dropped`` or ``unchecked``)."""
        return sorted(i for i, v in self.shape_verdicts.items() if v.kind == kind)

    def shape_notes(self) -> list[str]:
        """One line per perf shape with a verdict, for summaries and manifests."""
        return [f"perf shape {i} {v.kind}: {v.reason}"
                for i, v in sorted(self.shape_verdicts.items())]


#: a task without findings: every shape checked and timed
NO_FINDINGS = TaskFindings()
