"""`live.pyast.parse`: the threads that parse candidates never build two ASTs at once (CPython
3.11's AST builder keeps its recursion depth in state the threads share), and nothing in `live`
parses around it."""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from live import pyast
from live.evaluator.languages import kernel_language
from live.evaluator.static_check import static_check
from live.profiler.batch import rename_kernels
from live.proposers.extract import extract_code
from live.proposers.mutate import mutate_source

CODE = ("import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n\n"
        "def add(x):\n    add_kernel[(1,)](x)\n")


def _most_parsing_at_once(monkeypatch: pytest.MonkeyPatch, work: Callable[[], None]) -> int:
    """Runs `work` in four threads at once, each parse slowed down; how many parses overlapped."""
    inside = 0
    most = 0
    count = threading.Lock()
    real = ast.parse

    def slow_parse(*args: object, **kwargs: object) -> ast.AST:
        nonlocal inside, most
        with count:
            inside += 1
            most = max(most, inside)
        time.sleep(0.005)  # room for another thread to come in, were it let in
        try:
            return real(*args, **kwargs)
        finally:
            with count:
                inside -= 1

    monkeypatch.setattr(pyast.ast, "parse", slow_parse)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return most


def test_the_profilers_parses_in_threads_take_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    results: list[object] = []

    def work() -> None:
        for index in range(10):
            results.append(kernel_language("triton").kernel_names(CODE))
            results.append(rename_kernels(CODE, ["add_kernel"], index))

    assert _most_parsing_at_once(monkeypatch, work) == 1
    assert results.count(["add_kernel"]) == 40
    renamed = [r for r in results if isinstance(r, str)]
    assert len(renamed) == 40 and sum("def add_kernel__kb9(x)" in r for r in renamed) == 4


def test_the_live_loops_in_flight_attempts_take_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """What each in-flight attempt's thread parses: the reply's code, its mutation, its static
    check."""
    results: list[object] = []

    def work() -> None:
        for index in range(5):
            results.append(extract_code(f"```python\n{CODE}```", "add").code)
            results.append(mutate_source(CODE, "tiling", seed=index, sample_index=0)[1])
            results.append(static_check(CODE))

    assert _most_parsing_at_once(monkeypatch, work) == 1
    assert results.count(CODE) == 20 and results.count(None) == 20


def test_nothing_in_live_parses_around_the_lock() -> None:
    root = Path(pyast.__file__).parent
    direct = []
    for path in sorted(root.rglob("*.py")):
        if path == Path(pyast.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr == "parse"
                    and isinstance(node.value, ast.Name) and node.value.id == "ast"):
                direct.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert direct == [], "ast.parse called directly (use live.pyast.parse): " + ", ".join(direct)
