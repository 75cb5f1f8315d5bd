"""Fused bias add + GELU (tanh approximation) on an fp16 activation matrix."""

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

BLOCK_SIZE = 256


@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + offsets % n_cols, mask=mask).to(tl.float32)
    h = x + b
    # gelu(h) = 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))), tanh(z) = 2 sigmoid(2z) - 1
    z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    tanh_z = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0
    y = 0.5 * h * (1.0 + tanh_z)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def bias_gelu(x, bias, out):
    n_elements = x.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    bias_gelu_kernel[grid](
        x, bias, out, n_elements, x.shape[-1], BLOCK_SIZE=BLOCK_SIZE, num_warps=4, num_stages=1
    )
'''


def reference(x: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.gelu(x + bias, approximate="tanh"),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    m, n = shape["M"], shape["N"]
    return (randn((m, n), torch.float16, gen, device), randn((n,), torch.float16, gen, device))


def bytes_moved(shape: dict[str, int]) -> int:
    return 2 * (2 * shape["M"] * shape["N"] + shape["N"])


def flops(shape: dict[str, int]) -> int:
    return 12 * shape["M"] * shape["N"]


TASK = Task(
    name="bias_gelu",
    description="Fused out = gelu(x + bias) with the tanh approximation, x[M, N] fp16 "
    "contiguous and bias[N] fp16 broadcast over rows; math in fp32. The entry is "
    "bias_gelu(x, bias, out).",
    category="elementwise",
    entry="bias_gelu",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 100, "N": 1000}, {"M": 1024, "N": 4096}],
    perf_shapes=[{"M": 4096, "N": 4096}, {"M": 8192, "N": 8192}, {"M": 16384, "N": 11008}],
    cpu_shapes=[{"M": 5, "N": 100}, {"M": 2, "N": 64}],
    bytes_moved=bytes_moved,
    flops=flops,
)
