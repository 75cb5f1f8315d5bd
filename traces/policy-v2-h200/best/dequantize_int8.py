import torch
import triton
import triton.language as tl
BLOCK_N = 1024

@triton.jit
def dequantize_kernel(q_ptr, scale_ptr, out_ptr, n_cols, stride_q_row, stride_out_row, BLOCK_N: tl.constexpr):
    _kb_pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    _kb_grid_m = tl.num_programs(0)
    _kb_grid_n = tl.num_programs(1)
    _kb_group_m = 4
    _kb_width = _kb_group_m * _kb_grid_n
    _kb_first_m = _kb_pid // _kb_width * _kb_group_m
    _kb_group_size = tl.minimum(_kb_grid_m - _kb_first_m, _kb_group_m)
    row = _kb_first_m + _kb_pid % _kb_width % _kb_group_size
    pid_n = _kb_pid % _kb_width // _kb_group_size
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    scale = tl.load(scale_ptr + row)
    q = tl.load(q_ptr + row * stride_q_row + cols, mask=mask, other=0).to(tl.float32)
    tl.store(out_ptr + row * stride_out_row + cols, (q * scale).to(out_ptr.dtype.element_ty), mask=mask)

def dequantize_int8(q, scale, out):
    n_rows, n_cols = q.shape
    grid = (n_rows, triton.cdiv(n_cols, BLOCK_N))
    dequantize_kernel[grid](q, scale, out, n_cols, q.stride(0), out.stride(0), BLOCK_N=BLOCK_N, num_warps=1, num_stages=1)
