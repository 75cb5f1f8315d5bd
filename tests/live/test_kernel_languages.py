"""Task.language: the static check, code extraction and the profiler's kernel filter follow it."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from live.evaluator import languages
from live.evaluator.languages import KernelLanguage, kernel_language
from live.evaluator.static_check import static_check
from live.profiler.ncu import triton_kernel_names
from live.proposers.extract import extract_code
from live.tasks.registry import builtin_task, task_language

# a made-up language: kernels are ``@gpu.kernel`` functions launched as ``launch(kernel, ...)``
TOY = KernelLanguage(
    name="toy", decorators=("kernel",), decorator_modules=("gpu",), launch="launch(kernel, ...)",
    launches=lambda tree: sum(1 for node in ast.walk(tree) if isinstance(node, ast.Call)
                              and getattr(node.func, "id", "") == "launch"))

TOY_CODE = "import gpu\n\n@gpu.kernel\ndef k(x):\n    pass\n\ndef entry(x):\n    launch(k, x)\n"
TRITON_CODE = ("import triton\n\n@triton.jit\ndef k(x):\n    pass\n\n"
               "def entry(x):\n    k[(1,)](x)\n")


@pytest.fixture()
def toy(monkeypatch):
    monkeypatch.setitem(languages.LANGUAGES, "toy", TOY)
    return TOY


def test_static_check_reads_the_language(toy) -> None:
    assert static_check(TOY_CODE, "toy") is None
    assert "defines no @triton.jit kernel" in static_check(TOY_CODE, "triton")
    assert static_check(TRITON_CODE, "triton") is None
    assert "defines no @gpu.kernel kernel" in static_check(TRITON_CODE, "toy")
    no_launch = TOY_CODE.replace("launch(k, x)", "pass")
    assert "no launch(kernel, ...) call" in static_check(no_launch, "toy")


def test_kernel_names_and_extraction_read_the_language(toy) -> None:
    assert triton_kernel_names(TOY_CODE, "toy") == ["k"]
    assert triton_kernel_names(TOY_CODE, "triton") == []
    reply = f"```python\n{TRITON_CODE}```\n```python\n{TOY_CODE}```\nDone."
    # both blocks define the entry; the one with a kernel of the task's language wins
    assert extract_code(reply, "entry", "toy").code == TOY_CODE
    reply_other_order = f"```python\n{TOY_CODE}```\n```python\n{TRITON_CODE}```\n"
    assert extract_code(reply_other_order, "entry", "triton").code == TRITON_CODE


def test_tasks_say_their_language_and_unknown_ones_are_refused(toy) -> None:
    add = builtin_task("add")
    assert add.language == "triton" and task_language("builtin", "add") == "triton"
    assert dataclasses.replace(add, language="toy").language == "toy"
    with pytest.raises(ValueError, match="language must be one of"):
        dataclasses.replace(add, language="fortran")
    with pytest.raises(ValueError, match="unknown kernel language 'fortran'"):
        kernel_language("fortran")
