"""An on-disk cache of load-time check results, so a second load of a benchmark is seconds.

One JSON file per entry under ``$KERNELBAND_CACHE_DIR/gold-checks`` (default
``~/.cache/kernelband``). An entry's key hashes what decides the result: the task's files'
contents (for TritonBench-G: the operator file, its performance script and
``performance_utils.py``), the device's name, the torch and Triton versions and
``CHECK_VERSION`` (bumped when the checks themselves change). Format-independent.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from pathlib import Path
from typing import Any

from kbsim.trace.layout import atomic_write_bytes

#: bump when what a check does changes, so that older results are not reused
CHECK_VERSION = 6


def cache_dir() -> Path:
    """Where check results are kept."""
    root = os.environ.get("KERNELBAND_CACHE_DIR") or Path.home() / ".cache" / "kernelband"
    return Path(root) / "gold-checks"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def environment(device: str) -> dict[str, str]:
    """What besides the task's files decides a check: device name, torch/Triton versions."""
    import torch

    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu (TRITON_INTERPRET=1)"
    return {"device": device, "device_name": name, "torch": torch.__version__,
            "triton": _version("triton"), "check_version": str(CHECK_VERSION)}


def entry_key(contents: list[bytes], env: dict[str, str]) -> str:
    """The cache key of one task: its files' contents and the environment."""
    digest = hashlib.sha256()
    for part in contents:
        digest.update(hashlib.sha256(part).digest())
    digest.update(json.dumps(env, sort_keys=True).encode())
    return digest.hexdigest()[:32]


def read(key: str) -> dict[str, Any] | None:
    """The cached record under `key`, or None (missing or unreadable)."""
    try:
        return json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def write(key: str, record: dict[str, Any]) -> None:
    """Keep `record` under `key` (atomically; a cache that cannot be written is skipped)."""
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(cache_dir() / f"{key}.json",
                           json.dumps(record, indent=1, default=str).encode())
    except OSError:
        pass
