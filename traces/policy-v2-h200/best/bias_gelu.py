import torch
import triton
import triton.language as tl
BLOCK_SIZE = 2048

@triton.jit
def bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(bias_ptr + offsets % n_cols, mask=mask).to(tl.float32)
    h = x + b
    z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    tanh_z = 2.0 / (1.0 + tl.exp(-2.0 * z)) - 1.0
    y = 0.5 * h * (1.0 + tanh_z)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)

def bias_gelu(x, bias, out):
    n_elements = x.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    bias_gelu_kernel[grid](x, bias, out, n_elements, x.shape[-1], BLOCK_SIZE=BLOCK_SIZE, num_warps=8, num_stages=1)
