"""Row-wise int8 dequantization to fp16 (the inverse of ``quantize_int8``)."""

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
def dequantize_kernel(q_ptr, scale_ptr, out_ptr, n_cols, stride_q_row, stride_out_row,
                      BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    pid_n = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    scale = tl.load(scale_ptr + row)
    q = tl.load(q_ptr + row * stride_q_row + cols, mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + row * stride_out_row + cols, (q * scale).to(out_ptr.dtype.element_ty),
             mask=mask)


def dequantize_int8(q, scale, out):
    n_rows, n_cols = q.shape
    grid = (n_rows, triton.cdiv(n_cols, BLOCK_N))
    dequantize_kernel[grid](
        q, scale, out, n_cols, q.stride(0), out.stride(0), BLOCK_N=BLOCK_N, num_warps=4, num_stages=1
    )
'''


def reference(q: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return ((q.float() * scale[:, None]).to(torch.float16),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    m, n = shape["M"], shape["N"]
    q = torch.randint(-127, 128, (m, n), generator=gen, dtype=torch.int8).to(device)
    scale = (0.001 + rand((m,), torch.float32, gen, "cpu") * 0.05).to(device)
    return (q, scale)


def bytes_moved(shape: dict[str, int]) -> int:
    return 3 * shape["M"] * shape["N"] + 4 * shape["M"]


def flops(shape: dict[str, int]) -> int:
    return shape["M"] * shape["N"]


TASK = Task(
    name="dequantize_int8",
    description="Row-wise dequantization out[m, n] = fp16(float(q[m, n]) * scale[m]) for "
    "q[M, N] int8 and scale[M] fp32. The entry is dequantize_int8(q, scale, out).",
    category="quantization",
    entry="dequantize_int8",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 100, "N": 1000}, {"M": 513, "N": 4096}],
    perf_shapes=[{"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 16384, "N": 1024}],
    cpu_shapes=[{"M": 3, "N": 300}, {"M": 2, "N": 64}],
    bytes_moved=bytes_moved,
    flops=flops,
)
