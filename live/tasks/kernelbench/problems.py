"""KernelBench's file format: discovery of problems and the selectors of a ``kernelbench:`` spec.

A KernelBench folder holds ``level1/``, ``level2/``, ``level3/``; each problem is one file
``<number>_<Name>.py`` defining ``class Model(nn.Module)``, ``get_inputs()`` (the forward's
inputs) and ``get_init_inputs()`` (the constructor's arguments). A problem is named
``<level>/<stem>`` (``level1/19_ReLU``: the file's stem, so the name is stable and says which
file it is) and its task ``kernelbench/<level>/<stem>``.

Selectors (after ``@`` in ``kernelbench:PATH@SELECTOR``), comma-separated:

- ``level1``: every problem of a level;
- ``level2:1-20``: the problems of a level whose number is in the range (``level2:7`` one);
- ``level1/19_ReLU``: one problem by name;
- ``FILE.json``: a JSON list of problem names, or an object with ``"problems"`` (that list) and
  optionally ``"k0"`` (problem name -> the path of its k0 file, relative to the JSON file).

Nothing here imports torch or runs a problem: discovery reads the files' syntax only.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from live.pyast import parse
from live.tasks.paths import launched

#: prefix of every KernelBench task name
NAME_PREFIX = "kernelbench/"
#: separates the folder from the selector in a spec's argument
SELECTOR_MARK = "@"
LEVELS = ("level1", "level2", "level3")
#: what a problem file must define
REQUIRED = ("Model", "get_inputs", "get_init_inputs")

_FILE = re.compile(r"^(\d+)_\w+\.py$")
_RANGE = re.compile(r"^(level\d+)(?::(\d+)(?:-(\d+))?)?$")


@dataclass(frozen=True)
class Problem:
    """One KernelBench problem file.

    Attributes:
        level: ``level1`` | ``level2`` | ``level3``.
        number: the number its file name starts with.
        stem: the file name without ``.py`` (``19_ReLU``).
        path: the file.
        k0_path: a k0 file given by a selector file (None: the problem's own code is k0).
    """

    level: str
    number: int
    stem: str
    path: Path
    k0_path: Path | None = None

    @property
    def name(self) -> str:
        """``level1/19_ReLU``."""
        return f"{self.level}/{self.stem}"

    @property
    def task_name(self) -> str:
        """``kernelbench/level1/19_ReLU``."""
        return NAME_PREFIX + self.name



def split_selector(arg: str) -> tuple[str, str | None]:
    """``PATH@SELECTOR`` -> ``(PATH, SELECTOR)``; ``(arg, None)`` without one."""
    head, mark, selector = arg.rpartition(SELECTOR_MARK)
    if not mark or not head or not selector.strip() or launched(Path(arg).expanduser()).is_dir():
        return arg, None
    return head, selector.strip()


def folder(arg: str) -> Path:
    """The KernelBench folder a spec argument names (its selector aside)."""
    root = launched(Path(split_selector(arg)[0]).expanduser())
    if not root.is_dir():
        raise ValueError(f"kernelbench: {root} is not a folder (expected one holding "
                         f"{', '.join(LEVELS)})")
    return root


def discover(root: Path) -> list[Problem]:
    """Every problem under `root`, by level then number."""
    found = []
    for level in LEVELS:
        level_dir = root / level
        if not level_dir.is_dir():
            continue
        for path in level_dir.iterdir():
            match = _FILE.match(path.name)
            if match and path.is_file():
                found.append(Problem(level, int(match.group(1)), path.stem, path))
    if not found:
        raise ValueError(f"kernelbench: no problem files under {root} (expected "
                         f"{'/, '.join(LEVELS)}/ with files like 19_ReLU.py)")
    return sorted(found, key=lambda p: (p.level, p.number, p.stem))


def format_problem(path: Path) -> str | None:
    """Why the file at `path` is not a KernelBench problem (one sentence), or None."""
    try:
        tree = parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError) as exc:
        return f"cannot read the problem file: {type(exc).__name__}: {exc}"
    defined = {node.name for node in tree.body
               if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    missing = [name for name in REQUIRED if name not in defined]
    if missing:
        return f"the problem file defines no {', '.join(missing)}"
    return None


def _select_one(problems: list[Problem], part: str, root: Path) -> list[Problem]:
    match = _RANGE.match(part)
    if match:
        level, low, high = match.group(1), match.group(2), match.group(3)
        if level not in LEVELS:
            raise ValueError(f"kernelbench: unknown level {level!r}; known: {', '.join(LEVELS)}")
        chosen = [p for p in problems if p.level == level]
        if low is not None:
            first, last = int(low), int(high if high is not None else low)
            chosen = [p for p in chosen if first <= p.number <= last]
        if not chosen:
            raise ValueError(f"kernelbench: selector {part!r} names no problem under {root}")
        return chosen
    by_name = {p.name: p for p in problems}
    name = part.removeprefix(NAME_PREFIX).removesuffix(".py")
    if name in by_name:
        return [by_name[name]]
    raise ValueError(f"kernelbench: {part!r} is neither a level (level1, level2:1-20), a "
                     f"problem under {root} (level1/19_ReLU) nor a JSON file")


def _from_file(problems: list[Problem], file: Path, root: Path) -> list[Problem]:
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"kernelbench: selector file {file} is not readable JSON: {exc}") from None
    names = data.get("problems") if isinstance(data, dict) else data
    k0 = data.get("k0") or {} if isinstance(data, dict) else {}
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) \
            or not isinstance(k0, dict):
        raise ValueError(f"kernelbench: selector file {file} must be a list of problem names "
                         "or an object with one under \"problems\" (and \"k0\": name -> file)")
    chosen = []
    for name in dict.fromkeys(names):
        (problem,) = _select_one(problems, name, root)
        k0_file = k0.get(problem.name)
        if k0_file is not None:
            k0_path = (file.parent / k0_file).resolve()
            if not k0_path.is_file():
                raise ValueError(f"kernelbench: k0 file {k0_path} of {problem.name} not found")
            problem = Problem(problem.level, problem.number, problem.stem, problem.path, k0_path)
        chosen.append(problem)
    return chosen


def select(arg: str) -> list[Problem]:
    """The problems a spec argument (``PATH[@SELECTOR]``) names, in order, each once."""
    root = folder(arg)
    problems = discover(root)
    selector = split_selector(arg)[1]
    if selector is None:
        return problems
    chosen: dict[str, Problem] = {}
    for part in (p.strip() for p in selector.split(",")):
        if not part:
            continue
        if part.endswith(".json"):
            file = next((c for c in (root / part, launched(Path(part).expanduser()))
                         if c.is_file()), None)
            if file is None:
                raise ValueError(f"kernelbench: selector file {part!r} not found in {root} or "
                                 "the current directory")
            picked = _from_file(problems, file, root)
        else:
            picked = _select_one(problems, part, root)
        for problem in picked:
            chosen.setdefault(problem.name, problem)
    if not chosen:
        raise ValueError(f"kernelbench: selector {selector!r} names no problem")
    return list(chosen.values())


def canonical(arg: str) -> str:
    """`arg` with its folder (and a selector file) made absolute, for workers elsewhere."""
    root = str(folder(arg).resolve())
    selector = split_selector(arg)[1]
    if selector is None:
        return root
    parts = []
    for part in (p.strip() for p in selector.split(",")):
        if part.endswith(".json"):
            file = next((c for c in (Path(root) / part, launched(Path(part).expanduser()))
                         if c.is_file()), None)
            part = str(file.resolve()) if file is not None else part
        if part:
            parts.append(part)
    return f"{root}{SELECTOR_MARK}{','.join(parts)}"


def find(arg: str, name: str) -> Problem:
    """The problem called `name` (``level1/19_ReLU`` or its task name) within `arg`."""
    wanted = name.removeprefix(NAME_PREFIX)
    for problem in select(arg):
        if problem.name == wanted:
            return problem
    raise KeyError(f"no KernelBench problem {name!r} in 'kernelbench:{arg}'")


def category(problem: Problem) -> str:
    """A coarse regime from the level and the file name (for tables and prompts)."""
    if problem.level == "level2":
        return "fused"
    if problem.level == "level3":
        return "architecture"
    words = problem.stem.lower()
    for category_name, keys in (
            ("matmul", ("matmul", "matrix", "gemm", "matvec", "einsum")),
            ("conv", ("conv",)),
            ("norm", ("norm",)),
            ("pool", ("pool",)),
            ("loss", ("loss", "kldiv", "crossentropy")),
            ("scan", ("cumsum", "cumprod", "scan")),
            ("attention", ("attention",)),
            ("reduction", ("sum", "mean", "max", "min", "prod", "argm", "reduction",
                           "softmax"))):
        if any(key in words for key in keys):
            return category_name
    return "elementwise"
