"""Inclusive prefix sum (scan) along the rows of an fp32 matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin._common import generator, rand

if TYPE_CHECKING:
    import torch

K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_N = 256


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row
    carry = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        scanned = tl.cumsum(x, axis=0) + carry
        tl.store(out_row + cols, scanned, mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum(x, out):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    cumsum_kernel[grid](
        x, out, n_cols, x.stride(0), out.stride(0), BLOCK_N=BLOCK_N, num_warps=4, num_stages=1
    )
'''


def reference(x: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.cumsum(x, dim=-1),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    # non-negative values keep the running sums away from zero, where fp32 summation order
    # (sequential in PyTorch, blocked in a scan kernel) would need a large absolute tolerance
    import torch

    return (rand((shape["M"], shape["N"]), torch.float32, generator(seed), device),)


def bytes_moved(shape: dict[str, int]) -> int:
    return 2 * 4 * shape["M"] * shape["N"]


def flops(shape: dict[str, int]) -> int:
    return shape["M"] * shape["N"]


TASK = Task(
    name="cumsum",
    description="Inclusive prefix sum out[m, n] = sum(x[m, :n+1]) along the last dimension of "
    "a contiguous fp32 matrix x[M, N]. The entry is cumsum(x, out).",
    category="scan",
    entry="cumsum",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 100, "N": 1000}, {"M": 1024, "N": 4096}],
    perf_shapes=[{"M": 4096, "N": 1024}, {"M": 4096, "N": 8192}, {"M": 65536, "N": 256},
                 {"M": 256, "N": 65536}],
    cpu_shapes=[{"M": 3, "N": 600}, {"M": 2, "N": 40}],
    bytes_moved=bytes_moved,
    flops=flops,
)
