"""The forward path of a module's class, read from its syntax: what ``<class>.forward`` reaches
and which torch operators it calls there (``live.tasks.kernelbench.shortcuts`` judges them).

``forward_path`` follows ``forward`` through the class's methods and its bases' (``super()``),
module-level functions and classes, and the submodules its constructor makes (``self.conv =
nn.Conv2d(...)``, containers such as ``nn.Sequential(*layers)`` called whole or iterated); on
that path it records each call of a possible torch operator by family (``op_family``) and each
launch (``kernel[grid](...)``) of a ``@triton.jit`` function. Kernel bodies are not read.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from live import pyast
from live.evaluator.languages import TRITON, dotted_name

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
class Module:
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
    def parse(cls, code: str) -> Module:
        tree = pyast.parse(code)
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


def _torch_op(call: ast.Call, module: Module, own_methods: set[str]) -> str | None:
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


def _submodule_op(callee: ast.expr, module: Module) -> str | None:
    """The operator an ``nn.X(...)`` submodule stands for (None: one of the module's own)."""
    name = dotted_name(callee)
    root = name.split(".")[0]
    if root in module.torch_modules or root in module.torch_names:
        return name.split(".")[-1]
    return None


def forward_path(module: Module, class_name: str) -> ForwardPath:
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
        for node in walk_outside_kernels(function, module):
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
            iterated = [n for n in ast.walk(node.iter) if self_attr(n) is not None]
            if any(_is_container(made.get(self_attr(n) or "")) for n in iterated):
                names.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return names


def _container_called(func: ast.expr, made: dict[str, ast.expr],
                      members: set[str]) -> str | None:
    """The container a call runs (``self.net(x)``, ``self.layers[i](x)``, ``layer(x)`` in a
    loop over one), or None."""
    if isinstance(func, ast.Name) and func.id in members:
        return func.id
    attr = self_attr(func)
    if attr is not None and _is_container(made.get(attr)):
        return attr
    return None


def _add_callee(callee: ast.expr, module: Module, ops: list[OpCall], line: int,
                visit_class: object) -> None:
    name = dotted_name(callee)
    if name in module.classes:
        visit_class(name, "forward")  # type: ignore[operator]
        visit_class(name, "__call__")  # type: ignore[operator]
        return
    op = _submodule_op(callee, module)
    if op is not None:
        ops.append(OpCall(op_family(op), f"an nn.{op} submodule", line))


def _bases(module: Module, owner: str) -> list[str]:
    node = module.classes.get(owner)
    return [dotted_name(b) for b in node.bases] if node is not None else []


def walk_outside_kernels(function: ast.FunctionDef, module: Module) -> Iterator[ast.AST]:
    """Every node of `function`, nested kernel definitions left out."""
    todo: list[ast.AST] = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef) and any(
                TRITON.is_kernel_decorator(d) for d in node.decorator_list):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def self_attr(node: ast.AST) -> str | None:
    """``X`` for ``self.X`` or ``self.X[...]``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self":
        return node.attr
    return None
