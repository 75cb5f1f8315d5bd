"""kbsim's compiled kernels are cached per version of its source (numba misses cross-file edits)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbsim._numba_cache import source_digest


def test_digest_changes_with_any_source_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    before = source_digest(tmp_path)
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    assert source_digest(tmp_path) != before


def test_cache_folder_is_keyed_by_the_source_and_a_user_choice_wins(tmp_path: Path) -> None:
    code = ("import kbsim, os, numba; print(os.environ['NUMBA_CACHE_DIR']); "
            "print(numba.config.CACHE_DIR)")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == out[1] and out[0].startswith(str(tmp_path / "kernelband" / "numba"))
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == str(tmp_path / "mine")
