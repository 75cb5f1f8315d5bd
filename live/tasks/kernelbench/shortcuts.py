"""The KernelBench part of the static check: a candidate's ``ModelNew`` must do its work in a
Triton kernel it launches, not in the reference's torch operators, and must compute every output
anew.

``shortcut_check(code, reference_source) -> str | None`` reads both modules' syntax (it runs
nothing) and follows ``ModelNew.forward`` through what it calls (``live.tasks.kernelbench.
forward_path``: its own methods and its bases' (``super()``), module-level functions and
classes, and the submodules its constructor makes). On that path it refuses:

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
from collections.abc import Iterable

from live.evaluator.languages import dotted_name
from live.tasks.kernelbench.forward_path import (
    ForwardPath,
    Module,
    forward_path,
    op_family,
    self_attr,
    walk_outside_kernels,
)

__all__ = ["ENTRY", "PLUMBING", "forward_path", "op_family", "reference_ops", "shortcut_check"]

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


def _returned(value: ast.expr | None) -> Iterable[ast.expr]:
    if isinstance(value, (ast.Tuple, ast.List)):
        for item in value.elts:
            yield from _returned(item)
    elif value is not None:
        yield value


def _kept_state(path: ForwardPath, module: Module) -> str | None:
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
        for node in walk_outside_kernels(function, module):
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
                    if self_attr(base) is not None:
                        return (f"{function.name} stores into self.{self_attr(base)} (line "
                                f"{node.lineno}): results kept across calls")
                attr = self_attr(target)
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
                attr = self_attr(value)
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
        if isinstance(node, ast.If) and any(self_attr(n) == attr for n in ast.walk(node.test)):
            return True
    return False


def reference_ops(reference_source: str) -> dict[str, str]:
    """The operator families the reference ``Model``'s forward path calls -> how written."""
    module = Module.parse(reference_source)
    if "Model" not in module.classes:
        return {}
    return {op.family: op.written for op in forward_path(module, "Model").ops
            if op.family not in PLUMBING}


def shortcut_check(code: str, reference_source: str) -> str | None:
    """Why `code` is no honest KernelBench solution (one sentence, ``static check: ...``), or
    None. A candidate that does not parse passes (the worker reports the syntax error)."""
    try:
        module = Module.parse(code)
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
