"""Row softmax over the last dimension of an fp16 matrix (a row reduction, three passes)."""

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

BLOCK_N = 256


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row
    # pass 1: the row maximum
    running_max = tl.full([BLOCK_N], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    # pass 2: the sum of exponentials
    running_sum = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running_sum += tl.exp(x - row_max)
    denominator = tl.sum(running_sum, axis=0)
    # pass 3: normalise and store
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / denominator
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


def softmax(x, out):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    softmax_kernel[grid](
        x, out, n_cols, x.stride(0), out.stride(0), BLOCK_N=BLOCK_N, num_warps=4, num_stages=1
    )
'''


def reference(x: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.softmax(x, dim=-1),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    return (randn((shape["M"], shape["N"]), torch.float16, gen, device, scale=2.0),)


def bytes_moved(shape: dict[str, int]) -> int:
    return 2 * shape["M"] * shape["N"] * 2  # read x, write out (fp16)


def flops(shape: dict[str, int]) -> int:
    return 4 * shape["M"] * shape["N"]  # max, sub+exp, sum, divide


TASK = Task(
    name="softmax",
    description="Row-wise softmax of an fp16 matrix x[M, N] over its last dimension, computed "
    "in fp32 and stored in fp16. The entry is softmax(x, out).",
    category="reduction",
    entry="softmax",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 128, "N": 1000}, {"M": 333, "N": 4096}],
    perf_shapes=[{"M": 4096, "N": 1024}, {"M": 4096, "N": 4096}, {"M": 4096, "N": 8192},
                 {"M": 16384, "N": 2048}],
    cpu_shapes=[{"M": 3, "N": 300}, {"M": 2, "N": 64}],
    bytes_moved=bytes_moved,
    flops=flops,
    tolerances={"float16": (1e-4, 1e-2)},
)
