"""Where numba keeps kbsim's compiled kernels: one cache folder per version of kbsim's source.

numba's on-disk cache (``cache=True``) is invalidated by edits to a function's own file only; a
kernel that inlines or calls functions of another module keeps running the old machine code
after that module changes. kbsim's kernels span many modules, so the cache lives in a folder
named by a hash of every kbsim source file: any edit starts a fresh cache. A ``NUMBA_CACHE_DIR``
set by the user wins.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path


def source_digest(root: Path) -> str:
    """Hash of the names and contents of every .py file under `root`."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def configure_numba_cache() -> str | None:
    """Point numba's cache at the folder for this kbsim source; returns it (None: left alone)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "kernelband" / "numba" / source_digest(Path(__file__).resolve().parent)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # not writable: numba's default (__pycache__ beside the sources) stays
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = str(folder)
    return str(folder)
