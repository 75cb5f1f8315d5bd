"""Inductor forms the k0 wrapper must read beyond the fixtures' plain ones: a tiled kernel whose
y axis may overflow into z (``Grid2DWithYZOverflow``), the other grid types, and a run call
that passes parameters inductor fixed (a numel of 1 is ``constexpr`` in the signature).

The generated modules here are the ReLU fixture (``fixtures/kernelbench_k0/relu.json``) with
its kernel rewritten by hand in the form torch 2.11-2.13's inductor writes for a GPU, so the
wrapped k0 runs under Triton's interpreter."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import triton

from live.evaluator import Evaluator, EvaluatorConfig
from live.evaluator.static_check import static_check
from live.tasks.kernelbench.k0 import MAX_Y_GRID, NoK0, wrap_as_model_new

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "kernelbench_mini"
SPEC = f"kernelbench:{MINI}"
RELU = json.loads((FIXTURES / "kernelbench_k0" / "relu.json").read_text())
PROBLEM = (MINI / "level1" / "1_ReLU.py").read_text()
DEVICE = ("'device': DeviceProperties(type='cpu', index=None, multi_processor_count=2, cc='', "
          "major=None, regs_per_multiprocessor=None, max_threads_per_multi_processor=None, "
          "max_threads_per_block=1024, warp_size=None)")
RUN = "        triton_poi_fused_relu_0.run(arg0_1, buf0, 768, stream=raw_streamNone)\n"

#: ReLU over the (8, 96) input as inductor tiles a 2-D pointwise kernel whose y axis may pass
#: CUDA's 65,535 programs: the y block is program_id(1) + program_id(2) * num_programs(1)
TILED = """
@triton_heuristics.pointwise(
    size_hints={'y': 8, 'x': 128}, tile_hint=TileHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'ynumel': 'i32', \
'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}, DEVICE, 'constants': {}},
    inductor_meta={'grid_type': 'GRID', 'kernel_name': 'triton_poi_fused_relu_0'},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_relu_0(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK : tl.constexpr, \
XBLOCK : tl.constexpr):
    ynumel = 8
    xnumel = 96
    yoffset = (tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x1 = xindex
    y0 = yindex
    tmp0 = tl.load(in_ptr0 + (x1 + 96*y0), xmask & ymask)
    tmp1 = tl.full([1, 1], 0, tl.int32)
    tmp2 = triton_helpers.maximum(tmp1, tmp0)
    tl.store(out_ptr0 + (x1 + 96*y0), tmp2, xmask & ymask)
""".replace("DEVICE", DEVICE)

#: a one-element kernel (a BatchNorm's ``num_batches_tracked += 1`` has this form): inductor
#: makes its numel of 1 a constant of the signature, yet the run call still passes it
ONE_ELEMENT = """
# one element
triton_poi_fused_add_1 = async_compile.triton('triton_poi_fused_add_1', '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.pointwise(
    size_hints={'x': 1},
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'constexpr', \
'XBLOCK': 'constexpr'}, DEVICE, 'constants': {'xnumel': 1}},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_add_1'},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_1(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    tmp0 = tl.load(in_ptr0 + (0))
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK])
    tmp2 = 1.0
    tmp3 = tmp1 + tmp2
    tl.store(out_ptr0 + (tl.full([XBLOCK], 0, tl.int32)), tmp3, None)
''', device_str='cpu')


""".replace("DEVICE", DEVICE)


def tiled(grid_type: str, ynumel: str = "8") -> str:
    """The ReLU module with its kernel tiled (`TILED`) under `grid_type`, launched with the
    expression `ynumel` for its ynumel."""
    code = RELU["output_code"]
    start = code.index("\n@triton_heuristics.pointwise(")
    end = code.index("''', device_str='cpu')")
    code = code[:start] + TILED.replace("GRID", grid_type) + code[end:]
    return code.replace(RUN, RUN.replace("buf0, 768,", f"buf0, {ynumel}, 96,"))


def with_one_element_kernel(passes_the_numel: bool = True) -> str:
    """The ReLU module and a one-element kernel (`ONE_ELEMENT`) on a buffer of its own."""
    code = RELU["output_code"]
    code = code.replace("\n\nasync_compile.wait(globals())", ONE_ELEMENT
                        + "async_compile.wait(globals())")
    numel = ", 1" if passes_the_numel else ""
    launch = ("        buf1 = empty_strided_cpu((1, ), (1, ), torch.float32)\n"
              f"        triton_poi_fused_add_1.run(buf0, buf1{numel}, stream=raw_streamNone)\n")
    return code.replace(RUN, RUN + launch)


def wrap(output_code: str) -> str:
    return wrap_as_model_new(output_code, PROBLEM, RELU["forward_args"], RELU["graph_inputs"],
                             RELU["n_outputs"], note=RELU["note"])


def grid_of(wrapped: str, kernel: str) -> ast.Lambda:
    """The grid lambda of `kernel`'s launch in a wrapped k0."""
    for node in ast.walk(ast.parse(wrapped)):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id == kernel and isinstance(node.slice, ast.Lambda)):
            return node.slice
    raise AssertionError(f"no launch of {kernel}")


def launch_grid(wrapped: str, kernel: str, numels: dict[str, int],
                meta: dict[str, int]) -> tuple[int, ...]:
    """`kernel`'s grid for other numel arguments (its launch's argument names -> values)."""
    lam = grid_of(wrapped, kernel)
    scope = {"triton": triton, **numels}
    return eval(compile(ast.Expression(lam), "<grid>", "eval"), scope)(meta)  # noqa: S307


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", static_check=True, timeout_s=120,
                                   compile_timeout_s=120)) as ev:
        yield ev


def test_grid_with_yz_overflow_is_wrapped_and_runs(evaluator: Evaluator) -> None:
    code = wrap(tiled("Grid2DWithYZOverflow"))
    assert static_check(code) is None
    launch = re.search(r"triton_poi_fused_relu_0\[.*\]\(arg0_1, buf0, 8, 96, .*\)", code)
    assert launch is not None, code
    assert "meta['BLOCK_Y']" in launch.group(0) and "meta['BLOCK_X']" in launch.group(0)
    result = evaluator.evaluate("kernelbench/level1/1_ReLU", code, seed=0)
    assert result.status == "ok", result.error


@pytest.mark.parametrize("ynumel", [1, 8, 65535 * 4, 65535 * 4 + 1, 40_000_000])
def test_yz_overflow_grid_covers_every_y_block_within_cuda_limits(ynumel: int) -> None:
    """The y blocks (program_id(1) + program_id(2) * num_programs(1)) cover every block of
    ynumel, with no axis past 65,535 programs and no z slice without a block to do."""
    code = wrap(tiled("Grid2DWithYZOverflow", ynumel="ynumel_given"))
    x, y, z = launch_grid(code, "triton_poi_fused_relu_0", {"ynumel_given": ynumel},
                          {"BLOCK_X": 32, "BLOCK_Y": 4})
    blocks = triton.cdiv(ynumel, 4)
    assert x == 3 and y <= MAX_Y_GRID and z <= MAX_Y_GRID
    assert y * z >= blocks and y * (z - 1) < blocks


def test_plain_2d_grid_is_unchanged() -> None:
    code = wrap(tiled("Grid2D"))
    assert launch_grid(code, "triton_poi_fused_relu_0", {}, {"BLOCK_X": 32, "BLOCK_Y": 4}) \
        == (3, 2)


def test_batch_matmul_grid_puts_the_batch_on_x() -> None:
    """``BatchMatmulGrid3D``: x programs over znumel, z programs over xnumel."""
    code = tiled("BatchMatmulGrid3D").replace("'ynumel': 'i32', 'xnumel': 'i32'",
                                              "'znumel': 'i32', 'ynumel': 'i32', "
                                              "'xnumel': 'i32'")
    code = code.replace("ynumel, xnumel, YBLOCK", "znumel, ynumel, xnumel, ZBLOCK : "
                        "tl.constexpr, YBLOCK").replace("buf0, 8, 96,", "buf0, 5, 8, 96,")
    wrapped = wrap(code)
    assert launch_grid(wrapped, "triton_poi_fused_relu_0", {},
                       {"BLOCK_X": 32, "BLOCK_Y": 4, "BLOCK_Z": 2}) == (3, 2, 3)


def test_an_unknown_grid_type_is_still_a_reason() -> None:
    with pytest.raises(NoK0, match="grid type CooperativeReductionGrid"):
        wrap(tiled("CooperativeReductionGrid"))


def test_a_passed_constant_numel_is_an_argument(evaluator: Evaluator) -> None:
    """The run call passes the one-element kernel's numel (1) though the signature makes it a
    constant: it stays a positional argument, not also a keyword."""
    code = wrap(with_one_element_kernel())
    launch = re.search(r"triton_poi_fused_add_1\[.*\]\((.*)\)", code)
    assert launch is not None, code
    assert launch.group(1).startswith("buf0, buf1, 1, BLOCK_X=")
    assert "xnumel=" not in launch.group(1)
    result = evaluator.evaluate("kernelbench/level1/1_ReLU", code, seed=0)
    assert result.status == "ok", result.error


def test_a_constant_left_out_of_the_run_call_is_a_keyword() -> None:
    code = wrap(with_one_element_kernel(passes_the_numel=False))
    launch = re.search(r"triton_poi_fused_add_1\[(.*)\]\((.*)\)", code)
    assert launch is not None, code
    assert launch.group(2).startswith("buf0, buf1, xnumel=1, BLOCK_X=")
    assert "triton.cdiv(1, meta['BLOCK_X'])" in launch.group(1)


def test_a_launch_with_another_argument_count_is_a_reason() -> None:
    code = with_one_element_kernel().replace("run(buf0, buf1, 1,", "run(buf0, buf1, 1, 1,")
    with pytest.raises(NoK0, match="launched with 4 arguments for 2 or 3 parameters"):
        wrap(code)
