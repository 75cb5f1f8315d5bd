"""Profile many candidates of one task in one Nsight Compute session.

Most of a single profile's cost is not the measurement: ncu's start, Python importing torch, a
CUDA context, the task's inputs. A batch pays those once: each candidate's Triton kernels are
renamed apart (``softmax_kernel`` -> ``softmax_kernel__kb3``, every reference in its module
renamed alike, so the code and its machine code are otherwise unchanged), all candidates run in
turn in one target process, and each launch is attributed to its candidate by that suffix.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from live.profiler.csv_parse import Launch
from live.pyast import parse

SUFFIX = "__kb"
_SUFFIXED = re.compile(r"^(?P<name>.+)__kb(?P<index>\d+)$")


def rename_kernels(code: str, names: list[str], index: int) -> str:
    """`code` with every function in `names` (and every reference to it) renamed with the
    batch suffix for candidate `index`; the source is re-emitted by ``ast.unparse``."""
    wanted = set(names)
    tree = parse(code)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in wanted:
            node.name = f"{node.name}{SUFFIX}{index}"
        elif isinstance(node, ast.Name) and node.id in wanted:
            node.id = f"{node.id}{SUFFIX}{index}"
    return ast.unparse(tree) + "\n"


def split_launches(launches: list[Launch]) -> dict[int, list[Launch]]:
    """Launches grouped by the candidate whose renamed kernel they ran, with the original
    kernel names restored; launches without a batch suffix are dropped."""
    groups: dict[int, list[Launch]] = defaultdict(list)
    for launch in launches:
        base = launch.kernel_name.split("(", 1)[0].strip()
        match = _SUFFIXED.match(base)
        if match is None:
            continue
        groups[int(match["index"])].append(Launch(match["name"], launch.values))
    return dict(groups)


def kernel_regex(names_by_candidate: list[list[str]]) -> str:
    """ncu's ``--kernel-name`` filter for the renamed kernels of a batch."""
    alternatives = sorted({f"{name}{SUFFIX}{i}" for i, names in enumerate(names_by_candidate)
                           for name in names})
    return "regex:^(" + "|".join(re.escape(a) for a in alternatives) + ")$"
