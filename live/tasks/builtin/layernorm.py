"""LayerNorm forward over the last dimension of an fp16 matrix, with weight and bias."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin._common import generator, randn

if TYPE_CHECKING:
    import torch

EPS = 1e-5

K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_N = 256


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, eps,
                     BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row
    # pass 1: mean
    running_sum = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        running_sum += x
    mean = tl.sum(running_sum, axis=0) / n_cols
    # pass 2: variance
    running_sq = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        diff = tl.where(cols < n_cols, x - mean, 0.0)
        running_sq += diff * diff
    rstd = 1.0 / tl.sqrt(tl.sum(running_sq, axis=0) / n_cols + eps)
    # pass 3: normalise, scale, shift
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def layernorm(x, weight, bias, eps, out):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    layernorm_kernel[grid](
        x, weight, bias, out, n_cols, x.stride(0), out.stride(0), eps,
        BLOCK_N=BLOCK_N, num_warps=4, num_stages=1,
    )
'''


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
              eps: float) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    m, n = shape["M"], shape["N"]
    x = randn((m, n), torch.float16, gen, device, scale=2.0)
    weight = (1.0 + randn((n,), torch.float32, gen, "cpu", scale=0.1)).to(torch.float16).to(device)
    bias = randn((n,), torch.float16, gen, device, scale=0.1)
    return (x, weight, bias, EPS)


def bytes_moved(shape: dict[str, int]) -> int:
    return 2 * (2 * shape["M"] * shape["N"] + 2 * shape["N"])


def flops(shape: dict[str, int]) -> int:
    return 8 * shape["M"] * shape["N"]


TASK = Task(
    name="layernorm",
    description="LayerNorm forward y = (x - mean) / sqrt(var + eps) * weight + bias over the "
    "last dimension of x[M, N] fp16 (biased variance, statistics in fp32), weight[N] and "
    "bias[N] fp16, eps a Python float. The entry is layernorm(x, weight, bias, eps, out).",
    category="reduction",
    entry="layernorm",
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
