"""Per-row cross-entropy loss of fp32 logits against int64 targets (a vocabulary reduction)."""

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

BLOCK_V = 256


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, loss_ptr, n_vocab, stride_row,
                         BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = logits_ptr + row * stride_row
    # pass 1: the row maximum
    running_max = tl.full([BLOCK_V], float("-inf"), tl.float32)
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(row_ptr + cols, mask=cols < n_vocab, other=float("-inf")).to(tl.float32)
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    # pass 2: log-sum-exp
    running_sum = tl.zeros([BLOCK_V], dtype=tl.float32)
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(row_ptr + cols, mask=cols < n_vocab, other=float("-inf")).to(tl.float32)
        running_sum += tl.exp(x - row_max)
    log_sum_exp = row_max + tl.log(tl.sum(running_sum, axis=0))
    target = tl.load(targets_ptr + row)
    target_logit = tl.load(row_ptr + target).to(tl.float32)
    tl.store(loss_ptr + row, log_sum_exp - target_logit)


def cross_entropy(logits, targets, loss):
    n_rows, n_vocab = logits.shape
    grid = (n_rows,)
    cross_entropy_kernel[grid](
        logits, targets, loss, n_vocab, logits.stride(0), BLOCK_V=BLOCK_V, num_warps=4, num_stages=1
    )
'''


def reference(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.cross_entropy(logits, targets, reduction="none"),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    m, v = shape["M"], shape["V"]
    return (randn((m, v), torch.float32, gen, device, scale=3.0), randint(v, (m,), gen, device))


def bytes_moved(shape: dict[str, int]) -> int:
    return 4 * shape["M"] * shape["V"] + 8 * shape["M"] + 4 * shape["M"]


def flops(shape: dict[str, int]) -> int:
    return 4 * shape["M"] * shape["V"]


TASK = Task(
    name="cross_entropy",
    description="Per-row cross-entropy loss[m] = logsumexp(logits[m, :]) - logits[m, "
    "targets[m]] for fp32 logits[M, V] (V a vocabulary size) and int64 targets[M]; no "
    "reduction over rows. The entry is cross_entropy(logits, targets, loss).",
    category="reduction",
    entry="cross_entropy",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"M": 64, "V": 1000}, {"M": 256, "V": 32000}],
    perf_shapes=[{"M": 4096, "V": 32000}, {"M": 8192, "V": 32000}, {"M": 2048, "V": 128256}],
    cpu_shapes=[{"M": 4, "V": 300}, {"M": 2, "V": 50}],
    bytes_moved=bytes_moved,
    flops=flops,
)
