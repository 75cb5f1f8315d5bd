import torch
import triton
import triton.language as tl
BLOCK_SIZE = 1024

@triton.jit
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    gate = tl.load(gate_ptr + offsets, mask=mask).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=mask).to(tl.float32)
    silu = gate / (1.0 + tl.exp(-gate))
    tl.store(out_ptr + offsets, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)

def swiglu(gate, up, out):
    n_elements = gate.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    swiglu_kernel[grid](gate, up, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4, num_stages=1)
