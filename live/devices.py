"""The machine's small rules, once: what device ``auto`` means, the CPU cores this process may
use, and how many workers a pool starts.

Used by the evaluator (`live.evaluator.evaluator`), the load-time gold checks' pools
(`live.evaluator.isolated`, `live.gold`), the live runner's wiring (`live.runner.wiring`) and
the Ray backend (`live.backends.ray_live`).
"""

from __future__ import annotations

import os

DEVICES = ("auto", "cpu", "cuda")

#: the most evaluator workers a live run starts on one GPU: they compile and check side by
#: side and time one at a time (the local runner and each Ray actor alike)
EVAL_WORKERS_CAP = 8


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` if torch sees a GPU, else ``cpu``; ``cpu`` and ``cuda`` as given."""
    if device not in DEVICES:
        raise ValueError(f"device must be auto, cpu or cuda, not {device!r}")
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def worker_count(device: str, *, asked: int | None, parallel: int, cores: int,
                 gpu_cap: int, cpu_cap: int = 1) -> int:
    """Workers a pool starts: `asked` when given (non-zero); else one per piece of `parallel`
    work, at most `cores` and the device's cap (`gpu_cap` on ``cuda``, `cpu_cap` otherwise),
    and at least one."""
    if asked:
        return asked
    cap = gpu_cap if device == "cuda" else cpu_cap
    return max(1, min(cap, parallel, cores))
