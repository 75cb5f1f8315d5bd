"""``signature-reveals.jsonl``: when a live ``--profile reps`` run first showed the policy each
representative's Nsight Compute signature (docs/profiling-and-memory.md, NOTE D67).

One JSON object per line, written by the live runner as it happens: ``run_id``, ``task_id``,
``kernel_id``, ``asked_step`` (the step of T at which the policy first asked for the kernel's
signature) and ``shown_step`` (the first step at which it saw Nsight Compute's; before that it
saw the kernel's ``roofline_sig``). A representative asked for but never shown has no line.
Replay (`kbsim.envs.reveal`) and ``--resume`` (`live.runner.resume`) follow it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REVEALS_NAME = "signature-reveals.jsonl"


@dataclass(frozen=True)
class Reveal:
    """One kernel's first showing of its Nsight Compute signature."""

    run_id: str
    task_id: str
    kernel_id: str
    asked_step: int
    shown_step: int

    @property
    def delay_steps(self) -> int:
        return self.shown_step - self.asked_step


def read_reveals(path: str | Path) -> list[Reveal]:
    """The reveals of one file, in written order; a torn last line (a killed run) is skipped,
    and a kernel listed twice (a resumed run) keeps its first line."""
    out: list[Reveal] = []
    seen: set[tuple[str, str, str]] = set()
    lines = Path(path).read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            reveal = Reveal(str(row["run_id"]), str(row["task_id"]), str(row["kernel_id"]),
                            int(row["asked_step"]), int(row["shown_step"]))
        except (ValueError, KeyError, TypeError) as err:
            if number == len(lines):
                break  # written while the run was killed
            raise ValueError(f"{path}:{number}: not a signature reveal ({err})") from None
        if reveal.shown_step < reveal.asked_step:
            raise ValueError(f"{path}:{number}: shown_step {reveal.shown_step} is before "
                             f"asked_step {reveal.asked_step}")
        key = (reveal.run_id, reveal.task_id, reveal.kernel_id)
        if key not in seen:
            seen.add(key)
            out.append(reveal)
    return out


def load_reveals(paths: str | Path | Sequence[str | Path]) -> list[Reveal] | None:
    """The reveals of the trace dataset(s) at `paths`; None when none of them has the file
    (a run recorded without ``--profile reps``, or before the file existed)."""
    dirs = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    files = [d / REVEALS_NAME for d in dirs if (d / REVEALS_NAME).is_file()]
    if not files:
        return None
    return [r for f in files for r in read_reveals(f)]


def reveal_line(reveal: Reveal) -> str:
    """One line of the file (no newline)."""
    return json.dumps({"run_id": reveal.run_id, "task_id": reveal.task_id,
                       "kernel_id": reveal.kernel_id, "asked_step": reveal.asked_step,
                       "shown_step": reveal.shown_step})


def write_reveals(path: str | Path, reveals: Sequence[Reveal]) -> None:
    """Write `reveals` as a whole file (simulated recordings; the live runner appends)."""
    Path(path).write_text("".join(reveal_line(r) + "\n" for r in reveals))
