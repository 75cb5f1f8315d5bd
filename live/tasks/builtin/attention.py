"""Small non-causal attention forward (head dim 64, short sequences), fp16."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from live.tasks.base import Task
from live.tasks.builtin._common import generator, randn

if TYPE_CHECKING:
    import torch

K0 = '''
import math

import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, seq_len, n_heads, sm_scale,
                     stride_b, stride_h, stride_s,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    batch = pid_bh // n_heads
    head = pid_bh % n_heads
    base = batch * stride_b + head * stride_h
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rows[:, None] * stride_s + dims[None, :],
                mask=rows[:, None] < seq_len, other=0.0)
    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + keys[:, None] * stride_s + dims[None, :],
                    mask=keys[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + base + keys[:, None] * stride_s + dims[None, :],
                    mask=keys[:, None] < seq_len, other=0.0)
        scores = tl.dot(q, tl.trans(k)) * sm_scale
        scores = tl.where(keys[None, :] < seq_len, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        correction = tl.exp(row_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        row_sum = row_sum * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max
    out = acc / row_sum[:, None]
    tl.store(out_ptr + base + rows[:, None] * stride_s + dims[None, :],
             out.to(out_ptr.dtype.element_ty), mask=rows[:, None] < seq_len)


def attention(q, k, v, out):
    batch, n_heads, seq_len, head_dim = q.shape
    sm_scale = 1.0 / math.sqrt(head_dim)
    grid = (triton.cdiv(seq_len, BLOCK_M), batch * n_heads)
    attention_kernel[grid](
        q, k, v, out, seq_len, n_heads, sm_scale, q.stride(0), q.stride(1), q.stride(2),
        HEAD_DIM=head_dim, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=1,
    )
'''

HEAD_DIM = 64


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.nn.functional.scaled_dot_product_attention(q, k, v),)


def make_inputs(shape: dict[str, int], seed: int, device: str) -> tuple:
    import torch

    gen = generator(seed)
    dims = (shape["B"], shape["H"], shape["S"], HEAD_DIM)
    return tuple(randn(dims, torch.float16, gen, device) for _ in range(3))


def bytes_moved(shape: dict[str, int]) -> int:
    return 4 * 2 * shape["B"] * shape["H"] * shape["S"] * HEAD_DIM


def flops(shape: dict[str, int]) -> int:
    return 4 * shape["B"] * shape["H"] * shape["S"] * shape["S"] * HEAD_DIM


TASK = Task(
    name="attention",
    description="Non-causal scaled dot-product attention forward out = softmax(q k^T / "
    f"sqrt({HEAD_DIM})) v for contiguous fp16 q, k, v of shape [B, H, S, {HEAD_DIM}] "
    "(batch, heads, sequence, head dim); out has the same shape. The entry is "
    "attention(q, k, v, out).",
    category="attention",
    entry="attention",
    k0=K0,
    reference=reference,
    make_inputs=make_inputs,
    test_shapes=[{"B": 1, "H": 4, "S": 100}, {"B": 2, "H": 8, "S": 1000}],
    perf_shapes=[{"B": 8, "H": 16, "S": 512}, {"B": 4, "H": 16, "S": 1024},
                 {"B": 2, "H": 32, "S": 2048}],
    cpu_shapes=[{"B": 1, "H": 2, "S": 40}],
    bytes_moved=bytes_moved,
    flops=flops,
    compute_dtype="float16",
)

assert math.isclose(1.0 / math.sqrt(HEAD_DIM), 0.125)  # the k0 scale rule matches SDPA's default
