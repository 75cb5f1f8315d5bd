"""Kernel languages: what "a kernel" looks like in a task's candidates.

``Task.language`` names one of ``LANGUAGES``; everything that used to assume Triton reads it:
the static pre-check (a candidate must define and launch a kernel), code extraction from LLM
replies (prefer the block with a kernel), the profiler's kernel-name filter and the compile
metadata reader. A task format with another kernel language (KernelBench's PyTorch ``ModelNew``
with inline CUDA, say) adds one ``KernelLanguage`` here.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from live.pyast import parse


def dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain on a name, else ''."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


@dataclass(frozen=True)
class KernelLanguage:
    """How to recognise kernels of one language in candidate source.

    Attributes:
        name: the value of ``Task.language``.
        decorators: last names of the decorators that make a function a kernel.
        decorator_modules: the module a dotted decorator must come from (``triton.jit``);
            a bare decorator name (``@jit``) is accepted too.
        launch: how a launch is written, for messages (``kernel[grid](...)``).
        launches: ``launches(tree) -> int``: how many kernel launches the module's AST has.
        compile_meta: dotted name of ``f(module) -> CompileMeta`` (None: no metadata).
    """

    name: str
    decorators: tuple[str, ...]
    decorator_modules: tuple[str, ...]
    launch: str
    launches: Callable[[ast.AST], int]
    compile_meta: str | None = None

    def is_kernel_decorator(self, decorator: ast.AST) -> bool:
        """True when `decorator` (an AST node) marks a kernel of this language."""
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = dotted_name(target)
        return name.split(".")[-1] in self.decorators and (
            name.startswith(self.decorator_modules) or name in self.decorators)

    def kernel_names(self, code: str) -> list[str]:
        """Names of the kernel functions in `code` (any nesting); [] if it does not parse."""
        try:
            tree = parse(code)
        except (SyntaxError, ValueError):
            return []
        return [node.name for node in ast.walk(tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and any(self.is_kernel_decorator(d) for d in node.decorator_list)]

    def mentions_kernel(self, code: str) -> bool:
        """A cheap text test: could `code` define a kernel (for ranking reply blocks)?"""
        return "@" in code and any(name in code for name in self.decorators)

    def read_compile_meta(self, module: types.ModuleType) -> Any:
        """The compile metadata of `module`'s kernels (an empty ``CompileMeta`` if unknown)."""
        from live.evaluator.metadata import CompileMeta

        if self.compile_meta is None:
            return CompileMeta()
        import importlib

        module_name, _, function = self.compile_meta.rpartition(".")
        return getattr(importlib.import_module(module_name), function)(module)


def _subscript_calls(tree: ast.AST) -> int:
    """Calls of a subscripted callable: Triton's ``kernel[grid](...)``."""
    return sum(1 for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript))


TRITON = KernelLanguage(
    name="triton",
    decorators=("jit", "autotune", "heuristics"),
    decorator_modules=("triton",),
    launch="kernel[grid](...)",
    launches=_subscript_calls,
    compile_meta="live.evaluator.metadata.read_triton_compile_meta",
)

#: every kernel language, by ``Task.language``
LANGUAGES: dict[str, KernelLanguage] = {TRITON.name: TRITON}


def kernel_language(name: str) -> KernelLanguage:
    """The language called `name`; ValueError naming the known ones otherwise."""
    try:
        return LANGUAGES[name]
    except KeyError:
        raise ValueError(f"unknown kernel language {name!r}; known: "
                         f"{', '.join(LANGUAGES)}.") from None
