"""The static pre-check: what it rejects (a table of snippets) and what it must never reject
(every built-in k0, mutate's outputs of them, the TritonBench fixture's kernels)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbsim.strategies import STRATEGIES
from live.evaluator.static_check import static_check
from live.proposers.mutate import mutate_source
from live.tasks.registry import resolve_tasks

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def entry(x):
    {body}
    k[(1,)](x, x.numel(), BLOCK=64)
"""
TRITONBENCH_MINI = Path(__file__).parent / "fixtures" / "tritonbench_mini"


def with_body(body: str) -> str:
    return KERNEL.replace("{body}", body)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("import socket", "imports socket"),
        ("import subprocess as sp", "imports subprocess"),
        ("from urllib.request import urlopen", "imports from urllib.request"),
        ("import ctypes", "imports ctypes"),
        ("import shutil", "imports shutil"),
        ("import os; os.system('ls')", "calls os.system"),
        ("import os as o; o.remove('/etc/passwd')", "calls os.remove"),
        ("import os; os.environ.get('OPENAI_API_KEY')", "reads environment variables"),
        ("import os; os.getenv('HF_TOKEN')", "reads environment variables"),
        ("from os import environ", "imports os.environ"),
        ("from pathlib import Path; Path('x').unlink()", ".unlink"),
        ("open('/tmp/leak', 'w')", "outside its sandbox directory"),
        ("open('../../leak', 'w')", "outside its sandbox directory"),
        ("eval('1 + 1')", "uses eval()"),
        ("exec('pass')", "uses exec()"),
        ("__import__('os')", "uses __import__()"),
        ("import sys; sys._getframe(1)", "._getframe"),
        ("import gc", "imports gc"),
        ("import inspect", "imports inspect"),
        ("import importlib", "imports importlib"),
        ("(lambda: 0).__globals__", ".__globals__"),
        ("import torch; torch.cuda.Stream()", "side stream"),
        ("import torch; torch.cuda.set_stream(None)", "side stream"),
    ],
)
def test_rejects_with_a_reason(body: str, reason: str) -> None:
    problem = static_check(with_body(body))
    assert problem is not None and reason in problem, problem
    assert problem.startswith("static check: the candidate ")
    assert "(line " in problem


def test_torch_ops_without_a_triton_kernel_are_rejected() -> None:
    problem = static_check("import torch\n\ndef entry(x, y, out):\n    torch.add(x, y, out=out)\n")
    assert problem is not None and "no @triton.jit kernel" in problem
    never_launched = with_body("pass").replace("    k[(1,)](x, x.numel(), BLOCK=64)\n", "")
    problem = static_check(never_launched)
    assert problem is not None and "never launches" in problem


def test_ordinary_kernel_code_passes() -> None:
    body = "import math; import torch; y = torch.empty_like(x); n = math.ceil(x.numel() / 64)"
    assert static_check(with_body(body)) is None
    assert static_check(with_body("open('notes.txt', 'w').close()")) is None  # its own dir
    assert static_check("def broken(:\n") is None  # the worker says compile_error


def test_no_false_positive_on_builtin_k0s_and_their_mutations() -> None:
    checked = 0
    for task in resolve_tasks("builtin"):
        assert static_check(task.k0) is None, task.name
        checked += 1
        for strategy in STRATEGIES:
            for sample_index in range(3):
                code, _ = mutate_source(task.k0, strategy, seed=1, sample_index=sample_index)
                if code is not None:
                    assert static_check(code) is None, (task.name, strategy)
                    checked += 1
    assert checked > 150


def test_no_false_positive_on_tritonbench_kernels(tritonbench_mini_cache) -> None:
    # the gold checks come from the module's copy of the session's cache (tests/live/conftest.py)
    tasks = resolve_tasks(f"tritonbench:{TRITONBENCH_MINI}")
    assert tasks
    for task in tasks:
        assert static_check(task.k0) is None, task.name
