"""Dense fp16 matrix multiply C = A @ B (fp32 accumulation): the compute-bound regime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin import _matmul

if TYPE_CHECKING:
    pass


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    return _matmul.make_inputs(shape, seed, device, torch.float16)


TASK = Task(
    name="matmul_fp16",
    description="Matrix multiply c[M, N] = a[M, K] @ b[K, N] for contiguous fp16 matrices, "
    "accumulating in fp32 and storing fp16. The entry is matmul(a, b, c).",
    category="matmul",
    entry="matmul",
    k0=_matmul.K0,
    reference=_matmul.reference,
    make_inputs=make_inputs,
    test_shapes=_matmul.TEST_SHAPES,
    perf_shapes=_matmul.PERF_SHAPES,
    cpu_shapes=_matmul.CPU_SHAPES,
    bytes_moved=_matmul.bytes_moved,
    flops=_matmul.flops,
    compute_dtype="float16",
)
