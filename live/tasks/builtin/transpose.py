"""Out-of-place 2-D transpose of an fp16 matrix (a pure data-layout problem)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin._common import generator, randn

if TYPE_CHECKING:
    import torch

K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32


@triton.jit
def transpose_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x_row, stride_out_row,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * stride_x_row + cols[None, :], mask=mask)
    # out[c, r] = x[r, c]
    tl.store(out_ptr + cols[None, :] * stride_out_row + rows[:, None], tile, mask=mask)


def transpose(x, out):
    n_rows, n_cols = x.shape
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    transpose_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), out.stride(0),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=1,
    )
'''


def reference(x: torch.Tensor) -> tuple[torch.Tensor]:
    return (x.t().contiguous(),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    return (randn((shape["M"], shape["N"]), torch.float16, generator(seed), device),)


def bytes_moved(shape: dict[str, int]) -> int:
    return 2 * 2 * shape["M"] * shape["N"]


def flops(shape: dict[str, int]) -> int:
    return 0


TASK = Task(
    name="transpose",
    description="Out-of-place transpose out[N, M] = x[M, N].T for a contiguous fp16 matrix; "
    "out is contiguous. The entry is transpose(x, out).",
    category="transpose",
    entry="transpose",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 100, "N": 1000}, {"M": 1025, "N": 4097}],
    perf_shapes=[{"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 2048, "N": 16384},
                 {"M": 16384, "N": 1024}],
    cpu_shapes=[{"M": 40, "N": 70}, {"M": 7, "N": 33}],
    bytes_moved=bytes_moved,
    flops=flops,
)
