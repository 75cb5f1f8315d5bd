"""Small tasks and kernels (in the built-in tasks' mutate-friendly style) for proposer tests."""

from __future__ import annotations

import torch

from live.proposers.base import ParentInfo
from live.tasks.base import Task

ADD_K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 256


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y, out):
    n_elements = out.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
'''

AUTOTUNED_ADD_K0 = '''
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK_SIZE": 128}, num_warps=4),
             triton.Config({"BLOCK_SIZE": 512}, num_warps=8, num_stages=2)],
    key=["n_elements"],
)
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    acc = tl.load(x_ptr + offsets, mask=mask)
    for _ in range(2):
        acc += tl.load(y_ptr + offsets, mask=mask) * 0.5
    tl.store(out_ptr + offsets, acc, mask=mask)


def add(x, y, out):
    n_elements = out.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n_elements)
'''

MATMUL_K0 = '''
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, c,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a, b, c):
    M, K = a.shape
    _, N = b.shape
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=16)
'''

SOFTMAX_K0 = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


def softmax(x, out):
    n_rows, n_cols = x.shape
    BLOCK = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK=BLOCK)
'''


def _add_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    g = torch.Generator().manual_seed(seed)
    n = shape["N"]
    return (torch.randn(n, generator=g).to(device), torch.randn(n, generator=g).to(device))


def _matmul_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape["M"], shape["K"], generator=g)
    b = torch.randn(shape["K"], shape["N"], generator=g)
    return (a.to(device), b.to(device))


def _softmax_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape["R"], shape["C"], generator=g).to(device),)


def _add_ref(x, y):
    return (x + y,)


def _matmul_ref(a, b):
    return (a @ b,)


def _softmax_ref(x):
    return (torch.softmax(x, dim=-1),)


def make_task(name: str, k0: str, entry: str, reference, make_inputs, cpu_shapes) -> Task:
    return Task(
        name=name,
        description=f"Fixture task {name}.",
        category="fixture",
        entry=entry,
        k0=k0,
        reference=reference,
        make_inputs=make_inputs,
        test_shapes=cpu_shapes,
        perf_shapes=cpu_shapes,
        cpu_shapes=cpu_shapes,
        tolerances={"float32": (1e-3, 1e-3)},
    )


ADD_TASK = make_task("add", ADD_K0, "add", _add_ref, _add_inputs, [{"N": 1000}, {"N": 37}])
MATMUL_TASK = make_task(
    "matmul", MATMUL_K0, "matmul", _matmul_ref, _matmul_inputs, [{"M": 48, "N": 40, "K": 72}]
)
SOFTMAX_TASK = make_task(
    "softmax", SOFTMAX_K0, "softmax", _softmax_ref, _softmax_inputs, [{"R": 5, "C": 100}]
)
FIXTURE_TASKS = (ADD_TASK, MATMUL_TASK, SOFTMAX_TASK)
#: autotuned: runs on a GPU only (Triton's autotuner needs a driver; the interpreter has none)
AUTOTUNED_ADD_TASK = make_task("autotuned_add", AUTOTUNED_ADD_K0, "add", _add_ref, _add_inputs,
                               [{"N": 1000}, {"N": 37}, {"N": 1 << 20}])


def parent_of(task: Task, **overrides) -> ParentInfo:
    base = dict(
        kernel_id="k0",
        code=task.k0,
        ms=1.5,
        ref_ms=1.2,
        profile={"sm_pct": 31.0, "dram_pct": 88.0, "l2_pct": 40.0},
        meta={"registers": 32, "shared_bytes": 0, "num_warps": 4, "num_stages": 3},
    )
    base.update(overrides)
    return ParentInfo(**base)


def run_candidate(task: Task, code: str, seed: int = 0) -> None:
    """Import ``code`` as a module and check it against the task's reference on cpu_shapes
    (TRITON_INTERPRET=1 must be set before triton is imported). Raises AssertionError."""
    import hashlib
    import importlib.util
    import tempfile
    from pathlib import Path

    # triton.jit reads kernel source with inspect, so the module must live in a real file
    digest = hashlib.sha256(code.encode()).hexdigest()[:12]
    folder = Path(tempfile.mkdtemp(prefix="kb-candidate-"))
    path = folder / f"cand_{task.name}_{digest}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for shape in task.cpu_shapes:
        inputs = task.make_inputs(shape, seed, "cpu")
        expected = task.reference(*inputs)
        outputs = tuple(torch.full_like(e, float("nan")) for e in expected)
        got = task.call(module, inputs, outputs)
        for g, e in zip(got, expected, strict=True):
            atol, rtol = task.tolerance(str(e.dtype))
            torch.testing.assert_close(g, e, atol=atol, rtol=rtol)
