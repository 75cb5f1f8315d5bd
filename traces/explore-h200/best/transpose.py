import torch
import triton
import triton.language as tl
BLOCK_M = 32
BLOCK_N = 64

@triton.jit
def transpose_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x_row, stride_out_row, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    _kb_pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    _kb_grid_m = tl.num_programs(0)
    _kb_grid_n = tl.num_programs(1)
    _kb_group_m = 8
    _kb_width = _kb_group_m * _kb_grid_n
    _kb_first_m = _kb_pid // _kb_width * _kb_group_m
    _kb_group_size = tl.minimum(_kb_grid_m - _kb_first_m, _kb_group_m)
    pid_m = _kb_first_m + _kb_pid % _kb_width % _kb_group_size
    pid_n = _kb_pid % _kb_width // _kb_group_size
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * stride_x_row + cols[None, :], mask=mask, eviction_policy='evict_last')
    tl.store(out_ptr + cols[None, :] * stride_out_row + rows[:, None], tile, mask=mask)

def transpose(x, out):
    n_rows, n_cols = x.shape
    grid = (triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))
    transpose_kernel[grid](x, out, n_rows, n_cols, x.stride(0), out.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=1)
