"""GPU peak figures and % of roofline.

A table of vendor peaks (dense, no structured sparsity) keyed by the names ``torch.cuda.
get_device_name()`` reports; ``lookup_gpu`` matches by case-insensitive substrings, most specific
entry first. A measured ceiling (e.g. the copy bandwidth and matmul rate actually reached on the
machine) overrides a table figure via ``GpuPeaks.with_measured`` or the ``measured`` argument of
``roofline_fraction``; roofline figures against vendor peaks are optimistic by design.

Roofline lower bound for one shape: ``max(bytes / dram_gbps, flops / peak_tflops(dtype))``;
``roofline_fraction = bound_ms / measured_ms`` (1.0 means at the roofline).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from live.tasks.base import Shape, Task


@dataclass(frozen=True)
class GpuPeaks:
    """Peak figures of one GPU model. TFLOP/s are dense (tensor cores for fp16/bf16, FFMA for
    fp32); ``l2_gbps`` is None where no vendor figure exists (measure it and override)."""

    key: str
    name: str
    dram_gbps: float
    fp16_tflops: float
    bf16_tflops: float
    fp32_tflops: float
    sm_count: int
    l2_gbps: float | None = None
    #: lower-case substrings that must all occur in the torch device name
    match: tuple[str, ...] = ()

    def peak_tflops(self, dtype_name: str) -> float:
        """Peak TFLOP/s for math in ``dtype_name`` (``float16``, ``bfloat16``, ``float32``)."""
        dtype_name = dtype_name.removeprefix("torch.")
        if dtype_name in ("float16", "half"):
            return self.fp16_tflops
        if dtype_name == "bfloat16":
            return self.bf16_tflops
        return self.fp32_tflops

    def with_measured(self, measured: dict[str, float]) -> GpuPeaks:
        """A copy whose figures are replaced by measured ceilings (same field names, e.g.
        ``{"dram_gbps": 3000.0, "bf16_tflops": 790.0}``); unknown keys raise ValueError."""
        allowed = {"dram_gbps", "fp16_tflops", "bf16_tflops", "fp32_tflops", "l2_gbps"}
        unknown = set(measured) - allowed
        if unknown:
            raise ValueError(
                f"unknown measured ceiling(s) {sorted(unknown)}; allowed: {sorted(allowed)}."
            )
        return replace(self, **measured)


# Vendor datasheet figures (dense: the datasheets' tensor-core figures "with sparsity" halved).
# Sources: NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: 4.8 TB/s HBM3e, 1,979 TFLOPS
# FP16/BF16 with sparsity, 67 TFLOPS FP32); NVIDIA H100 Tensor Core GPU datasheet (SXM 3.35 TB/s,
# 1,979 / 67; PCIe 2 TB/s, 1,513 / 51; NVL 3.9 TB/s, 1,671 / 60); NVIDIA A100 Tensor Core GPU
# datasheet (40 GB 1,555 GB/s, 80 GB PCIe 1,935 GB/s, 80 GB SXM 2,039 GB/s, 312 TFLOPS FP16/BF16
# dense, 19.5 FP32); NVIDIA H20 product brief (4.0 TB/s, 148 / 44); NVIDIA Ada Lovelace GPU
# architecture whitepaper, RTX 4090 (1,008 GB/s GDDR6X, 165.2 TFLOPS FP16 tensor with FP32
# accumulate, 82.6 TFLOPS FP32). SM counts from the same documents.
# Order matters: more specific names first ("H200" contains "H20", the PCIe and SXM parts share
# the model number).
GPU_PEAKS: tuple[GpuPeaks, ...] = (
    GpuPeaks("h200", "NVIDIA H200 SXM", 4800.0, 989.4, 989.4, 66.9, 132, match=("h200",)),
    GpuPeaks("h20", "NVIDIA H20", 4000.0, 148.0, 148.0, 44.0, 78, match=("h20",)),
    GpuPeaks("h100-pcie", "NVIDIA H100 PCIe", 2000.0, 756.0, 756.0, 51.2, 114,
             match=("h100", "pcie")),
    GpuPeaks("h100-nvl", "NVIDIA H100 NVL", 3900.0, 835.0, 835.0, 60.0, 132,
             match=("h100", "nvl")),
    GpuPeaks("h100-sxm", "NVIDIA H100 SXM", 3350.0, 989.4, 989.4, 66.9, 132, match=("h100",)),
    GpuPeaks("a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", 1935.0, 312.0, 312.0, 19.5, 108,
             match=("a100", "80gb", "pcie")),
    GpuPeaks("a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", 1555.0, 312.0, 312.0, 19.5, 108,
             match=("a100", "pcie")),
    GpuPeaks("a100-sxm-80gb", "NVIDIA A100 SXM 80GB", 2039.0, 312.0, 312.0, 19.5, 108,
             match=("a100", "80gb")),
    GpuPeaks("a100-sxm-40gb", "NVIDIA A100 SXM 40GB", 1555.0, 312.0, 312.0, 19.5, 108,
             match=("a100",)),
    # fp16/bf16 with fp32 accumulation (the GeForce rate; fp16 accumulation doubles it)
    GpuPeaks("rtx4090", "NVIDIA GeForce RTX 4090", 1008.0, 165.2, 165.2, 82.6, 128,
             match=("4090",)),
)


def lookup_gpu(device_name: str) -> GpuPeaks | None:
    """The table entry for a torch device name (``NVIDIA H100 80GB HBM3``), or None."""
    lowered = device_name.lower()
    for peaks in GPU_PEAKS:
        if all(part in lowered for part in peaks.match):
            return peaks
    return None


def gpu_peaks(key: str) -> GpuPeaks:
    """The table entry with this key (``h100-sxm``); ValueError listing the keys otherwise."""
    for peaks in GPU_PEAKS:
        if peaks.key == key:
            return peaks
    raise ValueError(f"unknown GPU {key!r}; known: {', '.join(p.key for p in GPU_PEAKS)}.")


def roofline_ms(task: Task, shape: Shape, peaks: GpuPeaks) -> float | None:
    """The roofline's lower bound on one shape's runtime in ms, or None without byte counts."""
    if task.bytes_moved is None:
        return None
    memory_ms = task.bytes_moved(shape) / (peaks.dram_gbps * 1e9) * 1e3
    flops = task.flops(shape) if task.flops is not None else 0
    compute_ms = flops / (peaks.peak_tflops(task.compute_dtype) * 1e12) * 1e3
    return max(memory_ms, compute_ms)


def roofline_fraction(
    task: Task,
    shape: Shape,
    ms: float,
    gpu_name: str | GpuPeaks,
    measured: dict[str, float] | None = None,
) -> float | None:
    """Fraction of the roofline reached by a kernel taking ``ms`` on ``shape``.

    ``gpu_name`` is a torch device name (or a ``GpuPeaks``); ``measured`` overrides table
    figures with measured ceilings. None when the GPU is unknown, the task has no byte count,
    or ``ms`` is not positive.
    """
    peaks = lookup_gpu(gpu_name) if isinstance(gpu_name, str) else gpu_name
    if peaks is None or ms <= 0:
        return None
    if measured:
        peaks = peaks.with_measured(measured)
    bound_ms = roofline_ms(task, shape, peaks)
    return None if bound_ms is None else bound_ms / ms


def measure_ceilings(device: str = "cuda", copy_mib: int = 1024, matmul_n: int = 8192,
                     repeats: int = 10) -> dict[str, float]:
    """Measured ceilings of the current GPU, in ``GpuPeaks`` field names, for ``measured=``:
    ``dram_gbps`` from a device-to-device copy (bytes read + written), and ``fp16_tflops`` /
    ``bf16_tflops`` from an ``n x n x n`` matmul (median of ``repeats`` CUDA-event timings after
    a warm-up). Needs a CUDA device; raises RuntimeError otherwise."""
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        raise RuntimeError("measure_ceilings needs a CUDA GPU.")

    def median_ms(fn) -> float:
        fn()
        torch.cuda.synchronize(device)
        times = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return sorted(times)[len(times) // 2]

    n_bytes = copy_mib * 2**20
    src = torch.empty(n_bytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda src=src, dst=dst: dst.copy_(src))
    ceilings = {"dram_gbps": 2 * n_bytes / (copy_ms * 1e-3) / 1e9}
    for dtype, key in ((torch.float16, "fp16_tflops"), (torch.bfloat16, "bf16_tflops")):
        a = torch.randn(matmul_n, matmul_n, device=device, dtype=dtype)
        b = torch.randn(matmul_n, matmul_n, device=device, dtype=dtype)
        matmul_ms = median_ms(lambda a=a, b=b: a @ b)
        ceilings[key] = 2 * matmul_n**3 / (matmul_ms * 1e-3) / 1e12
    return ceilings


#: the signature's dimensions, in the order of ``h(k)`` (kbsim.strategies: SM, DRAM, L2)
SIGNATURE_DIMS = ("sm_pct", "dram_pct", "l2_pct")
#: L2 throughput % per DRAM throughput %: Nsight Compute's ``lts__throughput`` over its
#: ``dram__throughput`` has a median of 1.42 over the 904 profiled kernels of
#: traces/explore-h200 (H200; measured by benchmarks/roofline_vs_ncu.py). Fitted on that trace
#: only; traces/policy-v2-h200 is the held-out check (docs/benchmarks.md).
L2_PER_DRAM = 1.4


def roofline_signature(
    task: Task,
    shape: Shape,
    ms: float,
    peaks: GpuPeaks,
) -> tuple[float, float, float] | None:
    """A hardware signature without a profiler, in ``h(k)``'s (SM, DRAM, L2) order, % of peak.

    NOTE (D68): two measured figures fill three dimensions (L2 from DRAM, below).

    From the measured runtime ``ms`` of one shape and the task's bytes and FLOPs for it:

    - DRAM: achieved bandwidth ``bytes_moved / ms`` over the GPU's DRAM peak;
    - SM: achieved compute ``flops / ms`` over the peak of the task's ``compute_dtype``;
    - L2: the DRAM figure times ``L2_PER_DRAM`` (every DRAM byte crosses L2, and Nsight's L2
      throughput runs above its DRAM throughput by about that factor on streaming kernels; the
      byte count says nothing about the reuse L2 serves on top).

    Each is capped to [0, 100]. None without byte counts or a positive runtime. The minimal byte
    count (each input read once, each output written once) understates what an untuned kernel
    moves, so its DRAM figure is a lower bound too; see docs/benchmarks.md for how far this
    agrees with Nsight Compute on the shipped traces.
    """
    if task.bytes_moved is None or not ms or ms <= 0:
        return None
    seconds = ms * 1e-3
    dram = 100.0 * task.bytes_moved(shape) / seconds / (peaks.dram_gbps * 1e9)
    flops = task.flops(shape) if task.flops is not None else 0
    compute = 100.0 * flops / seconds / (peaks.peak_tflops(task.compute_dtype) * 1e12)
    dram, compute = min(100.0, max(0.0, dram)), min(100.0, max(0.0, compute))
    return (compute, dram, min(100.0, dram * L2_PER_DRAM))


def kernel_roofline_signature(
    task: Task,
    shape_ms: list[float] | tuple[float, ...],
    peaks: GpuPeaks,
    shape_index: int | None = None,
) -> tuple[float, float, float] | None:
    """`roofline_signature` of one kernel from its per-perf-shape runtimes, on the shape Nsight
    Compute would profile (the middle perf shape, ``live.profiler.target``) unless told."""
    shapes = list(task.perf_shapes)
    if not shapes or len(shape_ms) != len(shapes):
        return None
    if shape_index is None:
        shape_index = max(0, (len(shapes) - 1) // 2)
    return roofline_signature(task, dict(shapes[shape_index]), float(shape_ms[shape_index]),
                              peaks)
