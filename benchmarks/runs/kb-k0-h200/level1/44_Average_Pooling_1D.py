# k0 from torch.compile (inductor): torch 2.11.0+cu130, default mode, level1/44_Average_Pooling_1D
# the problem's own code: ModelNew builds Model's parameters
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    Simple model that performs 1D Average Pooling.
    """
    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        """
        Initializes the 1D Average Pooling layer.

        Args:
            kernel_size (int): Size of the pooling window.
            stride (int, optional): Stride of the pooling operation. Defaults to 1.
            padding (int, optional): Padding applied to the input tensor. Defaults to 0.
        """
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies 1D Average Pooling to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, in_channels, input_length).

        Returns:
            torch.Tensor: Output tensor with 1D Average Pooling applied, shape (batch_size, in_channels, output_length).
        """
        return self.avg_pool(x)

batch_size = 64
in_channels = 128
input_length = 65536
kernel_size = 8
stride = 1
padding = 4

def get_inputs():
    x = torch.rand(batch_size, in_channels, input_length)
    return [x]

def get_init_inputs():
    return [kernel_size, stride, padding]

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
def triton_poi_fused_avg_pool2d_unsqueeze_0(in_ptr0, out_ptr0, xnumel, BLOCK_X: tl.constexpr):
    xnumel = 536879104
    xoffset = tl.program_id(0) * BLOCK_X
    xindex = xoffset + tl.arange(0, BLOCK_X)[:]
    xmask = tl.full([BLOCK_X], True, tl.int1)[:]
    x0 = xindex % 65537
    x1 = xindex // 65537
    x2 = xindex
    tmp0 = tl.full([1], 0, tl.int64)
    tmp1 = tmp0 >= tmp0
    tmp2 = tl.full([1], 1, tl.int64)
    tmp3 = tmp0 < tmp2
    tmp4 = tmp1 & tmp3
    tmp5 = -4 + x0
    tmp6 = tmp5 >= tmp0
    tmp7 = tl.full([1], 65536, tl.int64)
    tmp8 = tmp5 < tmp7
    tmp9 = tmp6 & tmp8
    tmp10 = tmp4 & tmp9
    tmp11 = tl.load(in_ptr0 + (-4 + x0 + 65536 * x1), tmp10, other=0.0)
    tmp12 = -3 + x0
    tmp13 = tmp12 >= tmp0
    tmp14 = tmp12 < tmp7
    tmp15 = tmp13 & tmp14
    tmp16 = tmp4 & tmp15
    tmp17 = tl.load(in_ptr0 + (-3 + x0 + 65536 * x1), tmp16, other=0.0)
    tmp18 = tmp11 + tmp17
    tmp19 = -2 + x0
    tmp20 = tmp19 >= tmp0
    tmp21 = tmp19 < tmp7
    tmp22 = tmp20 & tmp21
    tmp23 = tmp4 & tmp22
    tmp24 = tl.load(in_ptr0 + (-2 + x0 + 65536 * x1), tmp23, other=0.0)
    tmp25 = tmp18 + tmp24
    tmp26 = -1 + x0
    tmp27 = tmp26 >= tmp0
    tmp28 = tmp26 < tmp7
    tmp29 = tmp27 & tmp28
    tmp30 = tmp4 & tmp29
    tmp31 = tl.load(in_ptr0 + (-1 + x0 + 65536 * x1), tmp30, other=0.0)
    tmp32 = tmp25 + tmp31
    tmp33 = x0
    tmp34 = tmp33 >= tmp0
    tmp35 = tmp33 < tmp7
    tmp36 = tmp34 & tmp35
    tmp37 = tmp4 & tmp36
    tmp38 = tl.load(in_ptr0 + (x0 + 65536 * x1), tmp37, other=0.0)
    tmp39 = tmp32 + tmp38
    tmp40 = 1 + x0
    tmp41 = tmp40 >= tmp0
    tmp42 = tmp40 < tmp7
    tmp43 = tmp41 & tmp42
    tmp44 = tmp4 & tmp43
    tmp45 = tl.load(in_ptr0 + (1 + x0 + 65536 * x1), tmp44, other=0.0)
    tmp46 = tmp39 + tmp45
    tmp47 = 2 + x0
    tmp48 = tmp47 >= tmp0
    tmp49 = tmp47 < tmp7
    tmp50 = tmp48 & tmp49
    tmp51 = tmp4 & tmp50
    tmp52 = tl.load(in_ptr0 + (2 + x0 + 65536 * x1), tmp51, other=0.0)
    tmp53 = tmp46 + tmp52
    tmp54 = 3 + x0
    tmp55 = tmp54 >= tmp0
    tmp56 = tmp54 < tmp7
    tmp57 = tmp55 & tmp56
    tmp58 = tmp4 & tmp57
    tmp59 = tl.load(in_ptr0 + (3 + x0 + 65536 * x1), tmp58, other=0.0)
    tmp60 = tmp53 + tmp59
    tmp61 = 4 + -1 * x0 + (65540 * (65540 <= 4 + x0) + (4 + x0) * (4 + x0 < 65540))
    tmp62 = tmp60 / tmp61
    tl.store(out_ptr0 + x2, tmp62, None)


def _inductor_call(args):
    arg0_1, = args
    args.clear()
    assert_size_stride(arg0_1, (64, 128, 65536), (8388608, 65536, 1))
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf0 = empty_strided_cuda((64, 128, 1, 65537), (8388736, 65537, 65537, 1), torch.float32)
        triton_poi_fused_avg_pool2d_unsqueeze_0[lambda meta: (triton.cdiv(536879104, meta['BLOCK_X']),)](arg0_1, buf0, 536879104, BLOCK_X=512, num_warps=8, num_stages=1)
        del arg0_1
    return (reinterpret_tensor(buf0, (64, 128, 65537), (8388736, 65537, 1), 0),)


class ModelNew(Model):
    """Model's computation as torch.compile's generated Triton kernels."""

    def forward(self, x: torch.Tensor):
        outputs = _inductor_call([x])
        return outputs[0]
