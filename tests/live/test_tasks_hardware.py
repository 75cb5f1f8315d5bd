"""GPU peak lookups by torch device name, measured overrides and roofline fractions."""

from __future__ import annotations

import pytest

from live.hardware import (
    GPU_PEAKS,
    gpu_peaks,
    lookup_gpu,
    measure_ceilings,
    roofline_fraction,
    roofline_ms,
)
from live.tasks.registry import builtin_task


@pytest.mark.parametrize(
    ("device_name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA H200", "h200"),  # contains "H20": must not match the H20
        ("NVIDIA H20", "h20"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ],
)
def test_lookup_by_device_name(device_name: str, key: str) -> None:
    peaks = lookup_gpu(device_name)
    assert peaks is not None and peaks.key == key


def test_unknown_gpu_gives_none_and_bad_key_names_the_known_ones() -> None:
    assert lookup_gpu("Tesla T4") is None
    assert roofline_fraction(builtin_task("add"), {"N": 1024}, 1.0, "Tesla T4") is None
    with pytest.raises(ValueError, match="known: h200, h20"):
        gpu_peaks("b200")


def test_table_figures_are_plausible() -> None:
    for peaks in GPU_PEAKS:
        assert 900 <= peaks.dram_gbps <= 5000
        assert peaks.fp16_tflops >= peaks.fp32_tflops > 0 and peaks.sm_count > 0
    assert gpu_peaks("h100-sxm").dram_gbps == 3350.0
    assert gpu_peaks("h20").peak_tflops("bfloat16") < gpu_peaks("a100-sxm-80gb").peak_tflops(
        "bfloat16")


def test_memory_bound_task_at_the_roofline_scores_one() -> None:
    task = builtin_task("add")
    shape = {"N": 1 << 24}
    ideal_ms = task.bytes_moved(shape) / 3350e9 * 1e3
    assert roofline_fraction(task, shape, ideal_ms, "NVIDIA H100 80GB HBM3") == pytest.approx(1.0)
    assert roofline_fraction(task, shape, 2 * ideal_ms, gpu_peaks("h100-sxm")) == pytest.approx(0.5)
    assert roofline_fraction(task, shape, 0.0, "NVIDIA H100 80GB HBM3") is None


def test_measured_ceiling_overrides_the_table() -> None:
    task = builtin_task("add")
    shape = {"N": 1 << 24}
    ms = task.bytes_moved(shape) / 3000e9 * 1e3
    measured = roofline_fraction(task, shape, ms, "NVIDIA H100 80GB HBM3",
                                 measured={"dram_gbps": 3000.0})
    assert measured == pytest.approx(1.0)
    with pytest.raises(ValueError, match="unknown measured ceiling"):
        gpu_peaks("h100-sxm").with_measured({"dram_bw": 1.0})


def test_compute_bound_matmul_uses_its_dtype_peak() -> None:
    shape = {"M": 4096, "N": 4096, "K": 4096}
    peaks = gpu_peaks("h100-sxm")
    fp16_ms = roofline_ms(builtin_task("matmul_fp16"), shape, peaks)
    assert fp16_ms == pytest.approx(2 * 4096**3 / 989.4e12 * 1e3)
    slower = peaks.with_measured({"bf16_tflops": 494.7})
    assert roofline_ms(builtin_task("matmul_bf16"), shape, slower) == pytest.approx(2 * fp16_ms)


def test_measuring_ceilings_needs_a_gpu() -> None:
    with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
        measure_ceilings("cpu")


@pytest.mark.gpu
def test_measured_ceilings_are_below_the_datasheet() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    peaks = lookup_gpu(torch.cuda.get_device_name())
    measured = measure_ceilings("cuda", copy_mib=256, matmul_n=4096, repeats=5)
    assert set(measured) == {"dram_gbps", "fp16_tflops", "bf16_tflops"}
    if peaks is not None:
        assert 0.3 * peaks.dram_gbps < measured["dram_gbps"] < 1.05 * peaks.dram_gbps
        assert 0.2 * peaks.bf16_tflops < measured["bf16_tflops"] < 1.05 * peaks.bf16_tflops
