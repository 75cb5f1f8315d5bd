import torch
import triton
import triton.language as tl
BLOCK_D = 256

@triton.jit
def embedding_kernel(ids_ptr, weight_ptr, out_ptr, dim, stride_weight_row, stride_out_row, BLOCK_D: tl.constexpr):
    token = tl.program_id(0)
    pid_d = tl.program_id(1)
    row = tl.load(ids_ptr + token)
    cols = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < dim
    values = tl.load(weight_ptr + row * stride_weight_row + cols, mask=mask)
    tl.store(out_ptr + token * stride_out_row + cols, values, mask=mask)

def embedding(ids, weight, out):
    n_tokens = ids.numel()
    dim = weight.shape[1]
    grid = (n_tokens, triton.cdiv(dim, BLOCK_D))
    embedding_kernel[grid](ids, weight, out, dim, weight.stride(0), out.stride(0), BLOCK_D=BLOCK_D, num_warps=1, num_stages=1)
