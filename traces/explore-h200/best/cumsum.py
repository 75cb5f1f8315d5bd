import torch
import triton
import triton.language as tl
BLOCK_N = 1024

@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row
    carry = 0.0
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0, cache_modifier='.cg').to(tl.float32)
        scanned = tl.cumsum(x, axis=0) + carry
        tl.store(out_row + cols, scanned, mask=mask)
        carry += tl.sum(x, axis=0)

def cumsum(x, out):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    cumsum_kernel[grid](x, out, n_cols, x.stride(0), out.stride(0), BLOCK_N=BLOCK_N, num_warps=2, num_stages=3)
