"""Embedding lookup: gather rows of an fp16 table by int64 token ids."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin._common import generator, randint, randn

if TYPE_CHECKING:
    import torch

K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_D = 64


@triton.jit
def embedding_kernel(ids_ptr, weight_ptr, out_ptr, dim, stride_weight_row, stride_out_row,
                     BLOCK_D: tl.constexpr):
    token = tl.program_id(0)
    pid_d = tl.program_id(1)
    row = tl.load(ids_ptr + token)
    cols = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < dim
    values = tl.load(weight_ptr + row * stride_weight_row + cols, mask=mask)
    tl.store(out_ptr + token * stride_out_row + cols, values, mask=mask)


def embedding(ids, weight, out):
    n_tokens = ids.numel()
    dim = weight.shape[1]
    grid = (n_tokens, triton.cdiv(dim, BLOCK_D))
    embedding_kernel[grid](
        ids, weight, out, dim, weight.stride(0), out.stride(0),
        BLOCK_D=BLOCK_D, num_warps=4, num_stages=1,
    )
'''


def reference(ids: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.embedding(ids, weight),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    ids = randint(shape["V"], (shape["T"],), gen, device)
    return (ids, randn((shape["V"], shape["D"]), torch.float16, gen, device))


def bytes_moved(shape: dict[str, int]) -> int:
    return 8 * shape["T"] + 2 * 2 * shape["T"] * shape["D"]


def flops(shape: dict[str, int]) -> int:
    return 0


TASK = Task(
    name="embedding",
    description="Embedding gather out[t, :] = weight[ids[t], :] for int64 ids[T] and a "
    "contiguous fp16 table weight[V, D]; out is [T, D]. The entry is embedding(ids, weight, out).",
    category="gather",
    entry="embedding",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"T": 1000, "V": 5000, "D": 100}, {"T": 4096, "V": 32000, "D": 4096}],
    perf_shapes=[{"T": 8192, "V": 32000, "D": 4096}, {"T": 16384, "V": 128256, "D": 4096},
                 {"T": 65536, "V": 50000, "D": 1024}],
    cpu_shapes=[{"T": 10, "V": 50, "D": 100}, {"T": 3, "V": 7, "D": 64}],
    bytes_moved=bytes_moved,
    flops=flops,
)
