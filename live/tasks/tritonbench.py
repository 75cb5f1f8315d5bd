"""TritonBench-G adapter: a TritonBench-G checkout (or the KernelBand authors' corrected copy) as
kernelband tasks.

The format, as this adapter reads it:

- an *operator file* ``<op>.py`` holds Triton code, then a separator line of exactly 146 ``#``,
  then test code that leaves its results in a module-level ``result_gold``;
- a *performance script* ``<op>_perf.py`` imports the operator's function(s) (``from
  <pkg>.<op> import fn``) and ``Performance_Metrics`` (from ``performance_utils``), and subclasses
  it: ``get_input_tensors()`` fills ``self.input_tensors``, ``to_cuda(t)`` moves one entry to the
  GPU, ``call_op(t)`` runs the operator on one entry, ``get_gbps(t, ms)`` / ``get_tflops(t, ms)``
  turn a runtime into throughput.

Each operator with both files becomes a ``Task`` named ``tritonbench/<op>`` with
``call_style="returns"``: the gold code (above the separator) is both ``k0`` and the reference;
a candidate is a whole operator file (any test code in it is ignored). One performance input is
one shape, ``{"index": i}``; the candidate must match the gold outputs on it (``task.run`` calls
the perf script's ``call_op`` with the candidate's functions bound in), and ``task.source_check``
runs the operator's own test code against the candidate and compares its ``result_gold`` with the
gold code's (allclose, dtype tolerances). Byte and FLOP counts come from ``get_gbps`` and
``get_tflops`` evaluated at a runtime of 1 ms. Inputs are made on the CPU by
``get_input_tensors()`` under ``torch.manual_seed(seed)`` (in a forked RNG, so global state is
untouched) and moved with ``.to(device)``; the script's ``to_cuda`` is not called.

``load_tritonbench(path)`` also runs every operator's gold-vs-gold check on this machine (GPU if
available, else the CPU interpreter on the two smallest inputs) and returns the failures as
``skipped`` instead of silently counting them.

NOTE (D2): on a CPU, string constants ``"cuda"`` and ``.cuda()`` calls in the *test code and
performance scripts* are retargeted to the CPU (an AST rewrite), so that the CPU interpreter can
check the adapter; operator code is never rewritten, so an operator that hard-codes ``cuda`` can
only be checked on a GPU.
NOTE (D3): when no ``performance_utils.py`` is found beside a performance script, a minimal
built-in ``Performance_Metrics`` stands in for it (the scripts only need its constructor).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from live.evaluator.checks import compare_values
from live.tasks.base import Task
from live.tasks.loading import import_source
from live.tasks.selfcheck import interpreter_for
from live.tasks.skips import Loaded, Skipped

SEPARATOR = "#" * 146
PERF_SUFFIX = "_perf.py"
NAME_PREFIX = "tritonbench/"
#: operator outputs are compared with these unless the dtype has a default in base.py
_CPU_SHAPES = 2


@dataclass(frozen=True)
class OperatorSource:
    """One operator: its name, the gold code, its test code and its performance script."""

    op: str
    code: str
    test_code: str
    operator_path: Path
    perf_path: Path | None


def split_operator_file(text: str) -> tuple[str, str] | None:
    """(code, test_code) split at the first line of exactly 146 ``#``; None without one."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.strip() == SEPARATOR:
            return "".join(lines[:index]), "".join(lines[index + 1:])
    return None


def discover(path: Path) -> list[OperatorSource]:
    """Every operator file under ``path`` (recursively), paired with its ``<op>_perf.py``.

    Raises ValueError with one sentence when ``path`` is not a folder holding operator files.
    """
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"{path} is not a TritonBench-G folder: no such directory.")
    perf_scripts: dict[str, Path] = {}
    for perf in sorted(path.rglob(f"*{PERF_SUFFIX}")):
        perf_scripts.setdefault(perf.name[: -len(PERF_SUFFIX)], perf)
    operators: dict[str, OperatorSource] = {}
    for candidate in sorted(path.rglob("*.py")):
        if candidate.name.endswith(PERF_SUFFIX) or candidate.stem in operators:
            continue
        try:
            split = split_operator_file(candidate.read_text(errors="replace"))
        except OSError:
            continue
        if split is None:
            continue
        code, test_code = split
        operators[candidate.stem] = OperatorSource(
            candidate.stem, code, test_code, candidate, perf_scripts.get(candidate.stem))
    if not operators:
        raise ValueError(
            f"{path} is not a TritonBench-G folder: no operator file (Triton code, a line of 146 "
            "'#', then test code) was found under it."
        )
    return sorted(operators.values(), key=lambda source: source.op)


@functools.lru_cache(maxsize=64)
def _operator(path: str, op: str) -> OperatorSource:
    for source in discover(Path(path)):
        if source.op == op:
            return source
    known = ", ".join(source.op for source in discover(Path(path)))
    raise ValueError(f"no TritonBench operator {op!r} under {path}; operators there: {known}.")


# ---------------------------------------------------------------------------------------------
# device retargeting (CPU checks only) and performance-script execution


class _RetargetCuda(ast.NodeTransformer):
    """Rewrite ``"cuda"`` / ``"cuda:N"`` constants and ``x.cuda()`` calls to another device."""

    def __init__(self, device: str) -> None:
        self.device = device

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and (node.value == "cuda" or node.value.startswith("cuda:")):
            return ast.copy_location(ast.Constant(self.device), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" and not node.args:
            func = ast.Attribute(node.func.value, "to", ast.Load())
            return ast.copy_location(ast.Call(func, [ast.Constant(self.device)], []), node)
        return node


def retarget(source: str, device: str) -> str:
    """``source`` with its CUDA device references pointed at ``device`` (unchanged on cuda)."""
    if device.startswith("cuda"):
        return source
    tree = _RetargetCuda(device).visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree))


class _FallbackPerformanceMetrics:
    """Stand-in for ``performance_utils.Performance_Metrics`` (NOTE D3)."""

    def __init__(self, op_name: str, dtype: Any = None, is_backward: bool = False, **kwargs: Any):
        self.op_name = op_name
        self.dtype = dtype
        self.is_backward = is_backward
        self.kwargs = kwargs
        self.input_tensors: list[Any] = []


class _FallbackDoBenchConfig:
    def __init__(self, warm_up: int = 25, repetition: int = 100, **kwargs: Any) -> None:
        self.warm_up = warm_up
        self.repetition = repetition


@functools.lru_cache(maxsize=16)
def _performance_utils(perf_dir: str) -> dict[str, Any]:
    for folder in (Path(perf_dir), *Path(perf_dir).parents[:2]):
        utils = folder / "performance_utils.py"
        if utils.is_file():
            module = import_source(utils.read_text(), "performance_utils")
            return vars(module)
    return {"Performance_Metrics": _FallbackPerformanceMetrics,
            "do_bench_config": _FallbackDoBenchConfig}


def _perf_class(source: OperatorSource, module: ModuleType, device: str) -> type:
    """Execute the performance script with the operator's imports bound to ``module``'s
    functions and return its ``Performance_Metrics`` subclass."""
    assert source.perf_path is not None
    tree = ast.parse(retarget(source.perf_path.read_text(), device))
    utils = _performance_utils(str(source.perf_path.parent))
    namespace: dict[str, Any] = {"__name__": f"kb_tritonbench_perf_{source.op}",
                                 "__file__": str(source.perf_path)}
    body: list[ast.stmt] = []
    class_name = None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            last = node.module.split(".")[-1]
            if last == source.op:
                for alias in node.names:
                    namespace[alias.asname or alias.name] = getattr(module, alias.name)
                continue
            if last == "performance_utils":
                for alias in node.names:
                    namespace[alias.asname or alias.name] = utils[alias.name]
                continue
        if _is_main_guard(node):
            continue
        if isinstance(node, ast.ClassDef) and any(
                _base_name(base) == "Performance_Metrics" for base in node.bases):
            class_name = node.name
        body.append(node)
    if class_name is None:
        raise ValueError(f"{source.perf_path} defines no Performance_Metrics subclass.")
    tree.body = body
    exec(compile(tree, str(source.perf_path), "exec"), namespace)  # the benchmark's own script
    return namespace[class_name]


def _is_main_guard(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__")


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _perf_instance(source: OperatorSource, module: ModuleType, device: str) -> Any:
    """The perf object bound to ``module``, cached on the module (one per device)."""
    attribute = f"_kb_perf_{source.op}_{device.replace(':', '_')}"
    instance = getattr(module, attribute, None)
    if instance is None:
        instance = _perf_class(source, module, device)()
        setattr(module, attribute, instance)
    return instance


# ---------------------------------------------------------------------------------------------
# the task's callables (top-level functions, bound with functools.partial)


@functools.lru_cache(maxsize=64)
def _gold_module(path: str, op: str) -> ModuleType:
    return import_source(_operator(path, op).code, f"tb_gold_{op}")


@functools.lru_cache(maxsize=4)
def _cpu_inputs(path: str, op: str, seed: int) -> tuple[list[Any], bool]:
    """All performance inputs for ``seed`` on the CPU, and whether entries are sequences."""
    source = _operator(path, op)
    perf = _perf_instance(source, _gold_module(path, op), "cpu")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        perf.get_input_tensors()
    entries = list(perf.input_tensors)
    perf.input_tensors = []
    if not entries:
        raise ValueError(f"{source.perf_path}: get_input_tensors() produced no inputs.")
    return entries, isinstance(entries[0], (tuple, list))


def make_inputs(path: str, op: str, shape: dict[str, int], seed: int, device: str) -> tuple:
    """Performance input number ``shape["index"]`` as a tuple (moved to ``device``)."""
    entries, is_sequence = _cpu_inputs(path, op, seed)
    entry = entries[shape["index"]]
    items = tuple(entry) if is_sequence else (entry,)
    return tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in items)


def run_operator(path: str, op: str, is_sequence: bool, module: ModuleType, inputs: tuple) -> tuple:
    """Call the perf script's ``call_op`` with ``module``'s functions; outputs as a tuple."""
    device = next((x.device.type for x in inputs if isinstance(x, torch.Tensor)), "cpu")
    perf = _perf_instance(_operator(path, op), module, device)
    return flatten_outputs(perf.call_op(inputs if is_sequence else inputs[0]))


def reference(path: str, op: str, is_sequence: bool, *inputs: Any) -> tuple:
    """The gold operator's outputs."""
    return run_operator(path, op, is_sequence, _gold_module(path, op), inputs)


def flatten_outputs(value: Any) -> tuple[torch.Tensor, ...]:
    """Tensors of a (nested) result in order; numbers become 0-d tensors."""
    if isinstance(value, torch.Tensor):
        return (value,)
    if isinstance(value, (tuple, list)):
        return tuple(t for item in value for t in flatten_outputs(item))
    if isinstance(value, dict):
        return tuple(t for key in value for t in flatten_outputs(value[key]))
    if isinstance(value, (int, float, bool)):
        return (torch.tensor(value),)
    if value is None:
        return ()
    raise TypeError(f"operator returned a {type(value).__name__}, not tensors")


def result_gold_of(code: str, test_code: str, device: str, stem: str) -> Any:
    """Run ``code`` followed by the (retargeted) test code; return its ``result_gold``."""
    module = import_source(code + "\n\n" + retarget(test_code, device) + "\n", stem)
    if not hasattr(module, "result_gold"):
        raise ValueError("the test code defines no result_gold")
    return module.result_gold


@functools.lru_cache(maxsize=64)
def _gold_result(path: str, op: str, device: str) -> Any:
    source = _operator(path, op)
    return result_gold_of(source.code, source.test_code, device, f"tb_goldtest_{op}")


def _default_tolerance(dtype_name: str) -> tuple[float, float]:
    from live.tasks.base import DEFAULT_TOLERANCES

    return DEFAULT_TOLERANCES.get(dtype_name.removeprefix("torch."), (1e-5, 1e-5))


def compare_results(got: Any, expected: Any, where: str = "result_gold") -> str | None:
    """None when two nested results agree (``live.evaluator.checks.compare_values``)."""
    return compare_values(got, expected, _default_tolerance, where)


def code_part(candidate_source: str) -> str:
    """The code above the separator of a whole operator file (all of it without one)."""
    split = split_operator_file(candidate_source)
    return split[0] if split else candidate_source


def source_check(path: str, op: str, candidate_source: str, device: str) -> str | None:
    """Run the operator's test code on the candidate; compare ``result_gold`` with the gold's."""
    code = code_part(candidate_source)
    source = _operator(path, op)
    expected = _gold_result(path, op, device)
    try:
        got = result_gold_of(code, source.test_code, device, f"tb_candtest_{op}")
    except Exception as exc:
        return f"the operator's test code raised {type(exc).__name__}: {exc}"
    return compare_results(got, expected)


def _table_lookup(table: dict[int, int], shape: dict[str, int]) -> int:
    return table[shape["index"]]


# ---------------------------------------------------------------------------------------------
# building and loading


def tritonbench_task(path: Path | str, name: str) -> Task:
    """Build the task for one operator (``add`` or ``tritonbench/add``) without the gold check."""
    path_str = str(Path(path).resolve())
    op = name.removeprefix(NAME_PREFIX)
    source = _operator(path_str, op)
    if source.perf_path is None:
        raise ValueError(f"operator {op!r} has no {op}{PERF_SUFFIX} performance script.")
    entries, is_sequence = _cpu_inputs(path_str, op, 0)
    perf = _perf_instance(source, _gold_module(path_str, op), "cpu")
    bytes_table, flops_table = {}, {}
    for index, entry in enumerate(entries):
        try:
            bytes_table[index] = int(round(perf.get_gbps(entry, 1.0) * 1e6))
            flops_table[index] = int(round(perf.get_tflops(entry, 1.0) * 1e9))
        except Exception:  # a script without usable throughput formulas: no roofline figures
            bytes_table, flops_table = {}, {}
            break
    shapes = [{"index": index} for index in range(len(entries))]
    sizes = [sum(x.numel() for x in (e if is_sequence else (e,)) if isinstance(x, torch.Tensor))
             for e in entries]
    smallest = sorted(range(len(entries)), key=lambda index: sizes[index])[:_CPU_SHAPES]
    entry_functions = _imported_names(source)
    return Task(
        name=NAME_PREFIX + op,
        description=f"TritonBench-G operator {op!r} ({source.operator_path.name}). A candidate "
        "is a whole operator file that keeps the gold code's public functions and signatures: "
        f"{', '.join(entry_functions) or op}.",
        category="tritonbench",
        entry=entry_functions[0] if entry_functions else op,
        k0=source.code,
        reference=functools.partial(reference, path_str, op, is_sequence),
        make_inputs=functools.partial(make_inputs, path_str, op),
        # the smallest inputs double as test shapes, so a GPU checks them with several seeds
        test_shapes=[shapes[index] for index in sorted(smallest)],
        perf_shapes=shapes,
        cpu_shapes=[shapes[index] for index in sorted(smallest)],
        bytes_moved=functools.partial(_table_lookup, bytes_table) if bytes_table else None,
        flops=functools.partial(_table_lookup, flops_table) if flops_table else None,
        source=f"tritonbench:{path_str}",
        call_style="returns",
        run=functools.partial(run_operator, path_str, op, is_sequence),
        source_check=functools.partial(source_check, path_str, op),
        prepare_source=code_part,
    )


def _imported_names(source: OperatorSource) -> list[str]:
    assert source.perf_path is not None
    names = []
    for node in ast.parse(source.perf_path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[-1] == source.op:
            names += [alias.name for alias in node.names]
    return names


def load_checked(path: Path, options: Any = None) -> Loaded:
    """``load_tritonbench`` for the task-source registry (``LoadOptions`` honoured: device)."""
    device = getattr(options, "device", "auto") or "auto"
    tasks, skipped = load_tritonbench(path, None if device == "auto" else device)
    return Loaded(tasks, [Skipped(op, reason) for op, reason in skipped])


def load_tritonbench(
    path: Path | str, device: str | None = None, ops: Sequence[str] | None = None
) -> tuple[list[Task], list[tuple[str, str]]]:
    """Every operator under ``path`` that passes its gold-vs-gold check on ``device`` (default:
    cuda when available, else cpu), and ``skipped``: ``(op, reason)`` for each one that does not
    (no performance script, a script or test that fails, or gold outputs that disagree with
    themselves). ``ops`` restricts loading to those operators."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    with interpreter_for(device):
        return _load_checked(Path(path), device, ops)


def _load_checked(
    path: Path, device: str, ops: Sequence[str] | None
) -> tuple[list[Task], list[tuple[str, str]]]:
    from live.tasks.selfcheck import selfcheck

    tasks: list[Task] = []
    skipped: list[tuple[str, str]] = []
    for source in discover(path):
        if ops is not None and source.op not in ops:
            continue
        try:
            task = tritonbench_task(path, source.op)
        except Exception as exc:
            skipped.append((source.op, f"could not build the task: {type(exc).__name__}: {exc}"))
            continue
        result = selfcheck(task, device)
        if result.ok:
            tasks.append(task)
        else:
            skipped.append((source.op, "gold-vs-gold check failed: " + result.failures[0]))
    return tasks, skipped
