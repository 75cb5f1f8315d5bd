"""Shared body of the ``matmul_fp16`` and ``matmul_bf16`` tasks: C = A @ B, fp32 accumulation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from live.tasks.builtin._common import generator, randn

if TYPE_CHECKING:
    import torch

K0 = '''
import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, c,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul(a, b, c):
    M, K = a.shape
    _, N = b.shape
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=4, num_stages=1,
    )
'''

TEST_SHAPES = [{"M": 333, "N": 517, "K": 129}, {"M": 1024, "N": 1024, "K": 1024}]
PERF_SHAPES = [{"M": 1024, "N": 1024, "K": 1024}, {"M": 2048, "N": 2048, "K": 2048},
               {"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 1024, "K": 4096}]
CPU_SHAPES = [{"M": 32, "N": 32, "K": 32}, {"M": 45, "N": 37, "K": 29}]


def reference(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor]:
    import torch

    return (torch.matmul(a, b),)


def make_inputs(shape: dict[str, int], seed: int, device: str, dtype: torch.dtype) -> tuple:
    gen = generator(seed)
    # scaled so that entries of C are roughly standard normal whatever K is
    scale = shape["K"] ** -0.25
    return (randn((shape["M"], shape["K"]), dtype, gen, device, scale=scale),
            randn((shape["K"], shape["N"]), dtype, gen, device, scale=scale))


def bytes_moved(shape: dict[str, int]) -> int:
    m, n, k = shape["M"], shape["N"], shape["K"]
    return 2 * (m * k + k * n + m * n)


def flops(shape: dict[str, int]) -> int:
    return 2 * shape["M"] * shape["N"] * shape["K"]
