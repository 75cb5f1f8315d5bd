"""Candidate edits per strategy. An edit changes one target in a parsed tree (``apply``) and says
what it did (``description``); the proposer picks among them with its seeded RNG.

Strategies and what the mutator does for each (only performance knobs; results stay equal). For
an autotuned kernel the same knobs are turned inside one of its ``triton.Config`` entries:

- tiling: a block size ``BLOCK_*`` ×/÷ 2 or 4, a power of two within bounds (``tl.dot`` tiles
  16–256, their K step 16–128; other 2-D tiles 16–256; 1-D blocks 64–16384; one kernel's tiles
  multiply to at most 2^20 with ``tl.dot``, 2^16 without);
- vectorization: ``num_warps`` to another of 1–16, or a 1-D kernel's elements per program ×/÷ 2
  with ``num_warps`` scaled alike;
- pipeline: ``num_stages`` to another of 1–5, for kernels with a loop (added if absent);
- reordering: grouped ("GROUP_M") program-id ordering for kernels that read exactly
  ``tl.program_id(0)`` and ``tl.program_id(1)`` once each into two names; a bijection onto the
  same tiles whatever the grid; or a new group size where it is already grouped;
- access_layout: ``eviction_policy`` or ``cache_modifier`` on a ``tl.load`` without either (never
  both: ptxas rejects the pair), or
  ``tl.max_contiguous(tl.multiple_of(…))`` hints on offsets ``pid * B + tl.arange(0, B)``;
- fusion: nothing (a fusion is a semantic rewrite); always ``not_applicable``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from live.proposers.mutate.analysis import Kernel, Knob, find_knobs
from live.pyast import parse

GROUP_VAR = "_kb_group_m"
GROUP_SIZES = (4, 8, 16)
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
EVICTION = ("evict_first", "evict_last")
LOAD_CACHE = (".ca", ".cg")


@dataclass
class Edit:
    target: tuple  # edits sharing a target exclude each other
    description: str
    apply: Callable[[], None]
    #: further targets this edit also changes (a coupled block-size and num_warps edit)
    also: tuple = ()

    @property
    def targets(self) -> tuple:
        return (self.target, *self.also)


def _pow2(value: int | None) -> bool:
    return value is not None and value > 0 and value & (value - 1) == 0


def _block_bounds(knob: Knob) -> tuple[int, int, int]:
    """(low, high, max product of one kernel's tile sizes) for a block knob."""
    uses_dot = any(k.uses_dot for k in knob.kernels)
    multi = any(len(k.block_params) > 1 for k in knob.kernels)
    if uses_dot:
        high = 128 if knob.name.upper().endswith("K") else 256
        return 16, high, 2**20
    if multi:
        return 16, 256, 2**16
    return 64, 16384, 2**14


def _block_values(knob: Knob, knobs: list[Knob], factors: tuple[float, ...]) -> list[int]:
    if not _pow2(knob.value):
        return []
    assert knob.value is not None
    low, high, max_product = _block_bounds(knob)
    others = 1
    for kernel in knob.kernels:
        product = 1
        for other in knobs:
            if (other.kind == "block" and other is not knob and kernel in other.kernels
                    and other.group == knob.group):
                product *= other.value or 1
        others = max(others, product)
    values = []
    for factor in factors:
        value = int(knob.value * factor)
        if low <= value <= high and value * others <= max_product and value != knob.value:
            values.append(value)
    return values


def _knob_edit(knob: Knob, value: int, strategy_word: str) -> Edit:
    before = "default" if knob.value is None else str(knob.value)
    return Edit(knob.target, f"{strategy_word} {knob.name} {before} -> {value} ({knob.where})",
                lambda: knob.setter(value))


def tiling_edits(tree: ast.Module) -> list[Edit]:
    knobs, _, _ = find_knobs(tree)
    edits = []
    for knob in knobs:
        if knob.kind == "block":
            for value in _block_values(knob, knobs, (0.25, 0.5, 2, 4)):
                edits.append(_knob_edit(knob, value, "tile"))
    return edits


def vectorization_edits(tree: ast.Module) -> list[Edit]:
    knobs, _, _ = find_knobs(tree)
    edits: list[Edit] = []
    # the num_warps set together with a block knob: same kernel, same group (launch or config)
    warps_of: dict[tuple, Knob] = {}
    for knob in knobs:
        if knob.kind == "num_warps":
            warps_of.setdefault((knob.kernels[0].name, knob.group), knob)
    for knob in knobs:
        if knob.kind == "num_warps":
            for value in WARPS:
                if value != knob.value:
                    edits.append(_knob_edit(knob, value, "set"))
        elif knob.kind == "block" and all(len(k.block_params) == 1 for k in knob.kernels):
            warps = warps_of.get((knob.kernels[0].name, knob.group))
            for value in _block_values(knob, knobs, (0.5, 2)):
                edits.append(_coupled_edit(knob, value, warps))
    return edits


def _coupled_edit(block: Knob, value: int, warps: Knob | None) -> Edit:
    """Elements per program and warps move together, keeping elements per thread."""
    assert block.value is not None
    new_warps = None
    if warps is not None and warps.value is not None:
        scaled = int(warps.value * value / block.value)
        new_warps = min(16, max(1, scaled))
    description = f"elements per program {block.name} {block.value} -> {value} ({block.where})"
    if new_warps is not None and warps is not None and new_warps != warps.value:
        description += f", num_warps {warps.value} -> {new_warps}"

    def apply() -> None:
        block.setter(value)
        if new_warps is not None and warps is not None:
            warps.setter(new_warps)

    also = (warps.target,) if new_warps is not None and warps is not None else ()
    return Edit(block.target, description, apply, also)


def pipeline_edits(tree: ast.Module) -> list[Edit]:
    knobs, _, _ = find_knobs(tree)
    edits = []
    for knob in knobs:
        if knob.kind == "num_stages" and any(k.has_loop for k in knob.kernels):
            for value in STAGES:
                if value != knob.value:
                    edits.append(_knob_edit(knob, value, "set"))
    return edits


# --- reordering ----------------------------------------------------------------------------


def _program_id_axis(node: ast.expr, attr: str = "program_id") -> int | None:
    if not (isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == attr):
        return None
    args = list(node.args) + [k.value for k in node.keywords if k.arg == "axis"]
    if len(args) != 1 or not isinstance(args[0], ast.Constant):
        return None
    return args[0].value if args[0].value in (0, 1, 2) else None


def _swizzle(pid_m: str, pid_n: str, group: int) -> list[ast.stmt]:
    code = f"""
_kb_pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
_kb_grid_m = tl.num_programs(0)
_kb_grid_n = tl.num_programs(1)
{GROUP_VAR} = {group}
_kb_width = {GROUP_VAR} * _kb_grid_n
_kb_first_m = _kb_pid // _kb_width * {GROUP_VAR}
_kb_group_size = tl.minimum(_kb_grid_m - _kb_first_m, {GROUP_VAR})
{pid_m} = _kb_first_m + _kb_pid % _kb_width % _kb_group_size
{pid_n} = _kb_pid % _kb_width // _kb_group_size
"""
    return parse(code).body


def _stores(kernel: ast.FunctionDef, name: str) -> int:
    return sum(
        1 for n in ast.walk(kernel)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    )


def _reorder_kernel(kernel: Kernel) -> list[Edit]:
    body = kernel.node.body
    for statement in body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id == GROUP_VAR
                and isinstance(statement.value, ast.Constant)):
            current = statement.value.value
            return [
                Edit(("group", kernel.name), f"group size {current} -> {g} in {kernel.name}",
                     lambda g=g, s=statement: setattr(s, "value", ast.Constant(g)))
                for g in GROUP_SIZES if g != current
            ]
    pid_calls = [n for n in ast.walk(kernel.node) if _program_id_axis(n) is not None]
    num_programs = [n for n in ast.walk(kernel.node) if _program_id_axis(n, "num_programs")
                    is not None]
    if len(pid_calls) != 2 or num_programs:
        return []
    assigned: dict[int, tuple[int, str]] = {}
    for index, statement in enumerate(body):
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            axis = _program_id_axis(statement.value)
            if axis is not None:
                assigned[axis] = (index, statement.targets[0].id)
    if set(assigned) != {0, 1}:
        return []
    (i_m, name_m), (i_n, name_n) = assigned[0], assigned[1]
    if name_m == name_n or _stores(kernel.node, name_m) != 1 or _stores(kernel.node, name_n) != 1:
        return []

    def make(group: int) -> Callable[[], None]:
        def apply() -> None:
            first, last = sorted((i_m, i_n))
            new_body = body[:first] + body[first + 1:last] + body[last + 1:]
            kernel.node.body = new_body[:first] + _swizzle(name_m, name_n, group) + new_body[first:]
        return apply

    return [
        Edit(("group", kernel.name),
             f"grouped program ordering (GROUP_M={g}) over ({name_m}, {name_n}) in {kernel.name}",
             make(g))
        for g in GROUP_SIZES
    ]


def reordering_edits(tree: ast.Module) -> list[Edit]:
    _, kernels, launches = find_knobs(tree)
    launched = {launch.kernel.name for launch in launches}
    edits: list[Edit] = []
    for kernel in kernels.values():
        if kernel.name in launched:
            edits.extend(_reorder_kernel(kernel))
    return edits


# --- access layout -------------------------------------------------------------------------


def _is_arange_offsets(node: ast.expr) -> str | None:
    """The block name B when ``node`` is ``X * B + tl.arange(0, B)`` (either order)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    for product, arange in ((node.left, node.right), (node.right, node.left)):
        if not (isinstance(arange, ast.Call) and ast.unparse(arange.func).endswith("arange")):
            continue
        if len(arange.args) != 2 or not (isinstance(arange.args[0], ast.Constant)
                                          and arange.args[0].value == 0):
            continue
        block = arange.args[1]
        if not isinstance(block, ast.Name):
            continue
        if isinstance(product, ast.BinOp) and isinstance(product.op, ast.Mult):
            factors = (product.left, product.right)
            if any(isinstance(f, ast.Name) and f.id == block.id for f in factors):
                return block.id
    return None


def access_layout_edits(tree: ast.Module) -> list[Edit]:
    _, kernels, launches = find_knobs(tree)
    launched = {launch.kernel.name for launch in launches}
    edits: list[Edit] = []
    for kernel in kernels.values():
        if kernel.name not in launched:
            continue
        loads = [n for n in ast.walk(kernel.node) if isinstance(n, ast.Call)
                 and ast.unparse(n.func) in ("tl.load", "triton.language.load")]
        for index, load in enumerate(loads):
            present = {k.arg for k in load.keywords}
            # one hint per load: ptxas rejects a cache modifier combined with an eviction
            # policy on one load (seen on H200 with Triton 3.6: "PTX codegen error")
            if present & {"eviction_policy", "cache_modifier"}:
                continue
            label = f"load #{index + 1} in {kernel.name}"
            for keyword, values in (("eviction_policy", EVICTION), ("cache_modifier", LOAD_CACHE)):
                for value in values:
                    edits.append(Edit(
                        ("load hint", kernel.name, index), f"{keyword}={value!r} on {label}",
                        lambda load=load, keyword=keyword, value=value: load.keywords.append(
                            ast.keyword(arg=keyword, value=ast.Constant(value))),
                    ))
        for statement in ast.walk(kernel.node):
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)):
                continue
            block = _is_arange_offsets(statement.value)
            if block is None:
                continue
            name = statement.targets[0].id

            def hint(statement: ast.Assign = statement, block: str = block) -> None:
                inner = ast.Call(parse("tl.multiple_of", mode="eval").body,
                                 [statement.value, ast.Name(block)], [])
                statement.value = ast.Call(parse("tl.max_contiguous", mode="eval").body,
                                           [inner, ast.Name(block)], [])

            edits.append(Edit(("hint", kernel.name, name),
                              f"contiguity hints on {name} in {kernel.name}", hint))
    return edits


def fusion_edits(tree: ast.Module) -> list[Edit]:
    return []


EDITS_BY_STRATEGY: dict[str, Callable[[ast.Module], list[Edit]]] = {
    "tiling": tiling_edits,
    "vectorization": vectorization_edits,
    "fusion": fusion_edits,
    "pipeline": pipeline_edits,
    "reordering": reordering_edits,
    "access_layout": access_layout_edits,
}

NOT_APPLICABLE_REASON = {
    "tiling": "no block size the mutator can change safely (BLOCK_* passed at launch from a "
              "constant or literal)",
    "vectorization": "no launch whose num_warps or elements per program can change",
    "fusion": "fusion needs a semantic rewrite; the mutator only turns performance knobs",
    "pipeline": "no launched kernel with a loop whose num_stages can change",
    "reordering": "no kernel reading tl.program_id(0) and tl.program_id(1) once each into two "
                  "names (grouped ordering needs that shape)",
    "access_layout": "every load already has a cache or eviction hint and no offsets of the "
                     "form pid * B + tl.arange(0, B) lack contiguity hints",
}
