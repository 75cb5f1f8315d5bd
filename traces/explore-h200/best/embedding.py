import torch
import triton
import triton.language as tl
BLOCK_D = 512

@triton.jit
def embedding_kernel(ids_ptr, weight_ptr, out_ptr, dim, stride_weight_row, stride_out_row, BLOCK_D: tl.constexpr):
    _kb_pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    _kb_grid_m = tl.num_programs(0)
    _kb_grid_n = tl.num_programs(1)
    _kb_group_m = 16
    _kb_width = _kb_group_m * _kb_grid_n
    _kb_first_m = _kb_pid // _kb_width * _kb_group_m
    _kb_group_size = tl.minimum(_kb_grid_m - _kb_first_m, _kb_group_m)
    token = _kb_first_m + _kb_pid % _kb_width % _kb_group_size
    pid_d = _kb_pid % _kb_width // _kb_group_size
    row = tl.load(ids_ptr + token)
    cols = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < dim
    values = tl.load(weight_ptr + row * stride_weight_row + cols, mask=mask)
    tl.store(out_ptr + token * stride_out_row + cols, values, mask=mask)

def embedding(ids, weight, out):
    n_tokens = ids.numel()
    dim = weight.shape[1]
    grid = (n_tokens, triton.cdiv(dim, BLOCK_D))
    embedding_kernel[grid](ids, weight, out, dim, weight.stride(0), out.stride(0), BLOCK_D=BLOCK_D, num_warps=4, num_stages=1)
