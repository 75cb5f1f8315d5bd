"""Python source to an AST, one thread at a time.

CPython 3.11 keeps the AST builder's recursion depth in state that the interpreter's threads
share, so two threads parsing at once can fail with ``SystemError: AST constructor recursion
depth mismatch`` (python/cpython#106905). `kernelband traces profile --sessions 2`, whose sessions
are threads that each parse their candidates (kernel names, the batch's renaming), failed so in
one of about a dozen runs of the test suite on 2 cores. Code that parses in threads parses here.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec",
          **kwargs: Any) -> ast.AST:
    """``ast.parse`` under a process-wide lock (the same arguments, the same result)."""
    with _LOCK:
        return ast.parse(source, filename, mode, **kwargs)
