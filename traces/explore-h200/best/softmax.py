import torch
import triton
import triton.language as tl
BLOCK_N = 1024

@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x_row, stride_out_row, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * stride_x_row
    out_row = out_ptr + row * stride_out_row
    running_max = tl.full([BLOCK_N], float('-inf'), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float('-inf'), cache_modifier='.cg').to(tl.float32)
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)
    running_sum = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float('-inf'), cache_modifier='.ca').to(tl.float32)
        running_sum += tl.exp(x - row_max)
    denominator = tl.sum(running_sum, axis=0)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float('-inf')).to(tl.float32)
        y = tl.exp(x - row_max) / denominator
        tl.store(out_row + cols, y.to(out_ptr.dtype.element_ty), mask=cols < n_cols)

def softmax(x, out):
    n_rows, n_cols = x.shape
    grid = (n_rows,)
    softmax_kernel[grid](x, out, n_cols, x.stride(0), out.stride(0), BLOCK_N=BLOCK_N, num_warps=8, num_stages=1)
