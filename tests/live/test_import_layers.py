"""The import graph of live/ around the gold check (issue 39): `live.gold` is in no import
circle, sits between the evaluator and the task sources, and names no function by a dotted
string. Lazy imports count, as in `tests/kbsim/test_import_layers.py` (whose graph this uses).
"""

from __future__ import annotations

import ast

from tests.kbsim.test_import_layers import ROOT, graph, imported_modules, module_name

GOLD = "live.gold"


def _reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return False


def _gold_files():
    return sorted((ROOT / "live" / "gold").glob("*.py"))


def test_no_gold_module_is_in_an_import_circle():
    edges = graph("live")
    gold = [name for name in edges if name == GOLD or name.startswith(GOLD + ".")]
    assert len(gold) >= 4
    assert [name for name in gold if _reaches(edges, name, name)] == []


def test_the_evaluator_is_below_the_gold_check_and_the_task_sources_above_it():
    below = sorted(f"{module_name(f)} imports {m}"
                   for f in sorted((ROOT / "live" / "evaluator").rglob("*.py"))
                   for m in imported_modules(f) if m == GOLD or m.startswith(GOLD + "."))
    assert below == []
    sources = ("live.tasks.tritonbench", "live.tasks.sources", "live.tasks.registry")
    above = sorted(f"{module_name(f)} imports {m}" for f in _gold_files()
                   for m in imported_modules(f) if m.startswith(sources))
    assert above == []


def test_the_gold_package_s_init_imports_none_of_its_parts():
    assert imported_modules(ROOT / "live" / "gold" / "__init__.py") == set()


def test_the_gold_check_names_no_function_by_a_dotted_string():
    found = []
    for path in _gold_files():
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        found += [f"{path.name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docstrings and node.value.startswith("live.")]
    assert found == []
