"""Elementwise scaled add, out = x + alpha * y, on fp32 vectors (pure DRAM bandwidth)."""

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
def add_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + alpha * y, mask=mask)


def add(x, y, alpha, out):
    n_elements = x.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, out, alpha, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4, num_stages=1)
'''


def reference(x: torch.Tensor, y: torch.Tensor, alpha: float) -> tuple[torch.Tensor]:
    import torch

    return (torch.add(x, y, alpha=alpha),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    n = shape["N"]
    return (randn((n,), torch.float32, gen, device), randn((n,), torch.float32, gen, device), 0.5)


def bytes_moved(shape: dict[str, int]) -> int:
    return 3 * 4 * shape["N"]


def flops(shape: dict[str, int]) -> int:
    return 2 * shape["N"]


TASK = Task(
    name="add",
    description="Elementwise out = x + alpha * y on contiguous fp32 vectors of length N, with "
    "alpha a Python float. The entry is add(x, y, alpha, out).",
    category="elementwise",
    entry="add",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"N": 1000}, {"N": 1 << 20}, {"N": 3_000_017}],
    perf_shapes=[{"N": 1 << 22}, {"N": 1 << 24}, {"N": 1 << 26}],
    cpu_shapes=[{"N": 1000}, {"N": 37}],
    bytes_moved=bytes_moved,
    flops=flops,
)
