"""Read a candidate module's structure for the mutator: kernels, launch sites, tunable knobs.

Everything here is ``ast``-based and conservative: a knob is reported only where changing it is
known to keep the module consistent (a block size's every use changes together), otherwise it is
left out and the strategy may end ``not_applicable``.

A *knob* is one integer performance setting and how to change it in the tree:

- ``block``: a ``BLOCK_*``/``TILE_*`` constexpr passed at a launch, whose value is a module-level
  integer constant (all uses change together), a local integer constant of the launching
  function, or a literal that appears nowhere else in that function (or the grid reads it from
  ``meta``);
- ``num_warps`` / ``num_stages``: launch options of a non-autotuned kernel (added if absent);
- for an autotuned kernel, the same three kinds inside each literal ``triton.Config`` of its
  ``@triton.autotune(configs=[...])`` list (the autotuner then picks among the edited configs).

Knobs of one ``group`` (one autotune config; ``None`` for launch-level knobs) are set together
at run time, so bounds on their product only consider knobs of the same group.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

#: Triton's defaults on NVIDIA GPUs when a launch does not say
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3


@dataclass
class Kernel:
    name: str
    node: ast.FunctionDef
    params: list[str]
    constexprs: list[str]
    autotuned: bool
    uses_dot: bool
    has_loop: bool

    @property
    def block_params(self) -> list[str]:
        return [p for p in self.constexprs if is_block_name(p)]


@dataclass
class Launch:
    kernel: Kernel
    call: ast.Call
    function: ast.FunctionDef | None  # the enclosing host function (None: module level)
    #: param name -> expression passed (positional args mapped by position)
    passed: dict[str, ast.expr]
    grid: ast.expr
    #: a star-arg or **kwargs hides what is passed
    opaque: bool


@dataclass
class Knob:
    kind: str  # block | num_warps | num_stages
    name: str
    value: int | None  # None: not known statically (a computed launch option)
    target: tuple  # identity of what changes: knobs with equal targets are one knob
    where: str
    kernels: list[Kernel]
    setter: Callable[[int], None] = field(repr=False)
    group: tuple | None = None


def is_block_name(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(("BLOCK", "TILE")) or "_BLOCK" in upper


def _dotted(node: ast.expr) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse handles every expression
        return ""


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return _dotted(target).split(".")[-1]


def _is_constexpr(annotation: ast.expr | None) -> bool:
    return annotation is not None and _dotted(annotation).split(".")[-1] == "constexpr"


def _calls(tree: ast.AST, attr: str) -> list[ast.Call]:
    return [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == attr
    ]


def find_kernels(tree: ast.Module) -> dict[str, Kernel]:
    kernels: dict[str, Kernel] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        names = [_decorator_name(d) for d in node.decorator_list]
        if "jit" not in names:
            continue
        args = node.args.args
        kernels[node.name] = Kernel(
            name=node.name,
            node=node,
            params=[a.arg for a in args],
            constexprs=[a.arg for a in args if _is_constexpr(a.annotation)],
            autotuned=any(n in ("autotune", "heuristics") for n in names),
            uses_dot=bool(_calls(node, "dot")),
            has_loop=any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(node)),
        )
    return kernels


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    return parents


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.FunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef):
            return node
    return None


def find_launches(tree: ast.Module, kernels: dict[str, Kernel]) -> list[Launch]:
    parents = _parents(tree)
    launches: list[Launch] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
            continue
        base = node.func.value
        if not (isinstance(base, ast.Name) and base.id in kernels):
            continue
        kernel = kernels[base.id]
        opaque = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        passed: dict[str, ast.expr] = {}
        if not any(isinstance(a, ast.Starred) for a in node.args):
            passed.update(zip(kernel.params, node.args, strict=False))
        passed.update({k.arg: k.value for k in node.keywords if k.arg is not None})
        launches.append(
            Launch(kernel, node, _enclosing_function(node, parents), passed, node.func.slice,
                   opaque)
        )
    return launches


def module_int_constants(tree: ast.Module) -> dict[str, ast.Assign]:
    """Module-level names assigned exactly once, to an int literal."""
    counts: dict[str, int] = {}
    found: dict[str, ast.Assign] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _int_literal(node.value) is not None
        ):
            found[node.targets[0].id] = node
    return {name: assign for name, assign in found.items() if counts.get(name) == 1}


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _local_assignments(function: ast.FunctionDef, name: str) -> list[ast.AST]:
    stores: list[ast.AST] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            stores.append(node)
    params = function.args.args + function.args.kwonlyargs + function.args.posonlyargs
    stores.extend(a for a in params if a.arg == name)
    return stores


def _grid_reads_meta(grid: ast.expr, function: ast.FunctionDef | None) -> bool:
    """True when the grid is a lambda/def of the launch's meta-parameters."""
    if isinstance(grid, ast.Lambda):
        return True
    if isinstance(grid, ast.Name) and function is not None:
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == grid.id for t in node.targets
            ):
                return isinstance(node.value, ast.Lambda)
            if isinstance(node, ast.FunctionDef) and node.name == grid.id:
                return True
    return False


def _literal_elsewhere(function: ast.FunctionDef | None, tree: ast.Module, keep: ast.AST,
                       value: int) -> bool:
    scope: ast.AST = function if function is not None else tree
    return any(
        isinstance(node, ast.Constant) and type(node.value) is int and node.value == value
        and node is not keep
        for node in ast.walk(scope)
    )


def _set_keyword(call: ast.Call, name: str, value: int) -> None:
    for keyword in call.keywords:
        if keyword.arg == name:
            keyword.value = ast.Constant(value)
            return
    call.keywords.append(ast.keyword(arg=name, value=ast.Constant(value)))


def _set_passed(launch: Launch, param: str, value: int) -> None:
    for keyword in launch.call.keywords:
        if keyword.arg == param:
            keyword.value = ast.Constant(value)
            return
    index = launch.kernel.params.index(param)
    launch.call.args[index] = ast.Constant(value)


def _set_assign(assign: ast.Assign, value: int) -> None:
    assign.value = ast.Constant(value)


def autotune_configs(kernel: Kernel) -> list[ast.Call]:
    """The literal ``triton.Config(...)`` calls of the kernel's ``@triton.autotune``."""
    for decorator in kernel.node.decorator_list:
        if not (isinstance(decorator, ast.Call) and _decorator_name(decorator) == "autotune"):
            continue
        configs = next((k.value for k in decorator.keywords if k.arg == "configs"), None)
        if configs is None and decorator.args:
            configs = decorator.args[0]
        if isinstance(configs, (ast.List, ast.Tuple)):
            return [
                c for c in configs.elts
                if isinstance(c, ast.Call) and _dotted(c.func).split(".")[-1] == "Config"
            ]
    return []


def _config_dict(config: ast.Call) -> ast.Dict | None:
    value = config.args[0] if config.args else next(
        (k.value for k in config.keywords if k.arg == "kwargs"), None)
    return value if isinstance(value, ast.Dict) else None


def _set_dict_value(mapping: ast.Dict, index: int, value: int) -> None:
    mapping.values[index] = ast.Constant(value)


def config_knobs(kernel: Kernel) -> list[Knob]:
    knobs: list[Knob] = []
    for index, config in enumerate(autotune_configs(kernel)):
        group = ("config", kernel.name, index)
        where = f"autotune config #{index + 1} of {kernel.name}"
        mapping = _config_dict(config)
        if mapping is not None:
            for position, (key, value) in enumerate(zip(mapping.keys, mapping.values,
                                                        strict=True)):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    continue
                literal = _int_literal(value)
                if literal is not None and is_block_name(key.value):
                    knobs.append(Knob(
                        "block", key.value, literal, (*group, key.value), where, [kernel],
                        lambda v, m=mapping, i=position: _set_dict_value(m, i, v), group))
        for option, default in (("num_warps", DEFAULT_NUM_WARPS),
                                ("num_stages", DEFAULT_NUM_STAGES)):
            expr = next((k.value for k in config.keywords if k.arg == option), None)
            value = default if expr is None else _int_literal(expr)
            knobs.append(Knob(option, option, value, (*group, option), where, [kernel],
                              lambda v, c=config, o=option: _set_keyword(c, o, v), group))
    return knobs


def find_knobs(tree: ast.Module) -> tuple[list[Knob], dict[str, Kernel], list[Launch]]:
    """Every knob the mutator may turn, deduplicated by what it changes."""
    kernels = find_kernels(tree)
    launches = find_launches(tree, kernels)
    constants = module_int_constants(tree)
    knobs: dict[tuple, Knob] = {}

    def add(knob: Knob) -> None:
        if knob.target in knobs:
            for kernel in knob.kernels:
                if kernel not in knobs[knob.target].kernels:
                    knobs[knob.target].kernels.append(kernel)
        else:
            knobs[knob.target] = knob

    for launch in launches:
        kernel = launch.kernel
        fname = launch.function.name if launch.function else "<module>"
        where = f"launch of {kernel.name} in {fname}()"
        for param in kernel.block_params:
            expr = launch.passed.get(param)
            if expr is None:
                continue
            literal = _int_literal(expr)
            if literal is not None:
                safe = _grid_reads_meta(launch.grid, launch.function) or not _literal_elsewhere(
                    launch.function, tree, expr, literal
                )
                if safe:
                    target = ("literal", expr.lineno, expr.col_offset)
                    add(Knob("block", param, literal, target, where, [kernel],
                             lambda v, launch=launch, param=param: _set_passed(launch, param, v)))
                continue
            if not isinstance(expr, ast.Name):
                continue
            local_stores = _local_assignments(launch.function, expr.id) if launch.function else []
            if local_stores:
                assigns = [
                    node for node in ast.walk(launch.function)
                    if isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name) and node.targets[0].id == expr.id
                ]
                if len(local_stores) == 1 and len(assigns) == 1:
                    value = _int_literal(assigns[0].value)
                    if value is not None:
                        add(Knob("block", param, value, ("local", fname, expr.id),
                                 f"local constant {expr.id} of {fname}()", [kernel],
                                 lambda v, a=assigns[0]: _set_assign(a, v)))
                continue
            if expr.id in constants:
                assign = constants[expr.id]
                value = _int_literal(assign.value)
                add(Knob("block", param, value, ("module", expr.id),
                         f"module constant {expr.id}", [kernel],
                         lambda v, a=assign: _set_assign(a, v)))
        if kernel.autotuned or launch.opaque:
            continue  # launch options come from the autotuner's configs
        for option, default in (("num_warps", DEFAULT_NUM_WARPS),
                                ("num_stages", DEFAULT_NUM_STAGES)):
            expr = launch.passed.get(option)
            value = default if expr is None else _int_literal(expr)
            if value is None and isinstance(expr, ast.Name) and expr.id in constants:
                value = _int_literal(constants[expr.id].value)
            target = (option, launch.call.lineno, launch.call.col_offset)
            add(Knob(option, option, value, target, where, [kernel],
                     lambda v, call=launch.call, option=option: _set_keyword(call, option, v)))
    launched = {launch.kernel.name for launch in launches}
    for kernel in kernels.values():
        if kernel.autotuned and kernel.name in launched:
            for knob in config_knobs(kernel):
                add(knob)
    return list(knobs.values()), kernels, launches
