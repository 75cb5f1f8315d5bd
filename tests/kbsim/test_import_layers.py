"""The import graph: no circle inside kbsim.replay, and no import running back up the layers.

Every `import` statement counts, those inside functions (lazy imports) included: a lazy import
hides a circle from Python's loader but not from a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# each layer may import only the layers listed after it (kbsim is the ground)
LAYERS = {
    "kbsim": set(),
    "live": {"kbsim"},
    "analysis": {"kbsim", "live"},
    "kernelband": {"kbsim", "live", "analysis"},
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module a file imports, at any depth of the file (relative imports resolved)."""
    package = module_name(path if path.name == "__init__.py" else path.parent, root)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            # `from pkg import mod` imports the module pkg.mod when there is one
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    files = sorted((root / package.replace(".", "/")).rglob("*.py"))
    names = {module_name(f, root): f for f in files}
    return {
        name: {m for m in imported_modules(f, root) if m in names and m != name}
        for name, f in names.items()
    }


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_find_cycle_sees_a_circle_and_a_clean_chain():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_lazy_imports_count(tmp_path: Path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from pkg.high import g\n    return g\n")
    (pkg / "high.py").write_text("from . import low\n")
    assert find_cycle(graph("pkg", tmp_path)) == ["pkg.high", "pkg.low", "pkg.high"]


def test_no_import_circle_in_replay():
    edges = graph("kbsim.replay")
    assert find_cycle(edges) is None
    # the engine is the bottom of replay: it imports none of the modules that drive it
    assert not edges["kbsim.replay.engine"] & {"kbsim.replay.sweep", "kbsim.replay.chunks"}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_import_runs_back_up(layer: str):
    above = set(LAYERS) - LAYERS[layer] - {layer}
    wrong = sorted(
        f"{module_name(f)} imports {m}"
        for f in sorted((ROOT / layer).rglob("*.py"))
        for m in imported_modules(f)
        if m.split(".")[0] in above
    )
    assert wrong == []
