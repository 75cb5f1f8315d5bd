"""`WorkerSettings`: how an evaluator worker process is set up, as one typed record.

The parent (`sandbox.WorkerProcess`) writes the record as the first frame on the worker's
stdin; the worker (`live.evaluator.worker`) reads it before anything else and keeps it, so code
running in the worker (the gold check, a task's scripts) asks `worker_settings()` instead of
reading environment variables.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the settings this process was started with, when it is an evaluator worker
_current: WorkerSettings | None = None


@dataclass(frozen=True)
class WorkerSettings:
    """One worker's settings.

    Attributes:
        device: ``cuda`` or ``cpu`` (Triton's interpreter).
        memory_limit_mb: host memory for the worker (``RLIMIT_AS`` on a CPU; on a GPU the
            parent's RSS watch, and the CUDA allocator's cap without `gpu_cap_bytes`).
        gpu_workers: how many workers share the GPU: without `gpu_cap_bytes` each caps its
            allocator at ``min(memory_limit_mb, 0.9 / gpu_workers of the card)``.
        gpu_cap_bytes: the memory plan's cap on the worker's allocator
            (`live.evaluator.memory_plan`), over `gpu_workers`' share.
        input_cache_bytes: the memory plan's bound on the worker's input cache (None: the
            worker's default).
        quick_autotune: short autotuning benchmarks (NOTE D71, D79).
        first_config: an autotuned kernel runs its first configuration that works (NOTE D89;
            load-time gold checks only).
    """

    device: str = "cpu"
    memory_limit_mb: int | None = None
    gpu_workers: int = 1
    gpu_cap_bytes: int | None = None
    input_cache_bytes: int | None = None
    quick_autotune: bool = False
    first_config: bool = False

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"worker device must be cpu or cuda, not {self.device!r}")
        if self.gpu_workers < 1:
            raise ValueError(f"gpu_workers must be >= 1, not {self.gpu_workers}")


def worker_settings() -> WorkerSettings | None:
    """The settings of this evaluator worker (None outside one)."""
    return _current


def set_worker_settings(settings: WorkerSettings) -> None:
    """Record this process's settings (the worker's first step)."""
    global _current
    _current = settings
