"""Pure parts of the evaluator: hashing, output comparison, occupancy, statistics, records."""

from __future__ import annotations

import math

import pytest
import torch

from live.evaluator.checks import check_call, compare_output, poisoned_like
from live.evaluator.hashing import kernel_id, normalise_source
from live.evaluator.metadata import (
    CompileMeta,
    DeviceLimits,
    phi_vector,
    runtime_vector,
    theoretical_occupancy_pct,
)
from live.evaluator.result import EvalResult, failure, short_error
from live.evaluator.run_candidate import InputCache, classify_exception
from live.evaluator.sandbox import scrubbed_env
from live.evaluator.timing import TimingConfig, classic_cv, robust_cv, time_cpu

H100 = DeviceLimits(name="H100")


def test_kernel_id_ignores_trailing_whitespace_and_line_endings() -> None:
    a = "def f():\n    return 1\n"
    b = "\n\ndef f():   \r\n    return 1\r\n\n"
    assert kernel_id(a) == kernel_id(b)
    assert len(kernel_id(a)) == 16 and int(kernel_id(a), 16) >= 0
    assert kernel_id(a) != kernel_id("def f():\n    return 2\n")
    assert normalise_source(b) == a


@pytest.mark.parametrize(
    ("out", "ref", "expected"),
    [
        ([1.0, 2.0], [1.0, 2.0], None),
        ([1.0, float("nan")], [1.0, 2.0], "NaN"),
        ([1.0, 2.5], [1.0, 2.0], "max abs error 0.5"),
        ([float("nan")], [float("nan")], None),  # NaN where the reference has NaN is fine
        ([float("inf")], [float("inf")], None),
    ],
)
def test_compare_output_float(out: list, ref: list, expected: str | None) -> None:
    problem = compare_output(torch.tensor(out), torch.tensor(ref), 1e-4, 1e-4)
    assert (problem is None) if expected is None else (expected in problem)


def test_compare_output_int_is_exact_and_shape_checked() -> None:
    assert compare_output(torch.tensor([1, 2]), torch.tensor([1, 2]), 0, 0) is None
    assert "1/2 elements differ" in compare_output(torch.tensor([1, 3]), torch.tensor([1, 2]), 0, 0)
    assert "shape" in compare_output(torch.zeros(3), torch.zeros(2), 0, 0)
    # an integer tolerance (quantization off by one rounding step) is honoured
    q_out, q_ref = torch.tensor([3, -5], dtype=torch.int8), torch.tensor([4, -5], dtype=torch.int8)
    assert compare_output(q_out, q_ref, 1.0, 0.0) is None
    assert "max abs error 2" in compare_output(q_out - 1, q_ref, 1.0, 0.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32, torch.bool])
def test_poisoned_outputs_never_equal_a_plausible_reference(dtype: torch.dtype) -> None:
    ref = torch.tensor([0, 1, 1, 0]).to(dtype)
    assert compare_output(poisoned_like(ref), ref, 1e-2, 1e-2) is not None


def test_check_call_catches_mutation_and_accepts_correct() -> None:
    def reference(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def good(inputs: tuple, outputs: list) -> list:
        outputs[0].copy_(inputs[0] * 2)
        return outputs

    def mutating(inputs: tuple, outputs: list) -> list:
        outputs[0].copy_(inputs[0] * 2)
        inputs[0].add_(1)
        return outputs

    tol = lambda name: (1e-5, 1e-5)  # noqa: E731
    x = torch.arange(4.0)
    assert check_call(good, reference, (x,), tol, lambda: None) is None
    problem = check_call(mutating, reference, (x.clone(),), tol, lambda: None)
    assert problem is not None and "input 0" in problem.message


def test_occupancy_limits() -> None:
    # 4 warps, few registers, no shared memory: limited by max warps -> 100 %
    assert theoretical_occupancy_pct(32, 0, 4, H100) == pytest.approx(100.0)
    # 255 registers/thread, 8 warps: 65536 / (256*32) = 8 warps... -> 1 block of 8 warps of 64
    assert theoretical_occupancy_pct(255, 0, 8, H100) == pytest.approx(12.5)
    # 100 KB of shared memory per block: 2 blocks of 4 warps = 8 of 64 warps
    assert theoretical_occupancy_pct(32, 100 * 1024, 4, H100) == pytest.approx(12.5)


def test_phi_and_runtime_vectors() -> None:
    meta = CompileMeta(registers=32, spills=0, shared_bytes=2048, num_warps=4, num_stages=2)
    phi = phi_vector(1.0, meta, H100)
    assert phi == pytest.approx((math.log1p(1.0), 32.0, 2.0, 7.0, 100.0))
    # 40 registers: 1280 per warp -> 51 warps -> 12 blocks of 4 warps = 48/64 warps
    assert theoretical_occupancy_pct(40, 0, 4, H100) == pytest.approx(75.0)
    assert all(math.isnan(v) for v in phi_vector(1.0, CompileMeta(), H100)[1:])
    vec = runtime_vector(2.0, 1e6, 2e6, 1e6, meta, 100.0)
    assert vec == pytest.approx((math.log(2.0), math.log(1e6), 2.0, 128.0, 1.0, 100.0))


def test_timing_statistics() -> None:
    assert robust_cv([1.0, 1.0, 1.0, 100.0]) == 0.0  # one outlier does not inflate it
    assert classic_cv([1.0, 1.0, 1.0, 100.0]) > 1.0
    samples = time_cpu([lambda: None, lambda: None], TimingConfig(cpu_reps=3))
    assert [len(s) for s in samples.ms] == [3, 3]


def test_slow_calls_get_short_windows_so_the_time_limit_holds() -> None:
    from live.evaluator.timing import window_for

    config = TimingConfig()  # window 10, max_time_s 2: a window may take 0.5 s
    assert window_for(0.001, config) == 10  # fast kernels: unchanged
    assert window_for(0.05, config) == 10
    assert window_for(0.1, config) == 5
    assert window_for(1.3, config) == 1  # a 665 ms pair of calls: one repetition per window
    assert window_for(0.0, config) == 10


def test_scrubbed_env_drops_credentials_only() -> None:
    env = scrubbed_env(
        {"PATH": "/bin", "OPENAI_API_KEY": "x", "HF_HOME": "/h", "GITHUB_TOKEN": "t",
         "DB_PASSWORD": "p", "MY_SECRET": "s", "CUDA_VISIBLE_DEVICES": "0"},
        {"EXTRA": "1"},
    )
    assert env == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0", "EXTRA": "1"}


def test_exception_classification() -> None:
    from triton.compiler.errors import CompilationError

    compile_error = CompilationError.__new__(CompilationError)
    Exception.__init__(compile_error, "bad tl call")
    compile_error.message = "bad tl call"
    assert classify_exception(compile_error).status == "compile_error"
    outcome = classify_exception(RuntimeError("CUDA error: an illegal memory access was "
                                              "encountered"), "cuda")
    assert outcome.status == "runtime_error" and outcome.recycle
    assert outcome.message.startswith("illegal memory access")


def test_input_cache_hands_out_clones_and_evicts() -> None:
    cache = InputCache(max_bytes=100)
    calls = []

    def make() -> tuple:
        calls.append(1)
        return (torch.zeros(5), 3)  # 20 bytes

    first = cache.get(("a",), make)
    first[0].add_(1)  # a candidate spoils its copy
    second = cache.get(("a",), make)
    assert len(calls) == 1 and torch.equal(second[0], torch.zeros(5)) and second[1] == 3
    for key in "bcdef":
        cache.get((key,), make)
    assert cache.get(("a",), make) is not None and len(calls) == 7  # "a" was evicted


def test_result_validation_and_failure_helper() -> None:
    with pytest.raises(ValueError, match="unknown status"):
        EvalResult(status="great", kernel_id="k", task_id="t")
    result = failure("timeout", "k", "t", "x" * 2000)
    assert len(result.error) == 500 and result.error.endswith("...")
    assert short_error("a\n  b") == "a b"
    assert result.to_dict()["status"] == "timeout"


def test_input_cache_clear_and_held() -> None:
    import torch

    from live.evaluator.run_candidate import InputCache

    cache = InputCache(max_bytes=10_000)
    cache.get(("a",), lambda: (torch.zeros(100),))
    assert cache.held == 400
    cache.clear()
    assert cache.held == 0
    made = []
    cache.get(("a",), lambda: made.append(1) or (torch.zeros(100),))
    assert made == [1]  # built again after clear


def test_timed_and_checked_shapes_of_a_task_with_limits() -> None:
    """D74: the largest shapes (by input bytes) are timed; a candidate is checked on those and
    the smallest, up to the task's limit; without limits, every kept shape."""
    from types import SimpleNamespace

    from live.evaluator.run_candidate import checked_indices, timed_indices

    sizes = (50, 10, 20, 400, 30, 800, 70, 5)
    task = SimpleNamespace(max_timed_shapes=3, max_checked_shapes=5, shape_bytes=sizes)
    kept = [0, 1, 2, 3, 4, 6, 7]  # 5 dropped
    timed = timed_indices(task, kept)
    assert timed == [0, 3, 6]  # 400, 70, 50: the three largest kept
    assert checked_indices(task, [0, 1, 2, 3, 4, 6, 7], timed) == [0, 1, 3, 6, 7]
    assert checked_indices(task, [0, 3], timed) == [0, 3]
    plain = SimpleNamespace(max_timed_shapes=None, max_checked_shapes=None, shape_bytes=None)
    assert timed_indices(plain, kept) == kept
    assert checked_indices(plain, kept, kept) == kept
