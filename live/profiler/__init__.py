"""Hardware profiling of candidates (Nsight Compute)."""

from live.profiler.ncu import NcuProfiler, ProfileResult, result_from_csv, triton_kernel_names

__all__ = ["NcuProfiler", "ProfileResult", "result_from_csv", "triton_kernel_names"]
