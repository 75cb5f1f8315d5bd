"""Import a candidate's source text as a module.

Triton's ``@triton.jit`` reads a kernel's source from its file, so candidates are written to a
real file (in one temporary folder per process, removed at exit) and imported from there.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

_module_dir: Path | None = None


def candidate_dir() -> Path:
    """This process's folder for candidate module files (made once, removed at exit)."""
    global _module_dir
    if _module_dir is None:
        _module_dir = Path(tempfile.mkdtemp(prefix="kernelband-candidates-"))
        atexit.register(shutil.rmtree, _module_dir, ignore_errors=True)
    return _module_dir


def exec_module_file(path: Path, name: str, *, keep: bool) -> ModuleType:
    """Import the module file at `path` under `name`; exceptions propagate to the caller.

    The module is registered in ``sys.modules`` while it executes (dataclasses, pickling and
    Triton look it up there); `keep` leaves it registered afterwards (the caller unregisters it),
    otherwise it is removed, whatever happened.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not keep:
        sys.modules.pop(name, None)
    return module


def import_source(source: str, stem: str = "candidate") -> ModuleType:
    """Write ``source`` to a file and import it as a fresh module (never cached across calls).

    The module name carries the source's hash, so two candidates never share a module object.
    Exceptions raised while executing the module propagate to the caller.
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    safe_stem = "".join(c if c.isalnum() else "_" for c in stem)
    name = f"kb_{safe_stem}_{digest}"
    path = candidate_dir() / f"{name}.py"
    path.write_text(source)
    return exec_module_file(path, name, keep=False)
