import torch
import triton
import triton.language as tl
BLOCK_M = 128
BLOCK_N = 32
BLOCK_K = 32

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    _kb_pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    _kb_grid_m = tl.num_programs(0)
    _kb_grid_n = tl.num_programs(1)
    _kb_group_m = 4
    _kb_width = _kb_group_m * _kb_grid_n
    _kb_first_m = _kb_pid // _kb_width * _kb_group_m
    _kb_group_size = tl.minimum(_kb_grid_m - _kb_first_m, _kb_group_m)
    pid_m = _kb_first_m + _kb_pid % _kb_width % _kb_group_size
    pid_n = _kb_pid % _kb_width // _kb_group_size
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        ks = k_start + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak, mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn, mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, c, mask=(rows[:, None] < M) & (cols[None, :] < N))

def matmul(a, b, c):
    M, K = a.shape
    _, N = b.shape
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=1, num_stages=1)
