"""The project speaks of itself only: docs, code and data describe the product, in any tracked
file, never the circumstances of its making (`PLACE_WORDS` holds the patterns that say so).

Run as a script to list every hit: ``python tests/test_project_words.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PLACE_WORDS: dict[str, str] = {
    "a work-period label": r"(?<!--)\b[Ss]essions? \d+\b|\b[Ss]ession-\d+\b",
    "a work period": r"\b[Ww]ork[- ]periods?\b",
    "a lent or borrowed machine": r"\b[Ll]ent\b|\b[Bb]orrowed\b|\bwarm machine\b",
    "the machine time budget": r"\b[Dd]evice[- ]time\b|\b(?:GPU|[Dd]evice|[Mm]achine) budget\b"
                               r"|\bBUDGET(?:_S)?\b",
    "an assumed output variable": r"\$\{?OUT\b",
    "a stop label": r"\b[Ss]top[- ]\d+\b",
    "a tool of the place": r"\b(?:give_back|budget_left_s|files_fetch|files_at|needs_h200"
                           r"|nvidia-h[12]00-x\d)\b",
}
PATTERN = re.compile("|".join(f"(?:{p})" for p in PLACE_WORDS.values()))

#: files being rewritten elsewhere; each leaves this list once its wording is clean
PENDING: tuple[str, ...] = ()
SELF = "tests/test_project_words.py"


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [name for name in out.decode().split("\0") if name]


def hits(names: list[str]) -> list[str]:
    """`path:line: text` for every line of a text file that holds a place word."""
    found = []
    for name in names:
        if name == SELF or name.startswith(PENDING):
            continue
        try:
            text = (ROOT / name).read_bytes()
        except OSError:
            continue
        if b"\0" in text[:8192]:
            continue  # binary: Parquet, images
        for number, line in enumerate(text.decode("utf-8", "replace").splitlines(), 1):
            match = PATTERN.search(line)
            if match:
                found.append(f"{name}:{number}: {match.group(0)!r} in {line.strip()[:120]}")
    return found


@pytest.mark.parametrize(("words", "text"), [
    ("a work-period label", "session 33"),
    ("a work period", "work period"),
    ("a lent or borrowed machine", "lent"),
    ("the machine time budget", "device time"),
    ("the machine time budget", ': "${BUDGET:=540}"'),
    ("an assumed output variable", '"$OUT/run.txt"'),
    ("a stop label", "stop 32"),
    ("a tool of the place", "nvidia-h200-x2"),
])
def test_each_place_word_is_caught(words: str, text: str):
    assert re.search(PLACE_WORDS[words], text)


@pytest.mark.parametrize("text", [
    "kernelband traces profile DIR --sessions 2",
    "one Nsight Compute session per batch",
    "the wall-clock budget (--max-wall)",
    "budget=budget",
    "a Budget shared by the run",
    'out_dir=$1; tee "$out_dir/run.txt"',
    "--on-exhaust stop",
])
def test_product_words_pass(text: str):
    assert PATTERN.search(text) is None


def test_no_place_words_in_tracked_files():
    names = tracked_files()
    if not names:
        pytest.skip("not a git checkout")
    assert hits(names) == []


if __name__ == "__main__":
    listed = hits(tracked_files())
    print("\n".join(listed) or "no place words")
    sys.exit(1 if listed else 0)
