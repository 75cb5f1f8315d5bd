"""Compile metadata of a candidate's Triton kernels, theoretical occupancy, φ, runtime vector.

Metadata is read from the ``CompiledKernel`` objects Triton keeps in each ``JITFunction``'s
per-device cache (``device_caches[device][0]``: key -> CompiledKernel; the same position in
Triton 3.2-3.9). Autotuner / Heuristics wrappers are unwrapped through ``.fn``. Under
``TRITON_INTERPRET=1`` there is no compiled kernel: every field is None.

Where a candidate has several kernels, the one with the most registers per thread describes it
(``NOTE (D7)``: the paper's φ is per kernel; we keep the heaviest one, usually the main loop).
"""

from __future__ import annotations

import math
import types
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CompileMeta:
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    kernel_name: str | None = None


@dataclass(frozen=True)
class DeviceLimits:
    """Per-SM limits used for theoretical occupancy (H100 defaults)."""

    name: str = "unknown"
    sm_count: int = 132
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    shared_bytes_per_sm: int = 233472
    l2_bytes: int = 50 * 1024 * 1024


def _jit_functions(module: types.ModuleType) -> list[Any]:
    found = []
    for value in vars(module).values():
        fn = value
        for _ in range(4):  # Autotuner(Heuristics(JITFunction)) and similar
            if hasattr(fn, "device_caches"):
                found.append(fn)
                break
            fn = getattr(fn, "fn", None)
            if fn is None:
                break
    return found


def _compiled_kernels(jit_fn: Any) -> list[Any]:
    kernels = []
    try:
        for entry in list(jit_fn.device_caches.values()):
            cache = entry[0]
            if isinstance(cache, dict):
                kernels.extend(cache.values())
    except Exception:  # noqa: BLE001 - a Triton version with another layout: no metadata
        return []
    return kernels


def read_triton_compile_meta(module: types.ModuleType) -> CompileMeta:
    """Metadata of the heaviest compiled kernel in `module` (all None if none was compiled)."""
    best: CompileMeta | None = None
    for jit_fn in _jit_functions(module):
        for kernel in _compiled_kernels(jit_fn):
            try:
                if getattr(kernel, "n_regs", None) is None:
                    kernel._init_handles()
                meta = kernel.metadata
                candidate = CompileMeta(
                    registers=int(kernel.n_regs),
                    spills=int(getattr(kernel, "n_spills", 0) or 0),
                    shared_bytes=int(getattr(meta, "shared", 0) or 0),
                    num_warps=int(meta.num_warps),
                    num_stages=int(meta.num_stages),
                    kernel_name=str(getattr(meta, "name", getattr(kernel, "name", ""))),
                )
            except Exception:  # noqa: BLE001 - metadata is best effort
                continue
            if best is None or (candidate.registers or 0) > (best.registers or 0):
                best = candidate
    return best or CompileMeta()


def theoretical_occupancy_pct(
    registers: int, shared_bytes: int, num_warps: int, limits: DeviceLimits
) -> float:
    """Resident warps / max warps per SM, from registers, shared memory and block size.

    Register allocation follows NVIDIA's occupancy calculator: registers per thread rounded up
    to a multiple of 8, per-warp allocation in units of 256; 1 KiB of shared memory is reserved
    per block by the runtime on sm_80+.
    """
    max_warps = limits.max_threads_per_sm // 32
    if num_warps <= 0:
        return float("nan")
    by_warps = max_warps // num_warps
    regs_per_warp = math.ceil(max(registers, 1) * 32 / 256) * 256
    by_regs = (limits.regs_per_sm // regs_per_warp) // num_warps
    per_block_shared = shared_bytes + 1024
    by_shared = limits.shared_bytes_per_sm // per_block_shared
    blocks = max(0, min(by_warps, by_regs, by_shared, limits.max_blocks_per_sm))
    return 100.0 * blocks * num_warps / max_warps


def phi_vector(ms: float | None, meta: CompileMeta, limits: DeviceLimits) -> tuple[float, ...]:
    """φ(k) = (log1p ms, registers/thread, shared KB, log2 threads/block, theoretical occ. %)."""
    nan = float("nan")
    log_ms = math.log1p(ms) if ms is not None else nan
    if meta.registers is None or meta.num_warps is None:
        return (log_ms, nan, nan, nan, nan)
    shared = meta.shared_bytes or 0
    occupancy = theoretical_occupancy_pct(meta.registers, shared, meta.num_warps, limits)
    return (log_ms, float(meta.registers), shared / 1024.0,
            math.log2(meta.num_warps * 32), occupancy)


def runtime_vector(
    ms: float | None,
    footprint_bytes: float | None,
    flops: float | None,
    bytes_moved: float | None,
    meta: CompileMeta,
    occupancy_pct: float,
) -> tuple[float, ...]:
    """v1 runtime vector (log ms, log footprint, arithmetic intensity, block x, block y, occ. %).

    ``NOTE (D8)``: achieved occupancy needs the profiler; until one is merged in by the caller
    the theoretical occupancy stands in. Triton blocks are 1-D: block x = 32·num_warps, y = 1.
    """
    nan = float("nan")
    log_ms = math.log(ms) if ms and ms > 0 else nan
    log_foot = math.log(footprint_bytes) if footprint_bytes and footprint_bytes > 0 else nan
    intensity = flops / bytes_moved if flops is not None and bytes_moved else nan
    block_x = float(meta.num_warps * 32) if meta.num_warps else nan
    block_y = 1.0 if meta.num_warps else nan
    return (log_ms, log_foot, intensity, block_x, block_y, occupancy_pct)


def read_compile_meta(module: types.ModuleType, language: str = "triton") -> CompileMeta:
    """Compile metadata of `module`'s kernels, read the way `language` keeps it (see
    ``live.evaluator.languages``)."""
    from live.evaluator.languages import kernel_language

    return kernel_language(language).read_compile_meta(module)
