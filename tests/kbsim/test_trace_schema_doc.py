"""traces/SCHEMA.md describes every column of schema v1 and every status."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbsim.trace.schema import KERNELS_SCHEMA, MANIFEST_KEYS, STATUSES, STEPS_SCHEMA

DOC = (Path(__file__).resolve().parents[2] / "traces" / "SCHEMA.md").read_text()


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end >= 0 else None]


@pytest.mark.parametrize(
    ("title", "names"),
    [
        ("steps", STEPS_SCHEMA.names),
        ("kernels", KERNELS_SCHEMA.names),
        ("manifest.json", MANIFEST_KEYS),
        ("steps", STATUSES),
    ],
)
def test_every_name_is_documented_in_its_section(title: str, names: list[str]) -> None:
    section = _section(title)
    missing = [name for name in names if f"`{name}`" not in section]
    assert missing == [], f"traces/SCHEMA.md section {title!r} does not mention {missing}"
