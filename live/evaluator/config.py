"""`EvaluatorConfig`: the settings an `Evaluator` (or each actor of the Ray pool) is built from.

Plain, frozen data (it travels to Ray actors as it is); the parts an evaluator shares with
others (a GPU lock, a memory plan, host-memory admission) are given beside it, not in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from live.devices import DEVICES
from live.evaluator.gpu_lock import TIMING_PATIENCE_S
from live.evaluator.timing import TimingConfig


@dataclass(frozen=True)
class EvaluatorConfig:
    """How an evaluator judges candidates.

    Attributes:
        task_spec: ``builtin``, ``softmax,layernorm``, ``tritonbench:PATH`` or ``module:PKG.MOD``.
        device: ``auto`` | ``cuda`` | ``cpu`` (CPU runs Triton's interpreter on ``cpu_shapes``).
        workers: warm worker processes (concurrent ``evaluate`` calls from threads share them;
            a memory plan may start fewer).
        timeout_s: limit for checking and timing once the kernel compiled.
        compile_timeout_s: limit for loading the module and the first call (JIT compile).
        memory_limit_mb: host memory per worker (RLIMIT_AS on CPU, RSS watch + CUDA cap on GPU);
            None: 16 GiB on a CPU, `gpu_worker_host_limit_mb()` on a GPU.
        n_seeds: random input sets per check shape.
        timing: repetition policy; defaults in `TimingConfig`.
        startup_timeout_s: limit for a worker to import torch and triton.
        static_check: refuse suspicious source before it runs (status ``rejected``; see
            `live.evaluator.static_check`); off by default so the kernel lab judges anything,
            on in the live runner, whose candidates are untrusted LLM output.
        timing_patience_s: with a GPU lock, the longest a timing request lets new checks start
            before the lock closes and drains for it (NOTE D81: timings are batched at quiet
            points instead of one drain each; 0: drain at once, pure writer preference). The
            evaluator sets this patience on the lock it is given.
        timing_batch: with a GPU lock, pending timings that close the lock at once; None:
            half the workers, at least 2 (`live.evaluator.gpu_lock.timing_batch`).
        step_aside: with a GPU lock, checks in flight step aside for a batch of timings at
            their next torch call or Triton launch (NOTE D97).
        gpu_memory_gib: cap on the GPU memory the evaluator plans for (emulate a smaller card);
            None: the whole card.
    """

    task_spec: str
    device: str = "auto"
    workers: int = 1
    timeout_s: float = 120.0
    compile_timeout_s: float = 120.0
    memory_limit_mb: int | None = None
    n_seeds: int = 3
    timing: TimingConfig = field(default_factory=TimingConfig)
    startup_timeout_s: float = 300.0
    static_check: bool = False
    timing_patience_s: float = TIMING_PATIENCE_S
    timing_batch: int | None = None
    step_aside: bool = True
    gpu_memory_gib: float | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be >= 1")
        if self.device not in DEVICES:
            raise ValueError(f"device must be auto, cpu or cuda, not {self.device!r}")
