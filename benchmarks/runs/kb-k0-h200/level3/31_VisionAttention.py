# k0 from torch.compile (inductor): torch 2.11.0+cu130, default mode, level3/31_VisionAttention
# the problem's own code: ModelNew builds Model's parameters
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, embed_dim, num_heads):
        """
        Attention Block using Multihead Self-Attention.
        :param embed_dim: Embedding dimension (the number of channels)
        :param num_heads: Number of attention heads
        """
        super(Model, self).__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        """
        Forward pass of the AttentionBlock.
        :param x: Input tensor of shape (B, C, H, W)
        :return: Output tensor of the same shape (B, C, H, W)
        """
        B, C, H, W = x.shape
        x = x.view(B, C, H * W).permute(2, 0, 1)  # (seq_len, batch_size, embed_dim)
        attn_output, _ = self.attn(x, x, x)
        x = self.norm(attn_output + x)  # (seq_len, batch_size, embed_dim)
        x = x.permute(1, 2, 0).view(B, C, H, W)
        return x

embed_dim = 128
num_heads = 4
batch_size = 2
num_channels = embed_dim
image_height = 128
image_width = 128

def get_inputs():
    return [torch.rand(batch_size, num_channels, image_height, image_width)]

def get_init_inputs():
    return [embed_dim, num_heads]

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
def triton_poi_fused_clone_permute_view_0(in_ptr0, out_ptr0, ynumel, xnumel, BLOCK_Y: tl.constexpr, BLOCK_X: tl.constexpr):
    ynumel = 16384
    xnumel = 256
    yoffset = tl.program_id(1) * BLOCK_Y
    yindex = yoffset + tl.arange(0, BLOCK_Y)[:, None]
    ymask = tl.full([BLOCK_Y], True, tl.int1)[:, None]
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[None, :]
    xmask = xindex < xnumel
    x1 = xindex
    y0 = yindex
    tmp0 = tl.load(in_ptr0 + (y0 + 16384 * x1), xmask, eviction_policy='evict_last')
    tl.store(out_ptr0 + (x1 + 256 * y0), tmp0, xmask)


@triton.jit
def triton_poi_fused__unsafe_view_add_clone_mul_select_squeeze_transpose_unsqueeze_view_1(in_ptr0, in_ptr1, out_ptr0, xnumel, BLOCK_X: tl.constexpr):
    xnumel = 4194304
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:]
    xmask = tl.full([BLOCK_X], True, tl.int1)[:]
    x0 = xindex % 256
    x1 = xindex // 256
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (384 * (x0 // 128) + 768 * x1 + x0 % 128), None)
    tmp1 = tl.load(in_ptr1 + x2 % 128, None, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0.1767766952966369, tl.float32)
    tmp4 = tmp2 * tmp3
    tl.store(out_ptr0 + x2, tmp4, None)


@triton.jit
def triton_poi_fused__unsafe_view_add_clone_squeeze_transpose_unsqueeze_view_2(in_ptr0, in_ptr1, out_ptr0, xnumel, BLOCK_X: tl.constexpr):
    xnumel = 12582912
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:]
    xmask = tl.full([BLOCK_X], True, tl.int1)[:]
    x0 = xindex % 128
    x1 = xindex // 128 % 32768
    x2 = xindex // 4194304
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 128 * x2 + 384 * x1), None)
    tmp1 = tl.load(in_ptr1 + (x0 + 128 * x2), None, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tl.store(out_ptr0 + x3, tmp2, None)


@triton.jit
def triton_poi_fused__unsafe_view_add_bmm_clone_mul_select_squeeze_transpose_unsqueeze_view_3(in_ptr0, out_ptr0, xnumel, BLOCK_X: tl.constexpr):
    xnumel = 4194304
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:]
    xmask = tl.full([BLOCK_X], True, tl.int1)[:]
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (4194304 + x2), None)
    tl.store(out_ptr0 + x2, tmp0, None)


@triton.jit
def triton_red_fused__softmax_exp_prepare_softmax_online_sub_4(in_out_ptr0, xnumel, r0_numel, BLOCK_X: tl.constexpr, R0_BLOCK: tl.constexpr):
    xnumel = 131072
    r0_numel = 16384
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0).to(tl.int64) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:, None].to(tl.int64)
    xmask = tl.full([BLOCK_X], True, tl.int1)[:, None]
    r0_base = tl.arange(0, R0_BLOCK)[None, :].to(tl.int64)
    rbase = r0_base
    x0 = xindex
    _tmp2_max = tl.full([BLOCK_X, R0_BLOCK], float('-inf'), tl.float32)
    _tmp2_sum = tl.zeros([BLOCK_X, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp0 = tl.load(in_out_ptr0 + (r0_1 + 16384 * x0), r0_mask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [BLOCK_X, R0_BLOCK])
        _tmp2_max_next, _tmp2_sum_next = triton_helpers.online_softmax_combine(_tmp2_max, _tmp2_sum, tmp1, False)
        _tmp2_max = tl.where(r0_mask, _tmp2_max_next, _tmp2_max)
        _tmp2_sum = tl.where(r0_mask, _tmp2_sum_next, _tmp2_sum)
    tmp2, tmp3 = triton_helpers.online_softmax_reduce(_tmp2_max, _tmp2_sum, 1, False)
    tmp2 = tmp2[:, None]
    tmp3 = tmp3[:, None]
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_1 = r0_index
        tmp4 = tl.load(in_out_ptr0 + (r0_1 + 16384 * x0), r0_mask, eviction_policy='evict_first', other=0.0)
        tmp5 = tmp4 - tmp2
        tmp6 = libdevice.exp(tmp5)
        tmp7 = tmp6 / tmp3
        tl.store(in_out_ptr0 + (r0_1 + 16384 * x0), tmp7, r0_mask)


@triton.jit
def triton_poi_fused_clone_transpose_5(in_ptr0, out_ptr0, xnumel, BLOCK_X: tl.constexpr):
    xnumel = 4194304
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:]
    xmask = tl.full([BLOCK_X], True, tl.int1)[:]
    x0 = xindex % 32
    x1 = xindex // 32 % 8
    x2 = xindex // 256
    x3 = xindex
    tmp0 = tl.load(in_ptr0 + (x0 + 32 * x2 + 524288 * x1), None)
    tl.store(out_ptr0 + x3, tmp0, None)


@triton.jit
def triton_red_fused_add_addmm_native_layer_norm_permute_view_6(in_ptr0, in_ptr1, in_ptr2, out_ptr0, out_ptr1, ynumel, xnumel, r0_numel, BLOCK_Y: tl.constexpr, BLOCK_X: tl.constexpr, R0_BLOCK: tl.constexpr):
    ynumel = 16384
    xnumel = 2
    r0_numel = 128
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    yoffset = tl.program_id(1) * BLOCK_Y
    yindex = yoffset + tl.arange(0, BLOCK_Y)[:, None, None]
    ymask = tl.full([BLOCK_Y], True, tl.int1)[:, None, None]
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[None, :, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, None, :]
    rbase = r0_base
    x1 = xindex
    y0 = yindex
    tmp6_mean = tl.zeros([BLOCK_Y, BLOCK_X, R0_BLOCK], tl.float32)
    tmp6_m2 = tl.zeros([BLOCK_Y, BLOCK_X, R0_BLOCK], tl.float32)
    tmp6_weight = tl.zeros([BLOCK_Y, BLOCK_X, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        roffset = r0_offset
        rindex = r0_index
        r0_2 = r0_index
        tmp0 = tl.load(in_ptr0 + r0_2, r0_mask, eviction_policy='evict_last', other=0.0)
        tmp1 = tl.load(in_ptr1 + (r0_2 + 128 * x1 + 256 * y0), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp3 = tl.load(in_ptr2 + (y0 + 16384 * r0_2 + 2097152 * x1), r0_mask & xmask, eviction_policy='evict_last', other=0.0)
        tmp2 = tmp0 + tmp1
        tmp4 = tmp2 + tmp3
        tmp5 = tl.broadcast_to(tmp4, [BLOCK_Y, BLOCK_X, R0_BLOCK])
        tmp6_mean_next, tmp6_m2_next, tmp6_weight_next = triton_helpers.welford_reduce(tmp5, tmp6_mean, tmp6_m2, tmp6_weight, roffset == 0)
        tmp6_mean = tl.where(r0_mask & xmask, tmp6_mean_next, tmp6_mean)
        tmp6_m2 = tl.where(r0_mask & xmask, tmp6_m2_next, tmp6_m2)
        tmp6_weight = tl.where(r0_mask & xmask, tmp6_weight_next, tmp6_weight)
    tmp7, tmp8, tmp9 = triton_helpers.welford(tmp6_mean, tmp6_m2, tmp6_weight, 2)
    tmp6 = tmp7[:, :, None]
    tmp10 = tmp8[:, :, None]
    tmp11 = tmp9[:, :, None]
    tl.store(out_ptr0 + (x1 + 2 * y0), tmp6, xmask)
    tl.store(out_ptr1 + (x1 + 2 * y0), tmp10, xmask)


@triton.jit
def triton_poi_fused_add_addmm_native_layer_norm_permute_view_7(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, ynumel, xnumel, BLOCK_Y: tl.constexpr, BLOCK_X: tl.constexpr):
    ynumel = 16384
    xnumel = 256
    yoffset = tl.program_id(1) * BLOCK_Y
    yindex = yoffset + tl.arange(0, BLOCK_Y)[:, None]
    ymask = tl.full([BLOCK_Y], True, tl.int1)[:, None]
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[None, :]
    xmask = xindex < xnumel
    x1 = xindex % 128
    x3 = xindex
    y0 = yindex
    x2 = xindex // 128
    tmp0 = tl.load(in_ptr0 + x1, xmask, eviction_policy='evict_last')
    tmp1 = tl.load(in_out_ptr0 + (x3 + 256 * y0), xmask, eviction_policy='evict_last')
    tmp3 = tl.load(in_ptr1 + (y0 + 16384 * x3), xmask, eviction_policy='evict_last')
    tmp5 = tl.load(in_ptr2 + (x2 + 2 * y0), xmask, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr3 + (x2 + 2 * y0), xmask, eviction_policy='evict_last')
    tmp14 = tl.load(in_ptr4 + x1, xmask, eviction_policy='evict_last')
    tmp16 = tl.load(in_ptr5 + x1, xmask, eviction_policy='evict_last')
    tmp2 = tmp0 + tmp1
    tmp4 = tmp2 + tmp3
    tmp6 = tmp4 - tmp5
    tmp8 = tl.full([1, 1], 128.0, tl.float32)
    tmp9 = tmp7 / tmp8
    tmp10 = tl.full([1, 1], 1e-05, tl.float32)
    tmp11 = tmp9 + tmp10
    tmp12 = libdevice.rsqrt(tmp11)
    tmp13 = tmp6 * tmp12
    tmp15 = tmp13 * tmp14
    tmp17 = tmp15 + tmp16
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (x3 + 256 * y0), tmp17, xmask)


def _inductor_call(args):
    arg0_1, arg1_1, arg2_1, arg3_1, arg4_1, arg5_1, arg6_1 = args
    args.clear()
    assert_size_stride(arg0_1, (2, 128, 128, 128), (2097152, 16384, 128, 1))
    assert_size_stride(arg1_1, (384,), (1,))
    assert_size_stride(arg2_1, (384, 128), (128, 1))
    assert_size_stride(arg3_1, (128, 128), (128, 1))
    assert_size_stride(arg4_1, (128,), (1,))
    assert_size_stride(arg5_1, (128,), (1,))
    assert_size_stride(arg6_1, (128,), (1,))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((16384, 2, 128), (256, 128, 1), torch.float32)
        triton_poi_fused_clone_permute_view_0[lambda meta: (triton.cdiv(256, meta['BLOCK_X']), triton.cdiv(16384, meta['BLOCK_Y']))](arg0_1, buf0, 16384, 256, BLOCK_Y=32, BLOCK_X=32, num_warps=4, num_stages=1)
        buf1 = empty_strided_cuda((32768, 384), (384, 1), torch.float32)
        extern_kernels.mm(reinterpret_tensor(buf0, (32768, 128), (128, 1), 0), reinterpret_tensor(arg2_1, (128, 384), (1, 128), 0), out=buf1)
        del arg2_1
        buf2 = reinterpret_tensor(buf0, (8, 16384, 32), (32, 256, 1), 0)
        del buf0
        triton_poi_fused__unsafe_view_add_clone_mul_select_squeeze_transpose_unsqueeze_view_1[lambda meta: (triton.cdiv(4194304, meta['BLOCK_X']),)](buf1, arg1_1, buf2, 4194304, BLOCK_X=1024, num_warps=4, num_stages=1)
        buf3 = empty_strided_cuda((3, 16384, 2, 128), (4194304, 256, 128, 1), torch.float32)
        triton_poi_fused__unsafe_view_add_clone_squeeze_transpose_unsqueeze_view_2[lambda meta: (triton.cdiv(12582912, meta['BLOCK_X']),)](buf1, arg1_1, buf3, 12582912, BLOCK_X=1024, num_warps=4, num_stages=1)
        del arg1_1
        del buf1
        buf4 = empty_strided_cuda((8, 32, 16384), (32, 1, 256), torch.float32)
        triton_poi_fused__unsafe_view_add_bmm_clone_mul_select_squeeze_transpose_unsqueeze_view_3[lambda meta: (triton.cdiv(4194304, meta['BLOCK_X']),)](buf3, buf4, 4194304, BLOCK_X=512, num_warps=8, num_stages=1)
        buf5 = empty_strided_cuda((8, 16384, 16384), (268435456, 16384, 1), torch.float32)
        extern_kernels.bmm(buf2, buf4, out=buf5)
        del buf2
        del buf4
        buf8 = buf5
        del buf5
        triton_red_fused__softmax_exp_prepare_softmax_online_sub_4[lambda meta: (triton.cdiv(131072, meta['BLOCK_X']),)](buf8, 131072, 16384, BLOCK_X=1, R0_BLOCK=2048, num_warps=16, num_stages=1)
        buf9 = empty_strided_cuda((8, 16384, 32), (524288, 32, 1), torch.float32)
        extern_kernels.bmm(buf8, reinterpret_tensor(buf3, (8, 16384, 32), (32, 256, 1), 8388608), out=buf9)
        del buf3
        del buf8
        buf10 = empty_strided_cuda((16384, 8, 32), (256, 32, 1), torch.float32)
        triton_poi_fused_clone_transpose_5[lambda meta: (triton.cdiv(4194304, meta['BLOCK_X']),)](buf9, buf10, 4194304, BLOCK_X=512, num_warps=8, num_stages=1)
        buf11 = reinterpret_tensor(buf9, (32768, 128), (128, 1), 0)
        del buf9
        extern_kernels.mm(reinterpret_tensor(buf10, (32768, 128), (128, 1), 0), reinterpret_tensor(arg3_1, (128, 128), (1, 128), 0), out=buf11)
        del arg3_1
        del buf10
        buf12 = empty_strided_cuda((16384, 2, 1), (2, 1, 32768), torch.float32)
        buf13 = empty_strided_cuda((16384, 2, 1), (2, 1, 32768), torch.float32)
        triton_red_fused_add_addmm_native_layer_norm_permute_view_6[lambda meta: (triton.cdiv(2, meta['BLOCK_X']), triton.cdiv(16384, meta['BLOCK_Y']))](arg4_1, buf11, arg0_1, buf12, buf13, 16384, 2, 128, BLOCK_Y=8, BLOCK_X=1, R0_BLOCK=32, num_warps=2, num_stages=1)
        buf15 = reinterpret_tensor(buf11, (16384, 2, 128), (256, 128, 1), 0)
        del buf11
        triton_poi_fused_add_addmm_native_layer_norm_permute_view_7[lambda meta: (triton.cdiv(256, meta['BLOCK_X']), triton.cdiv(16384, meta['BLOCK_Y']))](buf15, arg4_1, arg0_1, buf12, buf13, arg5_1, arg6_1, 16384, 256, BLOCK_Y=32, BLOCK_X=32, num_warps=4, num_stages=1)
        del arg0_1
        del arg4_1
        del arg5_1
        del arg6_1
        del buf12
        del buf13
    return (reinterpret_tensor(buf15, (2, 128, 128, 128), (128, 1, 32768, 256), 0),)


class ModelNew(Model):
    """Model's computation as torch.compile's generated Triton kernels."""

    def forward(self, x):
        outputs = _inductor_call([x, self._modules['attn']._parameters['in_proj_bias'], self._modules['attn']._parameters['in_proj_weight'], self._modules['attn']._modules['out_proj']._parameters['weight'], self._modules['attn']._modules['out_proj']._parameters['bias'], self._modules['norm']._parameters['weight'], self._modules['norm']._parameters['bias']])
        return outputs[0]
