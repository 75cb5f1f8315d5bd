"""Paths a task spec names, as a worker finds them."""

from __future__ import annotations

import os
from pathlib import Path


def launched(path: Path) -> Path:
    """`path`, or, if relative and absent, the same from the launching shell's directory (a
    worker runs in a temporary directory and inherits ``$PWD``)."""
    if not path.is_absolute() and not path.exists():
        launched_from = os.environ.get("PWD")
        if launched_from and (Path(launched_from) / path).exists():
            return Path(launched_from) / path
    return path
