"""Optimization strategies and the hardware resource each one targets (KernelBand v2).

The hardware signature h(k) is ordered (SM, DRAM, L2) throughput, each in % of peak; `TARGET`
gives, per strategy, the index into h(k) of the resource that strategy is meant to relieve. The
mask M[i, s] of the paper closes strategy s for cluster i when the cluster representative's
h[TARGET[s]] is already at or above theta_sat (saturated: nothing left to gain there).
"""

from __future__ import annotations

import numpy as np

STRATEGIES: tuple[str, ...] = (
    "tiling",
    "vectorization",
    "fusion",
    "pipeline",
    "reordering",
    "access_layout",
)
N_STRATEGIES = len(STRATEGIES)

HW_DIMS: tuple[str, ...] = ("sm_pct", "dram_pct", "l2_pct")
SM, DRAM, L2 = 0, 1, 2

#: index into the hardware signature of the resource each strategy targets
TARGET = np.array([L2, DRAM, DRAM, SM, SM, DRAM], dtype=np.int64)

#: 5-dim behaviour vector phi(k) of v2
PHI_DIMS: tuple[str, ...] = (
    "log1p_ms",
    "registers_per_thread",
    "shared_kb",
    "log2_threads_per_block",
    "theoretical_occupancy_pct",
)
#: 6-dim runtime vector of v1
RUNTIME_DIMS: tuple[str, ...] = (
    "log_ms",
    "log_mem_footprint_bytes",
    "arithmetic_intensity",
    "block_x",
    "block_y",
    "achieved_occupancy_pct",
)
#: 9-dim profile of v1
PROFILE_DIMS: tuple[str, ...] = (
    "l2_hit_rate_pct",
    "dram_bw_pct",
    "sm_util_pct",
    "warp_efficiency_pct",
    "achieved_occupancy_pct",
    "registers_per_thread",
    "shared_bank_conflicts",
    "coalescing_pct",
    "tensor_core_util_pct",
)


def strategy_index(name: str) -> int:
    """Index of a strategy by name; a clear error for an unknown one."""
    try:
        return STRATEGIES.index(name)
    except ValueError:
        raise ValueError(
            f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}"
        ) from None
