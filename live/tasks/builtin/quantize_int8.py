"""Row-wise absmax int8 quantization of an fp16 matrix (a reduction then an elementwise map)."""

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
def quantize_kernel(x_ptr, q_ptr, scale_ptr, n_cols, stride_x_row, stride_q_row,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    q_row = q_ptr + row * stride_q_row
    # pass 1: absolute maximum of the row
    running_max = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        running_max = tl.maximum(running_max, tl.abs(x))
    scale = tl.maximum(tl.max(running_max, axis=0), 1e-8) / 127.0
    tl.store(scale_ptr + row, scale)
    # pass 2: quantize, rounding half away from zero
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        v = x / scale
        rounded = tl.where(v >= 0, tl.floor(v + 0.5), -tl.floor(-v + 0.5))
        rounded = tl.minimum(tl.maximum(rounded, -127.0), 127.0)
        tl.store(q_row + cols, rounded.to(tl.int8), mask=mask)


def quantize_int8(x, q, scale):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    quantize_kernel[grid](
        x, q, scale, n_cols, x.stride(0), q.stride(0), BLOCK_N=BLOCK_N, num_warps=4, num_stages=1
    )
'''


def reference(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    x32 = x.float()
    scale = x32.abs().amax(dim=-1).clamp(min=1e-8) / 127.0
    v = x32 / scale[:, None]
    rounded = torch.where(v >= 0, torch.floor(v + 0.5), -torch.floor(-v + 0.5))
    return (rounded.clamp(-127, 127).to(torch.int8), scale)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    return (randn((shape["M"], shape["N"]), torch.float16, generator(seed), device, scale=3.0),)


def bytes_moved(shape: dict[str, int]) -> int:
    return 3 * shape["M"] * shape["N"] + 4 * shape["M"]


def flops(shape: dict[str, int]) -> int:
    return 4 * shape["M"] * shape["N"]


TASK = Task(
    name="quantize_int8",
    description="Row-wise symmetric int8 quantization of x[M, N] fp16: scale[m] = "
    "max(absmax(x[m, :]), 1e-8) / 127 (fp32) and q = clamp(round_half_away_from_zero(x / "
    "scale[m]), -127, 127) as int8. Outputs q[M, N] int8 and scale[M] fp32. The entry is "
    "quantize_int8(x, q, scale).",
    category="quantization",
    entry="quantize_int8",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 100, "N": 1000}, {"M": 513, "N": 4096}],
    perf_shapes=[{"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 16384, "N": 1024}],
    cpu_shapes=[{"M": 3, "N": 300}, {"M": 2, "N": 64}],
    # a GPU's fp32 division may differ from PyTorch's by an ulp, flipping a value that sits on
    # a rounding boundary by one step
    tolerances={"int8": (1.0, 0.0)},
    bytes_moved=bytes_moved,
    flops=flops,
)
