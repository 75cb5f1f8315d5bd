"""The TritonBench-G file format: operator files, performance scripts, and running them.

- an *operator file* ``<op>.py`` holds Triton code, then a separator line of exactly 146 ``#``,
  then test code that leaves its results in a module-level ``result_gold`` (or, as the
  upstream benchmark's files also do, under another name: `results_variable`);
- a *performance script* ``<op>_perf.py`` imports the operator's function(s) (``from
  <pkg>.<op> import fn``) and ``Performance_Metrics`` (from ``performance_utils``), and subclasses
  it: ``get_input_tensors()`` fills ``self.input_tensors``, ``to_cuda(t)`` moves one entry to the
  GPU, ``call_op(t)`` runs the operator on one entry, ``get_gbps(t, ms)`` / ``get_tflops(t, ms)``
  turn a runtime into throughput.

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
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from live.pyast import parse
from live.tasks.loading import import_source

SEPARATOR = "#" * 146
PERF_SUFFIX = "_perf.py"
NAME_PREFIX = "tritonbench/"


#: where the test code's results are read
RESULT_NAME = "result_gold"
#: the module-level name a test function's dropped return value is kept under
CAPTURED_NAME = "_kb_result_gold"


def _call_of(node: ast.AST, functions: set[str]) -> bool:
    """Whether `node` calls one of the test code's own functions by name."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in functions)


def _single_name(node: ast.stmt) -> str | None:
    """The one name an assignment binds (``x = ...`` / ``x: T = ...``), else None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _is_dict(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Dict) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == "dict")


def results_variable(test_code: str) -> tuple[str, str | None]:
    """(test code to run, the module-level name its results are left under; None: none found).

    ``result_gold`` when the test code assigns it at the top level. Otherwise the test's
    returned results: the last top-level statement that calls one of the test code's own
    functions, either assigned (``test_results = test_op()``: that name) or called bare
    (``test_op()``: that one line becomes ``_kb_result_gold = test_op()``, nothing else of the
    test code changes). Otherwise the last-built results dict: the last top-level name bound to
    ``{...}`` or ``dict(...)`` (test code that fills a module-level dict).
    """
    try:
        tree = parse(test_code)
    except SyntaxError:
        return test_code, None
    body = tree.body
    bound = {t.id for node in body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    bound |= {name for node in body if (name := _single_name(node)) is not None}
    if RESULT_NAME in bound:
        return test_code, RESULT_NAME
    functions = {node.name for node in body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in reversed(body):
        name = _single_name(node)
        if name is not None and _call_of(getattr(node, "value", None), functions):
            return test_code, name
        if isinstance(node, ast.Expr) and _call_of(node.value, functions):
            lines = test_code.splitlines(keepends=True)
            row = node.lineno - 1
            line = lines[row]
            lines[row] = (line[:node.col_offset] + f"{CAPTURED_NAME} = "
                          + line[node.col_offset:])
            return "".join(lines), CAPTURED_NAME
    for node in reversed(body):
        name = _single_name(node)
        if name is not None and _is_dict(getattr(node, "value", None)):
            return test_code, name
    return test_code, None


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


def test_code_imports(test_code: str) -> str:
    """The top-level import statements of `test_code`, one per line ('' if it does not parse).

    Some operators' code uses a module (``torch``) that only their test code imports: as a plain
    script the file runs top to bottom and works, so the imported module must see those imports
    too.
    """
    try:
        tree = parse(test_code)
    except (SyntaxError, ValueError):
        return ""
    return "".join(ast.unparse(node) + "\n" for node in tree.body
                   if isinstance(node, (ast.Import, ast.ImportFrom)))


def module_code(code: str, test_code: str) -> str:
    """What to import for an operator: its code plus its test code's imports (NOTE D65)."""
    imports = test_code_imports(test_code)
    if not imports:
        return code
    return code.rstrip("\n") + "\n\n# imports of the operator's test code\n" + imports


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


@functools.lru_cache(maxsize=8)
def _discovered(path: str) -> dict[str, OperatorSource]:
    return {source.op: source for source in discover(Path(path))}


def operator_source(path: str, op: str) -> OperatorSource:
    """The operator ``op`` under ``path`` (discovery cached per path)."""
    sources = _discovered(path)
    if op not in sources:
        raise ValueError(f"no TritonBench operator {op!r} under {path}; operators there: "
                         f"{', '.join(sources)}.")
    return sources[op]


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
    tree = _RetargetCuda(device).visit(parse(source))
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


def performance_utils_path(perf_dir: Path) -> Path | None:
    """The ``performance_utils.py`` a script in `perf_dir` imports (None: the fallback)."""
    for folder in (perf_dir, *perf_dir.parents[:2]):
        utils = folder / "performance_utils.py"
        if utils.is_file():
            return utils
    return None


@functools.lru_cache(maxsize=16)
def _performance_utils(perf_dir: str) -> dict[str, Any]:
    utils = performance_utils_path(Path(perf_dir))
    if utils is not None:
        return vars(import_source(utils.read_text(), "performance_utils"))
    return {"Performance_Metrics": _FallbackPerformanceMetrics,
            "do_bench_config": _FallbackDoBenchConfig}


def perf_class(source: OperatorSource, module: ModuleType, device: str) -> type:
    """Execute the performance script with the operator's imports bound to ``module``'s
    functions and return its ``Performance_Metrics`` subclass."""
    assert source.perf_path is not None
    tree = parse(retarget(source.perf_path.read_text(), device))
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


def imported_names(source: OperatorSource) -> list[str]:
    """The operator functions its performance script imports (the task's public API)."""
    assert source.perf_path is not None
    names = []
    for node in parse(source.perf_path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[-1] == source.op:
            names += [alias.name for alias in node.names]
    return names
