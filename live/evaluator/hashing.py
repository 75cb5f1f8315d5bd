"""Content hash of a candidate's source: the ``kernel_id`` of traces, caches and the evaluator."""

from __future__ import annotations

import hashlib


def normalise_source(code: str) -> str:
    """Source with line endings unified, trailing whitespace and blank edge lines removed.

    Two candidates that differ only in such whitespace are the same kernel.
    """
    lines = [line.rstrip() for line in code.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n") + "\n"


def kernel_id(code: str) -> str:
    """sha256 of the normalised source, first 16 hex characters."""
    return hashlib.sha256(normalise_source(code).encode("utf-8")).hexdigest()[:16]
