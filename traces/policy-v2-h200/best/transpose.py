
import torch
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32


@triton.jit
def transpose_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x_row, stride_out_row,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * stride_x_row + cols[None, :], mask=mask)
    # out[c, r] = x[r, c]
    tl.store(out_ptr + cols[None, :] * stride_out_row + rows[:, None], tile, mask=mask)


def transpose(x, out):
    n_rows, n_cols = x.shape
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    transpose_kernel[grid](
        x, out, n_rows, n_cols, x.stride(0), out.stride(0),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=1,
    )
