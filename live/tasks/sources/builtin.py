"""The built-in task suite (``live/tasks/builtin``): spec ``builtin`` or a comma list of names."""

from __future__ import annotations

import importlib

from live.tasks.base import Task
from live.tasks.skips import Loaded

#: every built-in task, in the order they are listed (module ``live.tasks.builtin.<name>``)
BUILTIN_TASKS: tuple[str, ...] = (
    "add",
    "bias_gelu",
    "swiglu",
    "softmax",
    "layernorm",
    "rmsnorm",
    "cross_entropy",
    "cumsum",
    "transpose",
    "embedding",
    "quantize_int8",
    "dequantize_int8",
    "matmul_fp16",
    "matmul_bf16",
    "attention",
)


def builtin_task(name: str) -> Task:
    """The built-in task called ``name``; ValueError naming the valid ones otherwise."""
    if name not in BUILTIN_TASKS:
        raise ValueError(
            f"unknown task {name!r}; built-in tasks are: {', '.join(BUILTIN_TASKS)} "
            "(or use tritonbench:PATH or module:PKG.MOD)."
        )
    return importlib.import_module(f"live.tasks.builtin.{name}").TASK


def _names(arg: str) -> list[str]:
    if arg in ("builtin", ""):
        return list(BUILTIN_TASKS)
    names = [part.strip() for part in arg.split(",") if part.strip()]
    if not names:
        raise ValueError(
            f"empty task spec {arg!r}; use 'builtin', a comma list of names, "
            "'tritonbench:PATH' or 'module:PKG.MOD'."
        )
    return names


def canonical(arg: str) -> str:
    return arg.strip()


def load(arg: str, options: object = None) -> Loaded:
    return Loaded([builtin_task(name) for name in _names(arg)])


def rebuild(arg: str, name: str) -> Task:
    task = builtin_task(name)
    if arg not in ("builtin", "") and name not in _names(arg):
        raise ValueError(f"task {name!r} is not in spec {arg!r}; it names: "
                         f"{', '.join(_names(arg))}.")
    return task


def language_of(arg: str, name: str) -> str:
    return "triton"
