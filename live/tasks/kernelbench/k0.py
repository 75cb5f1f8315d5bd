"""k0 without an LLM: ``torch.compile``'s generated Triton code wrapped as ``ModelNew``.

Where inductor lowers a problem to Triton kernels, its generated module (``TORCH_LOGS=
output_code``; ``torch._inductor.utils.run_and_get_code``) holds each kernel as source text
handed to ``async_compile.triton(...)`` under a ``triton_heuristics`` decorator, and a
``call(args)`` that allocates buffers and launches the kernels with ``kernel.run(...)``
(inductor's launcher chooses the grid and block sizes). ``wrap_as_model_new`` turns that into a
plain candidate the rest of kernelband can judge and mutate:

- each kernel becomes a module-level ``@triton.jit`` function (the heuristics decorator gone);
- each ``kernel.run(args...)`` becomes a launch ``kernel[lambda meta: grid](args...,
  BLOCK_X=..., num_warps=..., num_stages=...)``: block sizes and warps as literal keywords (the
  configuration inductor's autotuner chose when known, else a plain default), the grid from the
  kernel's ``grid_type`` (1-D, 2-D, 3-D, 2-D with a y axis split over z past CUDA's 65,535
  programs, batched matmul's 3-D: ``GRIDS``) reading the block sizes from ``meta``, so the mutate
  proposer's block-size edits keep the grid right (inductor's ``XBLOCK``/``YBLOCK``/``ZBLOCK``
  are renamed ``BLOCK_X``/``BLOCK_Y``/``BLOCK_Z``, the names its tiling edits know);
- the problem's own code comes first, so ``class ModelNew(Model)`` builds the same parameters,
  and its ``forward`` calls the generated ``call`` with the graph's inputs: the forward's
  arguments and the model's parameters, by the expressions ``torch.compile`` recorded for them
  (``L['self']._modules['linear']._parameters['weight']`` -> ``self._modules[...]...``).

Everything here is text in, text out (no torch): ``live.tasks.kernelbench.k0_extract`` runs
``torch.compile`` and gathers what this needs. ``NoK0`` says why a problem yields none.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from live.pyast import parse

#: inductor kernel kinds wrapped (the decorator's name); others are reported, not wrapped
SUPPORTED_KINDS = ("pointwise", "reduction", "persistent_reduction")
#: the most programs CUDA launches along a grid's y (and z) axis (inductor's ``get_max_y_grid``)
MAX_Y_GRID = 65535
_Y_PROGRAMS = "cdiv(ynumel, YBLOCK)"
_Z_SPLIT = f"cdiv({_Y_PROGRAMS}, {MAX_Y_GRID})"
#: grid types wrapped, and each grid axis as inductor's launcher computes it (its
#: ``triton_heuristics`` grid classes), over the kernel's ``*numel`` arguments and block sizes.
#: ``Grid2DWithYZOverflow``: a y axis of more than MAX_Y_GRID programs is split over y and z
#: (the kernel reads its y block as ``program_id(1) + program_id(2) * num_programs(1)``);
#: ``BatchMatmulGrid3D``: the batch (z) on the grid's x axis.
GRIDS: dict[str, tuple[str, ...]] = {
    "Grid1D": ("cdiv(xnumel, XBLOCK)",),
    "Grid2D": ("cdiv(xnumel, XBLOCK)", _Y_PROGRAMS),
    "Grid3D": ("cdiv(xnumel, XBLOCK)", _Y_PROGRAMS, "cdiv(znumel, ZBLOCK)"),
    "Grid2DWithYZOverflow": ("cdiv(xnumel, XBLOCK)",
                             f"cdiv({_Y_PROGRAMS}, max(1, {_Z_SPLIT}))", _Z_SPLIT),
    "BatchMatmulGrid3D": ("cdiv(znumel, ZBLOCK)", _Y_PROGRAMS, "cdiv(xnumel, XBLOCK)"),
}
_NUMELS = ("xnumel", "ynumel", "znumel")
#: top-level statements of the generated module that are not carried into k0
_DROPPED_IMPORTS = {"ctypes", "torch._inductor.async_compile"}
_DROPPED_NAMES = {"async_compile", "runner", "call", "recursively_apply_fns", "get_args",
                  "benchmark_compiled_module", "Runner", "get_raw_stream"}
_STREAM_NAME = re.compile(r"^(raw_)?stream\w*$")
#: inductor's block names as the mutate proposer's tiling edits know block sizes (``BLOCK_*``)
KNOB_NAMES = {"XBLOCK": "BLOCK_X", "YBLOCK": "BLOCK_Y", "ZBLOCK": "BLOCK_Z"}


def _knob(name: str) -> str:
    return KNOB_NAMES.get(name, name)


def _rename_blocks(function: ast.FunctionDef) -> None:
    """``XBLOCK`` -> ``BLOCK_X`` (and Y, Z) throughout a kernel, where the new name is free."""
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {
        a.arg for a in function.args.args}
    renames = {old: new for old, new in KNOB_NAMES.items() if new not in used}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in renames:
            node.id = renames[node.id]
        elif isinstance(node, ast.arg) and node.arg in renames:
            node.arg = renames[node.arg]


class NoK0(Exception):
    """Why a problem's generated code gives no k0 (the message is the reason).

    `failure_kind`: a ``FailureKind`` value where the reason is the device's (out of memory:
    the problem is made again with more room), else None."""

    def __init__(self, reason: str, failure_kind: str | None = None):
        super().__init__(reason)
        self.failure_kind = failure_kind


@dataclass(frozen=True)
class KernelInfo:
    """One generated kernel, as its source and decorator say."""

    name: str
    kind: str
    function: ast.FunctionDef
    #: positional parameters (the ``run`` call's arguments), in order
    params: tuple[str, ...]
    #: parameters inductor fixed (``{"xnumel": 1}``): passed by the ``run`` call where they
    #: are in `params`, else given as keywords
    constants: dict[str, Any]
    #: constexpr parameters the launch chooses (``XBLOCK``, ``R0_BLOCK``)
    blocks: tuple[str, ...]
    grid_type: str
    size_hints: dict[str, int] = field(default_factory=dict)
    imports: tuple[ast.stmt, ...] = ()
    helpers: tuple[ast.FunctionDef, ...] = ()


@dataclass(frozen=True)
class LaunchConfig:
    """Block sizes (and warps, stages) of one kernel's launch."""

    blocks: dict[str, int]
    num_warps: int = 4
    num_stages: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"blocks": dict(self.blocks), "num_warps": self.num_warps,
                "num_stages": self.num_stages}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LaunchConfig:
        return cls({k: int(v) for k, v in data["blocks"].items()}, int(data["num_warps"]),
                   int(data["num_stages"]))


def _next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _dict_entry(node: ast.expr | None, key: str) -> Any:
    """The literal value under `key` of a dict display, or None (other values may not be
    literals: ``DeviceProperties(...)``, ``set()``)."""
    if not isinstance(node, ast.Dict):
        return None
    for k, v in zip(node.keys, node.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == key:
            try:
                return ast.literal_eval(v)
            except ValueError:
                return None
    return None


def kernel_info(name: str, source: str) -> KernelInfo:
    """Read one ``async_compile.triton`` kernel source; NoK0 if it is not one we can launch."""
    tree = parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    main = next((f for f in functions if f.name == name), None)
    if main is None:
        raise NoK0(f"kernel {name}: its source defines no function of that name")
    decorator = next((d for d in main.decorator_list if isinstance(d, ast.Call)
                      and "triton_heuristics" in ast.unparse(d.func)), None)
    if decorator is None:
        raise NoK0(f"kernel {name}: no triton_heuristics decorator to read its launch from")
    kind = ast.unparse(decorator.func).rsplit(".", 1)[-1]
    if kind not in SUPPORTED_KINDS:
        raise NoK0(f"kernel {name}: a {kind} kernel (wrapped: {', '.join(SUPPORTED_KINDS)})")
    triton_meta = _keyword(decorator, "triton_meta")
    inductor_meta = _keyword(decorator, "inductor_meta")
    signature = _dict_entry(triton_meta, "signature")
    if not isinstance(signature, dict):
        raise NoK0(f"kernel {name}: no signature in its triton_meta")
    constants = _dict_entry(triton_meta, "constants") or {}
    grid_type = _dict_entry(inductor_meta, "grid_type") or "Grid1D"
    if grid_type not in GRIDS:
        raise NoK0(f"kernel {name}: grid type {grid_type} (wrapped: {', '.join(GRIDS)})")
    hints_node = _keyword(decorator, "size_hints")
    try:
        size_hints = ast.literal_eval(hints_node) if hints_node is not None else {}
    except ValueError:
        size_hints = {}
    # the run call passes every parameter the kernel does not declare ``tl.constexpr``, in
    # order: its numels too where inductor made them constants (a numel of 1 is "constexpr" in
    # the signature and 1 in ``constants``, yet passed); the launcher fills the block sizes
    declared = [a.arg for a in main.args.args]
    annotated = {a.arg for a in main.args.args
                 if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    blocks = tuple(a for a in declared if a not in constants
                   and (a in annotated or signature.get(a) == "constexpr"))
    params = tuple(a for a in declared if a not in blocks and a not in annotated)
    imports = tuple(n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    helpers = tuple(f for f in functions if f is not main)
    return KernelInfo(name, kind, main, params, dict(constants), blocks, str(grid_type),
                      dict(size_hints) if isinstance(size_hints, dict) else {}, imports,
                      helpers)


def default_config(info: KernelInfo) -> LaunchConfig:
    """Plain block sizes when inductor's chosen ones are not known: whole 1-D blocks of up to
    1,024 elements, 32 x 32 tiles, one row per program for reductions."""
    hints = info.size_hints
    blocks = {}
    for block in info.blocks:
        axis = block.removesuffix("BLOCK").lower()
        hint = int(hints.get(axis, hints.get(axis + "_", 1024)) or 1)
        if block == "XBLOCK":
            value = 1 if info.kind != "pointwise" else min(1024, _next_pow2(hint))
            if info.kind == "pointwise" and info.grid_type != "Grid1D":
                value = min(32, value)
        elif block.startswith("R"):
            value = min(1024, _next_pow2(hint))
        else:
            value = min(32, _next_pow2(hint))
        blocks[block] = value
    return LaunchConfig(blocks)


def inductor_kernels(output_code: str) -> tuple[ast.Module, dict[str, str]]:
    """The generated module's tree and its Triton kernels' sources by name; NoK0 for kernels
    of another kind (C++, CUDA templates)."""
    tree = parse(output_code)
    kernels: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = ast.unparse(node.value.func)
        if not func.startswith("async_compile."):
            continue
        name = ast.unparse(node.targets[0])
        if func != "async_compile.triton":
            raise NoK0(f"inductor compiled {name} with {func}, not as a Triton kernel")
        source = node.value.args[1] if len(node.value.args) > 1 else None
        if not (isinstance(source, ast.Constant) and isinstance(source.value, str)):
            raise NoK0(f"kernel {name}: its source is not a string in the generated code")
        kernels[name] = source.value
    return tree, kernels


def _call_function(tree: ast.Module) -> ast.FunctionDef:
    """The generated ``call(args)``: a module-level function, or ``Runner.call``."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            return node
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    return item
    raise NoK0("the generated code has no call(args) function")


def _extern_calls(function: ast.FunctionDef) -> list[str]:
    return sorted({ast.unparse(n.func) for n in ast.walk(function) if isinstance(n, ast.Call)
                   and ast.unparse(n.func).startswith(("extern_kernels.", "aten.",
                                                       "torch.ops."))})


class _AxisTerms(ast.NodeTransformer):
    """A `GRIDS` axis as launch code: ``cdiv`` -> ``triton.cdiv``, a numel -> the launch's
    argument for it, a block size -> ``meta[...]`` (or the constant inductor fixed)."""

    def __init__(self, size: Callable[[str], ast.expr], block: Callable[[str], ast.expr]):
        self.size = size
        self.block = block

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id == "cdiv":
            return parse("triton.cdiv", mode="eval").body
        if node.id in _NUMELS:
            return self.size(node.id)
        if node.id.endswith("BLOCK"):
            return self.block(node.id)
        return node


class _Launches(ast.NodeTransformer):
    """``kernel.run(args, stream=...)`` -> ``kernel[lambda meta: grid](args, BLOCK=...)``;
    stream look-ups dropped."""

    def __init__(self, kernels: Mapping[str, KernelInfo], configs: Mapping[str, LaunchConfig]):
        self.kernels = kernels
        self.configs = configs
        self.launched: list[str] = []

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and _STREAM_NAME.match(node.targets[0].id)):
            return None
        return self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "run" and isinstance(call.func.value, ast.Name)
                and call.func.value.id in self.kernels):
            return ast.Expr(self._launch(call.func.value.id, call))
        return self.generic_visit(node)

    def _launch(self, name: str, call: ast.Call) -> ast.Call:
        info = self.kernels[name]
        # the run call passes the fixed parameters (inductor's form), or leaves them out
        unfixed = tuple(p for p in info.params if p not in info.constants)
        if len(call.args) == len(info.params):
            passed = info.params
        elif len(call.args) == len(unfixed):
            passed = unfixed
        else:
            counts = sorted({len(info.params), len(unfixed)})
            raise NoK0(f"kernel {name}: launched with {len(call.args)} arguments for "
                       f"{' or '.join(map(str, counts))} parameters")
        config = self.configs[name]
        given = dict(zip(passed, call.args, strict=True))

        def size(numel: str) -> ast.expr:
            if numel in given:
                return given[numel]
            if numel in info.constants:
                return ast.Constant(info.constants[numel])
            raise NoK0(f"kernel {name}: its grid needs {numel}, which it does not take")

        def block(name_: str) -> ast.expr:
            if name_ in info.blocks:
                return parse(f"meta[{_knob(name_)!r}]", mode="eval").body
            return ast.Constant(int(info.constants.get(name_, 1)))

        axes = [_AxisTerms(size, block).visit(parse(axis, mode="eval").body)
                for axis in GRIDS[info.grid_type]]
        grid = ast.Lambda(ast.arguments(posonlyargs=[], args=[ast.arg("meta")], kwonlyargs=[],
                                        kw_defaults=[], defaults=[]),
                          ast.Tuple(axes, ast.Load()))
        keywords = [ast.keyword(k, ast.Constant(v)) for k, v in info.constants.items()
                    if k not in passed]
        keywords += [ast.keyword(_knob(b), ast.Constant(config.blocks[b]))
                     for b in info.blocks]
        keywords += [ast.keyword("num_warps", ast.Constant(config.num_warps)),
                     ast.keyword("num_stages", ast.Constant(config.num_stages))]
        self.launched.append(name)
        return ast.Call(ast.Subscript(ast.Name(name, ast.Load()), grid, ast.Load()),
                        list(call.args), keywords)


def _prelude(tree: ast.Module, kernels: Mapping[str, str]) -> list[ast.stmt]:
    """The generated module's imports and helper assignments, without the compile machinery,
    the kernels, the runner and the benchmark harness."""
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [a for a in node.names if a.name.split(".")[0] not in _DROPPED_IMPORTS]
            if names:
                kept.append(ast.Import(names))
        elif isinstance(node, ast.ImportFrom):
            if node.module not in _DROPPED_IMPORTS and (node.module or "").split(".")[0] \
                    not in _DROPPED_IMPORTS:
                kept.append(node)
        elif isinstance(node, ast.Assign):
            targets = {ast.unparse(t) for t in node.targets}
            if targets & (set(kernels) | _DROPPED_NAMES):
                continue
            kept.append(node)
    return kept


def wrap_as_model_new(output_code: str, problem_source: str, forward_args: str,
                      graph_inputs: list[str], n_outputs: int | None,
                      configs: Mapping[str, LaunchConfig] | None = None,
                      note: str = "") -> str:
    """A candidate module: the problem's code, then the generated kernels and ``call`` as plain
    Triton launches, then ``class ModelNew(Model)`` whose forward runs them.

    `forward_args`: the reference forward's parameter list as written (``self, x, y=None``);
    `graph_inputs`: one Python expression per graph input, in ``call``'s order, in terms of
    ``self`` and those parameters; `n_outputs`: None when the forward returns one tensor, else
    the length of the tuple it returns; `configs`: the launch configuration per kernel
    (missing ones: ``default_config``)."""
    tree, sources = inductor_kernels(output_code)
    call = _call_function(tree)
    if not sources:
        extern = _extern_calls(call)
        raise NoK0("inductor generated no Triton kernel"
                   + (f" (it calls {', '.join(extern)})" if extern else ""))
    unpacked = next((len(s.targets[0].elts) for s in call.body if isinstance(s, ast.Assign)
                     and isinstance(s.targets[0], ast.Tuple)
                     and ast.unparse(s.value) == "args"), None)
    if unpacked is not None and unpacked != len(graph_inputs):
        raise NoK0(f"the generated call takes {unpacked} inputs, the graph recorded "
                   f"{len(graph_inputs)}")
    infos = {name: kernel_info(name, source) for name, source in sources.items()}
    chosen = {name: (configs or {}).get(name) or default_config(info)
              for name, info in infos.items()}
    for name, info in infos.items():
        missing = [b for b in info.blocks if b not in chosen[name].blocks]
        if missing:
            chosen[name] = LaunchConfig({**default_config(info).blocks, **chosen[name].blocks},
                                        chosen[name].num_warps, chosen[name].num_stages)
    launches = _Launches(infos, chosen)
    body = [launches.visit(parse(ast.unparse(s)).body[0]) for s in call.body]
    body = [s for s in body if s is not None]
    unlaunched = sorted(set(infos) - set(launches.launched))
    if unlaunched:
        raise NoK0(f"kernels {', '.join(unlaunched)} are not launched as kernel.run(...) in "
                   "call")
    parts = [f"# k0 from torch.compile (inductor){': ' + note if note else ''}",
             "# the problem's own code: ModelNew builds Model's parameters",
             problem_source.rstrip(), "",
             "# what the generated module needs, less its compile machinery"]
    parts += [ast.unparse(s) for s in _prelude(tree, sources)]
    seen_imports: set[str] = set()
    kernel_parts: list[str] = []
    for info in infos.values():
        for node in info.imports:
            text = ast.unparse(node)
            if text not in seen_imports:
                seen_imports.add(text)
                parts.append(text)
        _rename_blocks(info.function)
        for function in (*info.helpers, info.function):
            function.decorator_list = [d for d in function.decorator_list
                                       if "triton_heuristics" not in ast.unparse(d)]
            kernel_parts += ["", "", ast.unparse(function)]
    parts += kernel_parts
    call.name, call.body, call.decorator_list = "_inductor_call", body or [ast.Pass()], []
    if call.args.args and call.args.args[0].arg == "self":  # Runner.call(self, args)
        call.args.args = call.args.args[1:]
    parts += ["", "", ast.unparse(ast.fix_missing_locations(call))]
    returned = "outputs[0]" if n_outputs is None else f"tuple(outputs[:{n_outputs}])"
    parts += ["", "", "class ModelNew(Model):",
              "    \"\"\"Model's computation as torch.compile's generated Triton kernels.\"\"\"",
              "", f"    def forward({forward_args}):",
              f"        outputs = _inductor_call([{', '.join(graph_inputs)}])",
              f"        return {returned}", ""]
    code = "\n".join(parts)
    parse(code)  # a wrapper that does not parse is a bug here, not a reason
    return code


_LOCAL = re.compile(r"L\['([A-Za-z_]\w*)'\]")


def source_expression(source_name: str) -> str:
    """A graph input's recorded source (``L['self']._modules['fc']._parameters['weight']``,
    ``L['x']``) as an expression in the forward (``self._modules['fc']...``, ``x``); NoK0 for
    one that is not a forward argument or reached from one (a global)."""
    if not source_name.startswith("L["):
        raise NoK0(f"a graph input comes from {source_name}, not from the forward's arguments")
    expression = _LOCAL.sub(lambda m: m.group(1), source_name)
    try:
        parse(expression, mode="eval")
    except SyntaxError:
        raise NoK0(f"a graph input's source {source_name} is no Python expression") from None
    return expression
