import torch
import triton
import triton.language as tl
BLOCK_SIZE = 2048

@triton.jit
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = tl.max_contiguous(tl.multiple_of(pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE), BLOCK_SIZE), BLOCK_SIZE)
    mask = offsets < n_elements
    gate = tl.load(gate_ptr + offsets, mask=mask, eviction_policy='evict_last').to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=mask, eviction_policy='evict_last').to(tl.float32)
    silu = gate / (1.0 + tl.exp(-gate))
    tl.store(out_ptr + offsets, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)

def swiglu(gate, up, out):
    n_elements = gate.numel()
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    swiglu_kernel[grid](gate, up, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=8, num_stages=1)
