"""Python source to an AST, one thread at a time.

CPython 3.11 keeps the AST builder's recursion depth in state that the interpreter's threads
share, so two threads parsing at once can fail with ``SystemError: AST constructor recursion
depth mismatch`` (python/cpython#106905). `kernelband traces profile --sessions 2`, whose sessions
are threads that each parse their candidates (kernel names, the batch's renaming), failed so in
one of about a dozen runs of the test suite on 2 cores. Every parse in `live` goes through here:
the live loop's in-flight attempts are threads too (each proposal's extraction, mutation and
prompt, each candidate's static check), and so are the gold suite's task loads.
"""

from __future__ import annotations

import ast
import threading
from typing import Any, Literal, overload

_LOCK = threading.Lock()


@overload
def parse(source: str, filename: str = ..., mode: Literal["exec"] = ...,
          **kwargs: Any) -> ast.Module: ...
@overload
def parse(source: str, filename: str = ..., *, mode: Literal["eval"],
          **kwargs: Any) -> ast.Expression: ...
@overload
def parse(source: str, filename: str, mode: str, **kwargs: Any) -> ast.AST: ...
def parse(source: str, filename: str = "<unknown>", mode: str = "exec",
          **kwargs: Any) -> ast.AST:
    """``ast.parse`` under a process-wide lock (the same arguments, the same result)."""
    with _LOCK:
        return ast.parse(source, filename, mode, **kwargs)
