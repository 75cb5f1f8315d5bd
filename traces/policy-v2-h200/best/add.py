
import torch
import triton
import triton.language as tl

BLOCK_SIZE = 256


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + alpha * y, mask=mask)


def add(x, y, alpha, out):
    n_elements = x.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_kernel[grid](x, y, out, alpha, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4, num_stages=1)
