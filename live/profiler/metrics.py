"""Nsight Compute metrics kernelband reads, and how raw metrics become h(k) and the 9-dim profile.

h(k) (KernelBand v2) = (SM, DRAM, L2) throughput in % of peak. The 9-dim v1 profile is
(L2 hit rate, DRAM bandwidth %, SM utilisation %, warp execution efficiency, achieved occupancy,
registers/thread, shared-memory bank conflicts, coalescing %, tensor-core utilisation %).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: our field name -> ncu metric name
NCU_METRICS: dict[str, str] = {
    "duration_ns": "gpu__time_duration.sum",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "registers_per_thread": "launch__registers_per_thread",
    "shared_bytes_per_block": "launch__shared_mem_per_block",
    "bank_conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bank_conflicts_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l2_hit_rate_pct": "lts__t_sector_hit_rate.pct",
    "thread_inst_per_inst": "smsp__thread_inst_executed_per_inst_executed.ratio",
    "global_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_bytes_per_sector_pct":
        "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "tensor_hmma_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_gmma_pct": "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
}
#: metrics summed over a launch rather than averaged as a rate
_COUNTS = ("bank_conflicts_ld", "bank_conflicts_st", "global_ld_sectors", "global_ld_requests")


def base_name(metric: str) -> str:
    """``sm__throughput.avg.pct_of_peak_sustained_elapsed`` -> ``sm__throughput``."""
    return metric.split(".", 1)[0]


def _get(values: Mapping[str, float], key: str) -> float:
    value = values.get(key)
    return float(value) if value is not None else math.nan


def hw_signature(values: Mapping[str, float]) -> tuple[float, float, float]:
    """(SM, DRAM, L2) throughput, % of peak."""
    return (_get(values, "sm_pct"), _get(values, "dram_pct"), _get(values, "l2_pct"))


def coalescing_pct(values: Mapping[str, float]) -> float:
    """Share of each fetched global-load sector the kernel used, in %.

    Nsight's own ``..._bytes_per_sector_mem_global_op_ld.pct`` where available; otherwise 4
    sectors per request (32 threads × 4 bytes) over the measured sectors per request, capped.
    """
    direct = _get(values, "global_ld_bytes_per_sector_pct")
    if math.isfinite(direct):
        return direct
    sectors, requests = _get(values, "global_ld_sectors"), _get(values, "global_ld_requests")
    if not (math.isfinite(sectors) and math.isfinite(requests)) or sectors <= 0 or requests <= 0:
        return math.nan
    return min(100.0, 100.0 * 4.0 / (sectors / requests))


def profile9(values: Mapping[str, float]) -> tuple[float, ...]:
    """The 9-dim v1 profile (``kbsim.strategies.PROFILE_DIMS`` order)."""
    tensor = [v for v in (_get(values, "tensor_hmma_pct"), _get(values, "tensor_gmma_pct"))
              if math.isfinite(v)]
    conflicts = [v for v in (_get(values, "bank_conflicts_ld"), _get(values, "bank_conflicts_st"))
                 if math.isfinite(v)]
    return (
        _get(values, "l2_hit_rate_pct"),
        _get(values, "dram_pct"),
        _get(values, "sm_pct"),
        100.0 * _get(values, "thread_inst_per_inst") / 32.0,
        _get(values, "achieved_occupancy_pct"),
        _get(values, "registers_per_thread"),
        sum(conflicts) if conflicts else math.nan,
        coalescing_pct(values),
        max(tensor) if tensor else math.nan,
    )


def is_count(field: str) -> bool:
    return field in _COUNTS
