"""`KernelProfiler`: what the live runner and its signature provider ask of a profiler.

Satisfied by `live.profiler.NcuProfiler` (Nsight Compute on this machine) and by
`live.backends.ray_pool.RayProfiler` (the same on the Ray pool's actors).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from live.profiler.ncu import ProfileResult


@runtime_checkable
class KernelProfiler(Protocol):
    """Measures a kernel's hardware signature; ``profiled=False`` when it cannot."""

    @property
    def name(self) -> str:
        """What the trace records as the kernel's ``profiler``."""
        ...

    @property
    def available(self) -> bool:
        """Whether profiles can be taken here at all."""
        ...

    @property
    def unavailable_reason(self) -> str | None:
        """Why not, when `available` is False."""
        ...

    def profile(self, task_name: str, code: str) -> ProfileResult:
        """One kernel's profile."""
        ...

    def profile_many(self, task_name: str, codes: list[str]) -> list[ProfileResult]:
        """Several kernels of one task in one session where the profiler can."""
        ...
