"""``tritonbench:PATH``: a TritonBench-G checkout (see ``live.tasks.tritonbench``).

``tritonbench:PATH@SUBSET`` loads (checks) only some of its operators: SUBSET is a JSON file
(the KernelBand authors' ``paper_subset_50.json``, ``{"kernels": ["op.py", ...]}``, or a plain
list of names), looked up in PATH, then from the current and launching directories, or a comma
list of operator names (``tritonbench:PATH@add,softmax``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from live.tasks.paths import launched
from live.tasks.skips import Loaded

#: separates a checkout from the operators to take from it
SUBSET_MARK = "@"



def split_subset(arg: str) -> tuple[str, str | None]:
    """``PATH@SUBSET`` -> ``(PATH, SUBSET)``; ``(arg, None)`` without a subset (a folder whose
    own name has an ``@`` is taken whole)."""
    head, mark, subset = arg.rpartition(SUBSET_MARK)
    if not mark or not head or not subset.strip() or launched(Path(arg).expanduser()).is_dir():
        return arg, None
    return head, subset.strip()


def folder(arg: str) -> Path:
    """The checkout named by `arg` (its subset aside); a relative path is tried from the
    launching shell's directory too."""
    return launched(Path(split_subset(arg)[0]).expanduser())


def _subset_file(checkout: Path, subset: str) -> Path | None:
    for candidate in (checkout / subset, launched(Path(subset).expanduser())):
        if candidate.is_file():
            return candidate
    return None


def subset_ops(arg: str) -> list[str] | None:
    """The operator names `arg`'s subset selects (None: every operator)."""
    subset = split_subset(arg)[1]
    if subset is None:
        return None
    file = _subset_file(folder(arg), subset)
    if file is not None:
        try:
            data = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"subset {file} is not readable JSON: {exc}") from None
        names = data.get("kernels") if isinstance(data, dict) else data
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"subset {file} must be a list of operator names or an object "
                             f"with one under \"kernels\"")
    elif subset.endswith(".json"):
        raise ValueError(f"subset file {subset!r} not found in {folder(arg)} or the current "
                         f"directory")
    else:
        names = subset.split(",")
    ops = list(dict.fromkeys(n.strip().removesuffix(".py") for n in names if n.strip()))
    if not ops:
        raise ValueError(f"subset {subset!r} names no operator")
    return ops


def canonical(arg: str) -> str:
    subset = split_subset(arg)[1]
    root = str(folder(arg).resolve())
    if subset is None:
        return root
    file = _subset_file(folder(arg), subset)
    return f"{root}{SUBSET_MARK}{file.resolve() if file is not None else subset}"


def load(arg: str, options: Any = None) -> Loaded:
    from live.tasks.tritonbench import load_checked

    return load_checked(folder(arg), options, subset_ops(arg))  # an unknown name: an error


def rebuild(arg: str, name: str) -> Any:
    from live.tasks.tritonbench import tritonbench_task

    return tritonbench_task(folder(arg), name)


def language_of(arg: str, name: str) -> str:
    return "triton"
