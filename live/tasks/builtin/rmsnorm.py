"""RMSNorm forward over the last dimension of a bf16 matrix, with a weight."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin._common import generator, randn

if TYPE_CHECKING:
    import torch

EPS = 1e-6

K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_N = 256


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, eps,
                   BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row
    # pass 1: mean of squares
    running_sq = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        running_sq += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(running_sq, axis=0) / n_cols + eps)
    # pass 2: normalise and scale
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, weight, eps, out):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    rmsnorm_kernel[grid](
        x, weight, out, n_cols, x.stride(0), out.stride(0), eps,
        BLOCK_N=BLOCK_N, num_warps=4, num_stages=1,
    )
'''


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    m, n = shape["M"], shape["N"]
    x = randn((m, n), torch.bfloat16, gen, device)
    weight = (1.0 + randn((n,), torch.float32, gen, "cpu", scale=0.1)).to(torch.bfloat16).to(device)
    return (x, weight, EPS)


def bytes_moved(shape: dict[str, int]) -> int:
    return 2 * (2 * shape["M"] * shape["N"] + shape["N"])


def flops(shape: dict[str, int]) -> int:
    return 4 * shape["M"] * shape["N"]


TASK = Task(
    name="rmsnorm",
    description="RMSNorm forward y = x / sqrt(mean(x^2) + eps) * weight over the last dimension "
    "of x[M, N] bf16 (statistics in fp32), weight[N] bf16, eps a Python float. The entry is "
    "rmsnorm(x, weight, eps, out).",
    category="reduction",
    entry="rmsnorm",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 100, "N": 1000}, {"M": 513, "N": 4096}],
    perf_shapes=[{"M": 4096, "N": 1024}, {"M": 4096, "N": 4096}, {"M": 4096, "N": 8192},
                 {"M": 16384, "N": 2048}],
    cpu_shapes=[{"M": 3, "N": 300}, {"M": 2, "N": 64}],
    bytes_moved=bytes_moved,
    flops=flops,
)
