"""Load a candidate's source as a module (worker side).

Triton reads a kernel's source with ``inspect``, so the code must live in a real file: it is
written into the candidate's own temp dir, which is also the worker's cwd while it runs.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

from live.tasks.loading import exec_module_file


class CandidateLoadError(Exception):
    """The candidate's module could not be built (syntax error, import-time exception, no entry)."""


def load_candidate(
    code: str, module_name: str, workdir: Path, entry: str | None
) -> types.ModuleType:
    """Write `code` to ``workdir/<module_name>.py``, import it, check it defines `entry`."""
    path = workdir / f"{module_name}.py"
    path.write_text(code, encoding="utf-8")
    try:
        compile(code, str(path), "exec")
    except SyntaxError as exc:
        raise CandidateLoadError(f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    try:
        module = exec_module_file(path, module_name, keep=True)
    except BaseException as exc:  # noqa: BLE001 - any import-time failure is the candidate's
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CandidateLoadError(f"import failed: {type(exc).__name__}: {exc}") from None
    if entry is not None and not callable(getattr(module, entry, None)):
        sys.modules.pop(module_name, None)
        raise CandidateLoadError(f"candidate defines no callable {entry!r}")
    return module


def unload_candidate(module_name: str) -> None:
    """Forget a candidate module so the next one starts clean."""
    sys.modules.pop(module_name, None)
