# k0 from torch.compile (inductor): torch 2.11.0+cu130, default mode, level1/40_LayerNorm
# the problem's own code: ModelNew builds Model's parameters
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs Layer Normalization.
    """
    def __init__(self, normalized_shape: tuple):
        """
        Initializes the LayerNorm layer.

        Args:
            normalized_shape (tuple): Shape of the input tensor to be normalized.
        """
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Layer Normalization to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (*, normalized_shape).

        Returns:
            torch.Tensor: Output tensor with Layer Normalization applied, same shape as input.
        """
        return self.ln(x)

batch_size = 16
features = 64
dim1 = 256
dim2 = 256

def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]

def get_init_inputs():
    return [(features, dim1, dim2)]

# what the generated module needs, less its compile machinery
import torch
import math
import random
import os
import tempfile
from math import inf, nan
from cmath import nanj
from torch._inductor.hooks import run_intermediate_hooks
from torch._inductor.utils import maybe_profile
from torch._inductor.codegen.memory_planning import _align as align
from torch import device, empty_strided
from torch._inductor.select_algorithm import extern_kernels
import triton
import triton.language as tl
from torch._inductor.runtime.triton_heuristics import start_graph, end_graph
from torch._C import _cuda_getCurrentRawStream as get_raw_stream
aten = torch.ops.aten
inductor_ops = torch.ops.inductor
_quantized = torch.ops._quantized
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
assert_alignment = torch._C._dynamo.guards.assert_alignment
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
empty_strided_cpu_pinned = torch._C._dynamo.guards._empty_strided_cpu_pinned
empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda
empty_strided_xpu = torch._C._dynamo.guards._empty_strided_xpu
empty_strided_mtia = torch._C._dynamo.guards._empty_strided_mtia
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
alloc_from_pool = torch.ops.inductor._alloc_from_pool
empty_strided_p2p = torch._C._distributed_c10d._SymmetricMemory.empty_strided_p2p
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties


@triton.jit
def triton_red_fused_native_layer_norm_0(in_ptr0, out_ptr0, out_ptr1, out_ptr2, xnumel, r0_numel, BLOCK_X: tl.constexpr, R0_BLOCK: tl.constexpr):
    xnumel = 512
    r0_numel = 131072
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    rbase = r0_base
    x0 = xindex
    tmp2_mean = tl.zeros([BLOCK_X, R0_BLOCK], tl.float32)
    tmp2_m2 = tl.zeros([BLOCK_X, R0_BLOCK], tl.float32)
    tmp2_weight = tl.zeros([BLOCK_X, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + 131072 * x0), xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [BLOCK_X, R0_BLOCK])
        tmp2_mean_next, tmp2_m2_next, tmp2_weight_next = triton_helpers.welford_reduce(tmp1, tmp2_mean, tmp2_m2, tmp2_weight, roffset == 0)
        tmp2_mean = tl.where(xmask, tmp2_mean_next, tmp2_mean)
        tmp2_m2 = tl.where(xmask, tmp2_m2_next, tmp2_m2)
        tmp2_weight = tl.where(xmask, tmp2_weight_next, tmp2_weight)
    tmp3, tmp4, tmp5 = triton_helpers.welford(tmp2_mean, tmp2_m2, tmp2_weight, 1)
    tmp2 = tmp3[:, None]
    tmp6 = tmp4[:, None]
    tmp7 = tmp5[:, None]
    tl.store(out_ptr0 + x0, tmp2, xmask)
    tl.store(out_ptr1 + x0, tmp6, xmask)
    tl.store(out_ptr2 + x0, tmp7, xmask)


@triton.jit
def triton_per_fused_native_layer_norm_1(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, xnumel, r0_numel, BLOCK_X: tl.constexpr):
    xnumel = 16
    r0_numel = 32
    R0_BLOCK: tl.constexpr = 32
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_offset = 0
    r0_mask = tl.full([R0_BLOCK], True, tl.int1)[None, :]
    roffset = r0_offset
    rindex = r0_index
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 32 * x0), xmask, other=0.0)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 32 * x0), xmask, other=0.0)
    tmp2 = tl.load(in_ptr2 + (r0_1 + 32 * x0), xmask, other=0.0)
    tmp3 = tl.broadcast_to(tmp0, [BLOCK_X, R0_BLOCK])
    tmp4 = tl.broadcast_to(tmp1, [BLOCK_X, R0_BLOCK])
    tmp5 = tl.broadcast_to(tmp2, [BLOCK_X, R0_BLOCK])
    tmp7 = tl.where(xmask, tmp3, 0)
    tmp8 = tl.where(xmask, tmp4, 0)
    tmp9 = tl.where(xmask, tmp5, 0)
    tmp10, tmp11, tmp12 = triton_helpers.welford(tmp7, tmp8, tmp9, 1)
    tmp13 = tmp10[:, None]
    tmp14 = tmp11[:, None]
    tmp15 = tmp12[:, None]
    tl.store(out_ptr0 + x0, tmp13, xmask)
    tl.store(out_ptr1 + x0, tmp14, xmask)


@triton.jit
def triton_poi_fused_native_layer_norm_2(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, out_ptr0, xnumel, BLOCK_X: tl.constexpr):
    xnumel = 67108864
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:]
    xmask = tl.full([BLOCK_X], True, tl.int1)[:]
    x2 = xindex
    x1 = xindex // 4194304
    x0 = xindex % 4194304
    tmp0 = tl.load(in_ptr0 + x2, None)
    tmp1 = tl.load(in_ptr1 + x1, None, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr2 + x1, None, eviction_policy='evict_last')
    tmp10 = tl.load(in_ptr3 + x0, None, eviction_policy='evict_last')
    tmp12 = tl.load(in_ptr4 + x0, None, eviction_policy='evict_last')
    tmp2 = tmp0 - tmp1
    tmp4 = tl.full([1], 4194304.0, tl.float32)
    tmp5 = tmp3 / tmp4
    tmp6 = tl.full([1], 1e-05, tl.float32)
    tmp7 = tmp5 + tmp6
    tmp8 = libdevice.rsqrt(tmp7)
    tmp9 = tmp2 * tmp8
    tmp11 = tmp9 * tmp10
    tmp13 = tmp11 + tmp12
    tl.store(out_ptr0 + x2, tmp13, None)


def _inductor_call(args):
    arg0_1, arg1_1, arg2_1 = args
    args.clear()
    assert_size_stride(arg0_1, (64, 256, 256), (65536, 256, 1))
    assert_size_stride(arg1_1, (64, 256, 256), (65536, 256, 1))
    assert_size_stride(arg2_1, (16, 64, 256, 256), (4194304, 65536, 256, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((16, 1, 1, 1, 32), (32, 512, 512, 512, 1), torch.float32)
        buf1 = empty_strided_cuda((16, 1, 1, 1, 32), (32, 512, 512, 512, 1), torch.float32)
        buf2 = empty_strided_cuda((16, 1, 1, 1, 32), (32, 512, 512, 512, 1), torch.float32)
        triton_red_fused_native_layer_norm_0[lambda meta: (triton.cdiv(512, meta['BLOCK_X']),)](arg2_1, buf0, buf1, buf2, 512, 131072, BLOCK_X=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
        buf3 = empty_strided_cuda((16, 1, 1, 1), (1, 16, 16, 16), torch.float32)
        buf4 = empty_strided_cuda((16, 1, 1, 1), (1, 16, 16, 16), torch.float32)
        triton_per_fused_native_layer_norm_1[lambda meta: (triton.cdiv(16, meta['BLOCK_X']),)](buf0, buf1, buf2, buf3, buf4, 16, 32, BLOCK_X=8, num_warps=2, num_stages=1)
        del buf0
        del buf1
        del buf2
        buf6 = empty_strided_cuda((16, 64, 256, 256), (4194304, 65536, 256, 1), torch.float32)
        triton_poi_fused_native_layer_norm_2[lambda meta: (triton.cdiv(67108864, meta['BLOCK_X']),)](arg2_1, buf3, buf4, arg0_1, arg1_1, buf6, 67108864, BLOCK_X=1024, num_warps=4, num_stages=1)
        del arg0_1
        del arg1_1
        del arg2_1
        del buf3
        del buf4
    return (buf6,)


class ModelNew(Model):
    """Model's computation as torch.compile's generated Triton kernels."""

    def forward(self, x: torch.Tensor):
        outputs = _inductor_call([self._modules['ln']._parameters['weight'], self._modules['ln']._parameters['bias'], x])
        return outputs[0]
