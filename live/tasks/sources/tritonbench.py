"""``tritonbench:PATH``: a TritonBench-G checkout (see ``live.tasks.tritonbench``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from live.tasks.skips import Loaded


def folder(arg: str) -> Path:
    """The checkout named by `arg`; a relative path is tried from the launching shell's
    directory too (a worker runs in a temp dir, and inherits ``$PWD``)."""
    path = Path(arg).expanduser()
    if not path.is_absolute() and not path.exists():
        launched_from = os.environ.get("PWD")
        if launched_from and (Path(launched_from) / path).exists():
            return Path(launched_from) / path
    return path


def canonical(arg: str) -> str:
    return str(folder(arg).resolve())


def load(arg: str, options: Any = None) -> Loaded:
    from live.tasks.tritonbench import load_checked

    return load_checked(folder(arg), options)


def rebuild(arg: str, name: str) -> Any:
    from live.tasks.tritonbench import tritonbench_task

    return tritonbench_task(folder(arg), name)


def language_of(arg: str, name: str) -> str:
    return "triton"
