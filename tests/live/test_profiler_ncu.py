"""The Nsight Compute profiler without a GPU: parsing real H200 CSV, the runner with a fake ncu,
caching, timeouts, and the "unavailable" path."""

from __future__ import annotations

import logging
import math
import stat
from pathlib import Path

import pytest

from live.profiler import NcuProfiler, result_from_csv, triton_kernel_names
from live.profiler.csv_parse import Launch, duration_weighted, parse_raw_csv
from live.profiler.metrics import NCU_METRICS, coalescing_pct, profile9
from tests.live.fixtures.candidates.tiny_tasks import SPEC

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
ADD_CSV = (FIXTURES / "h200_add.csv").read_text()  # ncu 2025.3.1, NVIDIA H200, k0 of `add`
MATMUL_CSV = (FIXTURES / "h200_matmul_fp16.csv").read_text()
GOOD = (Path(__file__).parent / "fixtures" / "candidates" / "vadd_good.py").read_text()


def test_parse_real_h200_csv() -> None:
    launches = parse_raw_csv(ADD_CSV)
    assert [lc.kernel_name for lc in launches] == ["add_kernel"] * 3
    first = launches[0].values
    assert first["duration_ns"] == 46432.0  # "46,432": thousands separator handled
    assert first["sm_pct"] == pytest.approx(22.05)
    assert first["registers_per_thread"] == 16.0


def test_result_from_real_csv_gives_signature_and_profile() -> None:
    result = result_from_csv(ADD_CSV, kid="k", task_id="add", profiler="ncu")
    assert result.profiled and result.n_launches == 3
    sm, dram, l2 = result.hw_sig
    assert sm == pytest.approx(22.0, abs=0.1)
    assert dram > 80.0  # a streaming add saturates DRAM on the H200
    assert 0.0 <= l2 <= 100.0
    assert len(result.profile9) == 9
    assert result.profile9[3] == pytest.approx(100.0)  # no divergence in an elementwise kernel
    assert result.registers_per_thread == 16.0
    matmul = result_from_csv(MATMUL_CSV, kid="m", task_id="matmul_fp16", profiler="ncu")
    assert matmul.kernel_names == ("matmul_kernel",)
    assert matmul.profile9[8] > 1.0  # tensor pipes busy in a matmul
    assert result.profile9[8] == pytest.approx(0.0)  # and idle in an add


def test_duration_weighting() -> None:
    launches = [Launch("k", {"duration_ns": 1.0, "sm_pct": 10.0}),
                Launch("k", {"duration_ns": 3.0, "sm_pct": 50.0, "dram_pct": 7.0})]
    means = duration_weighted(launches)
    assert means["sm_pct"] == pytest.approx(40.0)
    assert means["dram_pct"] == pytest.approx(7.0)  # only where present
    assert duration_weighted([]) == {}


def test_coalescing_fallback_and_nan_dims() -> None:
    assert coalescing_pct({"global_ld_sectors": 8.0, "global_ld_requests": 2.0}) == 100.0
    assert coalescing_pct({"global_ld_sectors": 32.0, "global_ld_requests": 2.0}) == 25.0
    assert math.isnan(coalescing_pct({}))
    assert all(math.isnan(v) for v in profile9({}))


def test_no_header_means_no_launch() -> None:
    assert parse_raw_csv("==PROF== nothing profiled\n") == []
    result = result_from_csv("", kid="k", task_id="t", profiler="ncu")
    assert not result.profiled and "no kernel launch" in result.error


def test_triton_kernel_names() -> None:
    code = ("import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef a(x): pass\n"
            "@triton.jit\ndef b(x): pass\ndef host(): pass\n")
    assert triton_kernel_names(code) == ["a", "b"]
    assert triton_kernel_names("def (") == []


def _fake_ncu(tmp_path: Path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_runner_with_fake_ncu_caches_by_kernel_id(tmp_path: Path) -> None:
    (tmp_path / "out.csv").write_text(ADD_CSV)
    ncu = _fake_ncu(tmp_path, f'case "$1" in --query-metrics) exit 0;; esac\n'
                              f'cat {tmp_path / "out.csv"}')
    profiler = NcuProfiler(SPEC, cache_dir=tmp_path / "cache", ncu_path=ncu, timeout_s=30)
    assert profiler.metrics() == list(NCU_METRICS.values())  # nothing known: ask for all
    first = profiler.profile("vadd", GOOD)
    assert first.profiled and not first.cached and first.latency_s is not None
    second = profiler.profile("vadd", GOOD)
    assert second.cached and second.hw_sig == pytest.approx(first.hw_sig)
    assert len(list((tmp_path / "cache" / "vadd").glob("*.json"))) == 1


def test_refusal_reports_unavailable_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ncu = _fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - no permission" >&2; exit 1')
    profiler = NcuProfiler(SPEC, ncu_path=ncu, timeout_s=30)
    with caplog.at_level(logging.WARNING, logger="live.profiler.ncu"):
        results = [profiler.profile("vadd", GOOD) for _ in range(3)]
    assert [r.profiled for r in results] == [False] * 3
    assert not profiler.available and "ERR_NVGPUCTRPERM" in results[-1].error
    assert sum("unavailable" in rec.message for rec in caplog.records) == 1


def test_cpu_mode_and_missing_ncu_are_unavailable(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="live.profiler.ncu"):
        cpu = NcuProfiler(SPEC, device="cpu")
        missing = NcuProfiler(SPEC, ncu_path=None, device="cuda")
    result = cpu.profile("vadd", GOOD)
    assert not result.profiled and "CPU" in result.error
    if missing.ncu_path is None:  # on a machine that has ncu this part does not apply
        assert not missing.available


def test_timeout_is_a_value(tmp_path: Path) -> None:
    ncu = _fake_ncu(tmp_path, 'case "$1" in --query-metrics) exit 0;; esac\nsleep 30')
    result = NcuProfiler(SPEC, ncu_path=ncu, timeout_s=1).profile("vadd", GOOD)
    assert not result.profiled and "exceeded 1 s" in result.error
