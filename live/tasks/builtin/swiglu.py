"""SwiGLU gate, out = silu(gate) * up, on bf16 matrices (fused elementwise, DRAM bound)."""

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
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    gate = tl.load(gate_ptr + offsets, mask=mask).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=mask).to(tl.float32)
    silu = gate / (1.0 + tl.exp(-gate))
    tl.store(out_ptr + offsets, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)


def swiglu(gate, up, out):
    n_elements = gate.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    swiglu_kernel[grid](gate, up, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4, num_stages=1)
'''


def reference(gate: torch.Tensor, up: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.silu(gate) * up,)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    m, n = shape["M"], shape["N"]
    return (randn((m, n), torch.bfloat16, gen, device), randn((m, n), torch.bfloat16, gen, device))


def bytes_moved(shape: dict[str, int]) -> int:
    return 3 * 2 * shape["M"] * shape["N"]


def flops(shape: dict[str, int]) -> int:
    return 5 * shape["M"] * shape["N"]


TASK = Task(
    name="swiglu",
    description="SwiGLU activation out = silu(gate) * up for contiguous bf16 matrices "
    "gate[M, N] and up[M, N] (as in LLaMA MLPs); math in fp32. The entry is "
    "swiglu(gate, up, out).",
    category="elementwise",
    entry="swiglu",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 77, "N": 1000}, {"M": 1024, "N": 11008}],
    perf_shapes=[{"M": 4096, "N": 11008}, {"M": 8192, "N": 14336}, {"M": 16384, "N": 4096}],
    cpu_shapes=[{"M": 3, "N": 200}, {"M": 1, "N": 33}],
    bytes_moved=bytes_moved,
    flops=flops,
)
