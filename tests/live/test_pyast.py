"""`live.pyast.parse`: the threads that parse candidates never build two ASTs at once (CPython
3.11's AST builder keeps its recursion depth in state the threads share)."""

from __future__ import annotations

import ast
import threading
import time

import pytest

from live import pyast
from live.evaluator.languages import kernel_language
from live.profiler.batch import rename_kernels

CODE = ("import triton\n\n@triton.jit\ndef add_kernel(x):\n    pass\n\n"
        "def add(x):\n    add_kernel[(1,)](x)\n")


def test_the_profilers_parses_in_threads_take_turns(monkeypatch: pytest.MonkeyPatch) -> None:
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
    results: list[object] = []

    def work() -> None:
        for index in range(10):
            results.append(kernel_language("triton").kernel_names(CODE))
            results.append(rename_kernels(CODE, ["add_kernel"], index))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1
    assert results.count(["add_kernel"]) == 40
    renamed = [r for r in results if isinstance(r, str)]
    assert len(renamed) == 40 and sum("def add_kernel__kb9(x)" in r for r in renamed) == 4
