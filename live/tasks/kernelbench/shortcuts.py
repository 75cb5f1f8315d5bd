"""The KernelBench part of the static check: a candidate's ``ModelNew`` must do its work in a
Triton kernel it launches, not in the reference's torch operators, and must compute every output
anew.

``shortcut_check(code, reference_source) -> str | None`` reads both modules' syntax (it runs
nothing) and follows ``ModelNew.forward`` through what it calls: its own methods and its bases'
(``super()``), module-level functions and classes, and the submodules its constructor makes.
On that path it refuses:

- **no kernel**: no launch (``kernel[grid](...)``) of a ``@triton.jit`` function;
- **torch fallback**: a call of one of the operators the reference ``Model`` calls on its own
  forward path (``torch.matmul``, ``F.conv2d``, ``x.sum()``, an ``nn.Conv2d`` submodule called,
  ``a @ b``, inductor's ``extern_kernels.mm``), compared by operator family (``mm``, ``bmm``,
  ``linear``, ``matmul`` and ``@`` are one; ``Conv2d`` and ``conv2d`` are one); plumbing (views,
  allocation, dtype and device moves, ``cat``/``stack``) is never refused;
- **cached outputs**: ``global`` state, ``functools`` caches, results stored into module-level
  or ``self`` containers, and a ``self`` attribute returned where the path stores it only
  conditionally (computed once, returned ever after) or returns it under a test of itself.

NOTE (D99): stricter than KernelBench, which accepts a solution that keeps some of the
reference's operators (a torch convolution with a fused Triton epilogue): here every operator
of the reference is the main work, so such a candidate is refused. And a tripwire, like the
rest of the static check (D12): a torch operator the reference does not use, or one reached
through ``getattr``, passes it; the correctness checks (five input sets, one model instance
for all of them) catch outputs kept across calls at run time.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from live.evaluator.languages import TRITON, dotted_name

ENTRY = "ModelNew"

#: operators that are plumbing, never "the main work" (views, allocation, moves, shapes)
PLUMBING = frozenset({
    "view", "reshape", "contiguous", "size", "dim", "numel", "stride", "to", "float", "half",
    "bfloat16", "double", "int", "long", "bool", "type", "cuda", "cpu", "empty", "empty_like",
    "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "flatten", "unflatten",
    "squeeze", "unsqueeze", "permute", "transpose", "t", "expand", "expand_as", "view_as",
    "reshape_as", "is_contiguous", "data_ptr", "element_size", "item", "tolist", "clone",
    "copy", "detach", "requires_grad", "arange", "tensor", "as_tensor", "as_strided",
    "get_device", "fill", "zero", "cat", "concat", "concatenate", "stack", "split", "chunk",
    "narrow", "select", "unbind", "movedim", "apply", "register_buffer", "parameters",
    "named_parameters", "buffers", "modules", "children", "append", "extend", "insert", "pop",
    "items", "keys", "values", "format", "join", "cdiv", "next_power_of_2", "synchronize",
    "set_device", "device", "dtype", "is_cuda", "no_grad", "inference_mode", "range", "len",
    "reinterpret_tensor", "assert_size_stride", "assert_alignment", "empty_strided_cuda",
    "empty_strided_cpu", "manual_seed", "broadcast_to", "as_strided_", "resize",
    "sequential", "module_list", "module_dict", "identity",
    # random draws a forward makes (initial states): a candidate must draw the same ones
    "rand", "randn", "randint", "rand_like", "randn_like", "normal", "uniform", "bernoulli",
    "kaiming_normal", "kaiming_uniform", "xavier_normal", "xavier_uniform", "linspace",
    "meshgrid", "parameter",
})
#: operator families: names that are one operator for this check
FAMILIES = {
    "matmul": ("mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "einsum", "mv",
               "addmv", "dot", "vdot", "tensordot", "bilinear", "inner", "outer", "_mm_plus_mm"),
    "conv": ("conv", "convolution", "_convolution", "conv_transpose", "convolution_backward"),
    "batch_norm": ("batch_norm", "native_batch_norm", "_native_batch_norm_legit",
                   "_native_batch_norm_legit_no_training", "sync_batch_norm"),
    "layer_norm": ("layer_norm", "native_layer_norm"),
    "group_norm": ("group_norm", "native_group_norm"),
    "softmax": ("softmax", "_softmax"),
    "log_softmax": ("log_softmax", "_log_softmax"),
    "attention": ("scaled_dot_product_attention", "multihead_attention",
                  "_scaled_dot_product_flash_attention",
                  "_scaled_dot_product_efficient_attention",
                  "_scaled_dot_product_cudnn_attention"),
    "max_pool": ("max_pool", "max_pool_with_indices", "adaptive_max_pool"),
    "avg_pool": ("avg_pool", "adaptive_avg_pool"),
}
_FAMILY_OF = {name: family for family, names in FAMILIES.items() for name in names}
#: roots of calls that are kernel-side or standard helpers, never torch operators
_NOT_TORCH_ROOTS = {"triton", "tl", "tl_math", "libdevice", "triton_helpers", "math", "np",
                    "numpy", "functools", "itertools", "operator", "builtins", "random", "os"}


def op_family(name: str) -> str:
    """``Conv2d`` / ``conv2d`` / ``conv_transpose3d`` -> ``conv``; ``addmm`` -> ``matmul``;
    ``relu_`` -> ``relu``."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", "_", name)
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", snake).lower().strip("_")
    snake = re.sub(r"_?\d+d$", "", snake)
    snake = {"re_lu": "relu", "ge_lu": "gelu", "se_lu": "selu", "si_lu": "silu",
             "leaky_re_lu": "leaky_relu", "e_lu": "elu", "pre_lu": "prelu",
             "re_lu6": "relu6", "lstm": "lstm", "l_s_t_m": "lstm", "g_r_u": "gru",
             "r_n_n": "rnn"}.get(snake, snake)
    snake = snake.removesuffix("_default").removesuffix("_tensor")
    return _FAMILY_OF.get(snake, snake)


@dataclass
class OpCall:
    """One call of a torch operator found on a forward path."""

    family: str
    written: str
    line: int


@dataclass
class _Module:
    """What a module defines at top level, for following calls."""

    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    kernels: set[str] = field(default_factory=set)
    #: local names bound to torch itself or its modules (torch, nn, F)
    torch_modules: set[str] = field(default_factory=set)
    #: local names bound to torch functions or classes (``from torch import relu``)
    torch_names: dict[str, str] = field(default_factory=dict)
    #: names of module-level values (containers a forward could keep results in)
    globals_: set[str] = field(default_factory=set)

    @classmethod
    def parse(cls, code: str) -> _Module:
        tree = ast.parse(code)
        module = cls(tree)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module.functions[node.name] = node  # type: ignore[assignment]
                if any(TRITON.is_kernel_decorator(d) for d in node.decorator_list):
                    module.kernels.add(node.name)
            elif isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                module.globals_.update(t.id for t in targets if isinstance(t, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "torch":
                        module.torch_modules.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
                for alias in node.names:
                    local = alias.asname or alias.name
                    if alias.name in ("nn", "functional", "Tensor", "ops", "cuda", "fft",
                                      "linalg", "special"):
                        module.torch_modules.add(local)
                    else:
                        module.torch_names[local] = alias.name
        return module

    def methods(self, class_name: str) -> dict[str, ast.FunctionDef]:
        """Methods of a module-level class and of its module-level bases (nearest first)."""
        found: dict[str, ast.FunctionDef] = {}
        seen: set[str] = set()
        todo = [class_name]
        while todo:
            name = todo.pop(0)
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            node = self.classes[name]
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found.setdefault(item.name, item)
            todo.extend(dotted_name(base) for base in node.bases)
        return found

    def submodules(self, class_name: str) -> dict[str, ast.expr]:
        """``self.X = <call>`` in the class's (and its bases') ``__init__``: X -> the call's
        callee; ``self.X = f`` for a module-level function or class: X -> f."""
        made: dict[str, ast.expr] = {}
        init = self.methods(class_name).get("__init__")
        todo = [init] if init is not None else []
        for name, base in self.methods(class_name).items():  # bases' constructors too
            if name == "__init__" and base is not init:
                todo.append(base)
        for function in todo:
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and (
                        isinstance(node.value, ast.Call) or (
                            isinstance(node.value, ast.Name)
                            and node.value.id in (*self.functions, *self.classes))):
                    callee = node.value.func if isinstance(node.value, ast.Call) else node.value
                    for target in node.targets:
                        if (isinstance(target, ast.Attribute) and isinstance(target.value,
                                                                             ast.Name)
                                and target.value.id == "self"):
                            made.setdefault(target.attr, callee)
        return made

    def loose_submodules(self, class_name: str) -> list[ast.expr]:
        """Callees of the calls in the class's constructors that are not assigned to an
        attribute directly: the members of its containers (``nn.Sequential(*layers)``,
        ``nn.ModuleList``), called when the container is."""
        direct = {id(callee) for callee in self.submodules(class_name).values()}
        found = []
        for class_node in self._class_chain(class_name):
            for item in class_node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    for node in ast.walk(item):
                        if isinstance(node, ast.Call) and id(node.func) not in direct:
                            found.append(node.func)
        return found

    def _class_chain(self, class_name: str) -> list[ast.ClassDef]:
        chain, todo, seen = [], [class_name], set()
        while todo:
            name = todo.pop(0)
            if name in seen or name not in self.classes:
                continue
            seen.add(name)
            chain.append(self.classes[name])
            todo.extend(dotted_name(b) for b in self.classes[name].bases)
        return chain


@dataclass
class ForwardPath:
    """What ``<class>.forward`` reaches in one module."""

    functions: list[tuple[str, ast.FunctionDef]]
    ops: list[OpCall]
    launched: set[str]


def _torch_op(call: ast.Call, module: _Module, own_methods: set[str]) -> str | None:
    """The operator a call names, if it may be a torch operator (None: kernel-side, ours)."""
    func = call.func
    if isinstance(func, ast.Name):
        return module.torch_names.get(func.id)
    if not isinstance(func, ast.Attribute):
        return None
    dotted = dotted_name(func)
    parts = dotted.split(".") if dotted else []
    if parts and "ops" in parts and parts[0] in module.torch_modules:
        at = parts.index("ops")
        return parts[at + 2] if len(parts) > at + 2 else None  # torch.ops.aten.relu.default
    root = parts[0] if parts else ""
    if root in _NOT_TORCH_ROOTS or root in module.kernels:
        return None
    if root in module.functions or (root in module.classes and root not in module.torch_names):
        return None
    if root == "self" and len(parts) == 2 and parts[1] in own_methods:
        return None
    return func.attr


def _submodule_op(callee: ast.expr, module: _Module) -> str | None:
    """The operator an ``nn.X(...)`` submodule stands for (None: one of the module's own)."""
    name = dotted_name(callee)
    root = name.split(".")[0]
    if root in module.torch_modules or root in module.torch_names:
        return name.split(".")[-1]
    return None


def forward_path(module: _Module, class_name: str) -> ForwardPath:
    """Follow ``class_name.forward`` through the module (see the module docstring)."""
    functions: list[tuple[str, ast.FunctionDef]] = []
    ops: list[OpCall] = []
    launched: set[str] = set()
    seen: set[int] = set()
    todo: list[tuple[str, str]] = [(class_name, "forward")]
    loose: list[ast.FunctionDef] = []

    def visit_class(name: str, method: str) -> None:
        todo.append((name, method))

    while todo or loose:
        if loose:
            owner, function = "", loose.pop()
        else:
            owner, method = todo.pop()
            found = module.methods(owner).get(method)
            if found is None:
                continue
            function = found
        if id(function) in seen:
            continue
        seen.add(id(function))
        functions.append((owner, function))
        own = set(module.methods(owner)) if owner else set()
        made = module.submodules(owner) if owner else {}
        members = _loop_members(function, made)
        for node in _walk_outside_kernels(function, module):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                ops.append(OpCall("matmul", "@", node.lineno))
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Subscript):  # kernel[grid](...)
                name = dotted_name(func.value)
                if name in module.kernels:
                    launched.add(name)
                continue
            dotted = dotted_name(func)
            parts = dotted.split(".") if dotted else []
            if isinstance(func, ast.Name) and func.id in module.functions:
                if func.id not in module.kernels:
                    loose.append(module.functions[func.id])
                continue
            if isinstance(func, ast.Name) and func.id in module.classes:
                visit_class(func.id, "__init__")
                visit_class(func.id, "forward")
                visit_class(func.id, "__call__")
                continue
            if parts and parts[0] in module.classes and len(parts) == 2:
                visit_class(parts[0], parts[1])  # MyFunction.apply -> forward too
                visit_class(parts[0], "forward")
                continue
            if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                    and dotted_name(func.value.func) == "super"):
                for base in _bases(module, owner):
                    visit_class(base, func.attr)
                continue
            container = _container_called(func, made, members)
            if container is not None and owner:
                for callee in module.loose_submodules(owner):
                    _add_callee(callee, module, ops, node.lineno, visit_class)
                continue
            if parts[:1] == ["self"] and len(parts) == 2 and owner:
                attr = parts[1]
                if attr in own:
                    visit_class(owner, attr)
                    continue
                if attr in made:
                    callee = made[attr]
                    if isinstance(callee, ast.Name) and callee.id in module.functions:
                        loose.append(module.functions[callee.id])  # self.f = f in __init__
                    else:
                        _add_callee(callee, module, ops, node.lineno, visit_class)
                    continue
            op = _torch_op(node, module, own)
            if op is not None:
                ops.append(OpCall(op_family(op), dotted or op, node.lineno))
    return ForwardPath(functions, ops, launched)


_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict")


def _is_container(callee: ast.expr | None) -> bool:
    return callee is not None and dotted_name(callee).endswith(_CONTAINERS)


def _loop_members(function: ast.FunctionDef, made: dict[str, ast.expr]) -> set[str]:
    """Loop variables that iterate a container attribute (``for layer in self.layers``)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.For):
            iterated = [n for n in ast.walk(node.iter) if _self_attr(n) is not None]
            if any(_is_container(made.get(_self_attr(n) or "")) for n in iterated):
                names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return names


def _container_called(func: ast.expr, made: dict[str, ast.expr],
                      members: set[str]) -> str | None:
    """The container a call runs (``self.net(x)``, ``self.layers[i](x)``, ``layer(x)`` in a
    loop over one), or None."""
    if isinstance(func, ast.Name) and func.id in members:
        return func.id
    attr = _self_attr(func)
    if attr is not None and _is_container(made.get(attr)):
        return attr
    return None


def _add_callee(callee: ast.expr, module: _Module, ops: list[OpCall], line: int,
                visit_class: object) -> None:
    name = dotted_name(callee)
    if name in module.classes:
        visit_class(name, "forward")  # type: ignore[operator]
        visit_class(name, "__call__")  # type: ignore[operator]
        return
    op = _submodule_op(callee, module)
    if op is not None:
        ops.append(OpCall(op_family(op), f"an nn.{op} submodule", line))


def _bases(module: _Module, owner: str) -> list[str]:
    node = module.classes.get(owner)
    return [dotted_name(b) for b in node.bases] if node is not None else []


def _walk_outside_kernels(function: ast.FunctionDef, module: _Module) -> Iterator[ast.AST]:
    """Every node of `function`, nested kernel definitions left out."""
    todo: list[ast.AST] = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef) and any(
                TRITON.is_kernel_decorator(d) for d in node.decorator_list):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _self_attr(node: ast.AST) -> str | None:
    """``X`` for ``self.X`` or ``self.X[...]``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self":
        return node.attr
    return None


def _returned(value: ast.expr | None) -> Iterable[ast.expr]:
    if isinstance(value, (ast.Tuple, ast.List)):
        for item in value.elts:
            yield from _returned(item)
    elif value is not None:
        yield value


def _kept_state(path: ForwardPath, module: _Module) -> str | None:
    """Why the forward path keeps outputs across calls, or None (see the module docstring)."""
    conditional: set[str] = set()
    for _, function in path.functions:
        if function.name == "__init__":
            continue
        for decorator in function.decorator_list:
            name = dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if name.split(".")[-1] in ("lru_cache", "cache", "cached_property"):
                return f"{function.name} is cached with @{name} (line {decorator.lineno})"
        parents = {child: parent for parent in ast.walk(function)
                   for child in ast.iter_child_nodes(parent)}
        for node in _walk_outside_kernels(function, module):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                return (f"{function.name} declares {', '.join(node.names)} global (line "
                        f"{node.lineno}): state kept across calls")
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for target in targets:
                if isinstance(target, ast.Subscript):
                    base = target.value
                    while isinstance(base, ast.Subscript):
                        base = base.value
                    if isinstance(base, ast.Name) and base.id in module.globals_:
                        return (f"{function.name} stores into module-level {base.id} (line "
                                f"{node.lineno}): results kept across calls")
                    if _self_attr(base) is not None:
                        return (f"{function.name} stores into self.{_self_attr(base)} (line "
                                f"{node.lineno}): results kept across calls")
                attr = _self_attr(target)
                if attr is not None and _under_if(node, parents):
                    conditional.add(attr)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("setdefault", "update", "__setitem__") \
                    and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id in module.globals_:
                return (f"{function.name} stores into module-level {node.func.value.id} "
                        f"(line {node.lineno}): results kept across calls")
    for _, function in path.functions:
        parents = {child: parent for parent in ast.walk(function)
                   for child in ast.iter_child_nodes(parent)}
        for node in ast.walk(function):
            if not isinstance(node, ast.Return):
                continue
            for value in _returned(node.value):
                attr = _self_attr(value)
                if attr is None:
                    continue
                if attr in conditional or _tested(node, parents, attr):
                    return (f"{function.name} returns self.{attr}, which it computes only "
                            f"under a condition (line {node.lineno}): an output kept from an "
                            "earlier call")
    return None


def _under_if(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.If, ast.IfExp, ast.Try)):
            return True
    return False


def _tested(node: ast.AST, parents: dict[ast.AST, ast.AST], attr: str) -> bool:
    """Is `node` inside an ``if`` whose test reads ``self.<attr>``?"""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and any(_self_attr(n) == attr for n in ast.walk(node.test)):
            return True
    return False


def reference_ops(reference_source: str) -> dict[str, str]:
    """The operator families the reference ``Model``'s forward path calls -> how written."""
    module = _Module.parse(reference_source)
    if "Model" not in module.classes:
        return {}
    return {op.family: op.written for op in forward_path(module, "Model").ops
            if op.family not in PLUMBING}


def shortcut_check(code: str, reference_source: str) -> str | None:
    """Why `code` is no honest KernelBench solution (one sentence, ``static check: ...``), or
    None. A candidate that does not parse passes (the worker reports the syntax error)."""
    try:
        module = _Module.parse(code)
    except (SyntaxError, ValueError):
        return None
    if ENTRY not in module.classes:
        return f"static check: the candidate defines no class {ENTRY} (KernelBench's entry)"
    path = forward_path(module, ENTRY)
    if not any(function.name == "forward" for _, function in path.functions):
        return f"static check: {ENTRY} defines no forward"
    if not path.launched:
        defined = ", ".join(sorted(module.kernels)) or "none defined"
        return (f"static check: {ENTRY}'s forward never launches a @triton.jit kernel "
                f"(kernel[grid](...); kernels: {defined})")
    try:
        used = reference_ops(reference_source)
    except (SyntaxError, ValueError):
        used = {}
    for op in path.ops:
        if op.family in used and op.family not in PLUMBING:
            return (f"static check: {ENTRY}'s forward calls {op.written} (line {op.line}), "
                    f"the reference's own {op.family} operator ({used[op.family]}): a torch "
                    "fallback, not a Triton kernel")
    kept = _kept_state(path, module)
    if kept is not None:
        return f"static check: {ENTRY}: {kept}"
    return None
