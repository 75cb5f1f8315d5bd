"""Run ``torch.compile`` (inductor, default mode) on a KernelBench problem and wrap its generated
Triton code as ``ModelNew`` (worker side; the wrapping itself is ``live.tasks.kernelbench.k0``).

``compile_problem`` compiles the reference model (built as the task builds it, on the task's
device, in autograd-free mode as the task calls it) with ``fullgraph=True`` through a backend
that records the graph's inputs (where ``torch.compile`` found each: a forward argument or a
parameter of the model) before handing the graph to inductor, runs it once on the problem's
input (the model's first call: no eager call before it), and reads the generated module's
source and the launch configuration inductor's autotuner chose for each kernel.
``k0_in_worker`` does that in an evaluator worker and then checks the wrapped k0 there as the
load-time gold check checks a k0 (``check_only``).
"""

from __future__ import annotations

import ast
import time
from pathlib import Path
from typing import Any

from live.evaluator.messages import GoldCheckRequest
from live.pyast import parse
from live.tasks.kernelbench.k0 import LaunchConfig, NoK0, source_expression, wrap_as_model_new
from live.tasks.kernelbench.problems import Problem


def forward_arguments(problem_source: str) -> str:
    """``Model.forward``'s parameter list as written (``self, x, y=None``)."""
    tree = parse(problem_source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return ast.unparse(item.args)
    raise NoK0("the problem's Model has no forward")


def _chosen_configs(names: list[str]) -> dict[str, LaunchConfig]:
    """The configuration inductor's autotuner kept for each kernel of the loaded generated
    module (the one defining ``call`` and every kernel in `names`), or its only one; none where
    neither can be read (the wrapper then uses a default)."""
    from torch._inductor.codecache import PyCodeCache

    module = next((m for m in reversed(list(PyCodeCache.modules)) if hasattr(m, "call")
                   and all(hasattr(m, name) for name in names)), None)
    configs: dict[str, LaunchConfig] = {}
    for name in names:
        kernel = getattr(module, name, None)
        launchers = getattr(kernel, "launchers", None) or []
        config = getattr(launchers[0], "config", None) if launchers else None
        if config is None and len(getattr(kernel, "configs", None) or []) == 1:
            config = kernel.configs[0]
        if config is None:
            continue
        configs[name] = LaunchConfig({k: int(v) for k, v in config.kwargs.items()
                                      if isinstance(v, int)},
                                     int(config.num_warps), int(config.num_stages or 1))
    return configs


def _failed(what: str, exc: BaseException) -> NoK0:
    """``what: ExceptionType: its message`` (whitespace folded, cut at 300 characters), and
    the failure's kind where the device ran out of memory."""
    from live.evaluator.failures import FailureKind, exception_kind

    first = " ".join(str(exc).split())[:300]
    # cuBLAS that cannot allocate its workspace raises a plain RuntimeError (the reference's
    # own, not a candidate's: its message is safe to read)
    out_of_memory = exception_kind(exc) is FailureKind.OUT_OF_MEMORY or (
        type(exc) is RuntimeError and "CUBLAS_STATUS_ALLOC_FAILED" in str(exc))
    return NoK0(f"{what}: {type(exc).__name__}: {first}",
                FailureKind.OUT_OF_MEMORY.value if out_of_memory else None)


def release_device_memory() -> None:
    """Drop what a compile left on the device before the check runs in the same worker:
    dynamo's compiled frames (whose guards and graphs hold the reference model and its
    parameters), the objects only cycles still hold, and the allocator's cached blocks."""
    import gc

    import torch
    import torch._dynamo

    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        try:
            torch.cuda.empty_cache()
        except RuntimeError:  # a device left failed (CUDA's errors are sticky): the check
            pass              # says so itself, and the worker is replaced after this call


def reorder_warnings() -> None:
    """Let dynamo trace a ``warnings.warn`` call in one graph, issuing the warning after it
    (as it does ``print``): under ``fullgraph=True`` it was a graph break, and a problem whose
    reference warns (``nn.InstanceNorm`` on an input whose size is not its ``num_features``)
    got no k0."""
    import warnings

    import torch._dynamo

    torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)


def compile_problem(problem: Problem, device: str) -> dict[str, Any]:
    """What ``wrap_as_model_new`` needs for `problem` on `device`, from one compiled run."""
    import torch
    import torch._dynamo
    import torch._inductor.config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code

    from live.tasks.kernelbench.k0 import inductor_kernels
    from live.tasks.kernelbench.task import ProblemRuntime, make_inputs

    if device != "cuda":
        raise NoK0("on the CPU inductor generates C++, not Triton: run this on a GPU")
    runtime = ProblemRuntime(problem)
    source = problem.path.read_text(encoding="utf-8")
    forward_args = forward_arguments(source)
    try:
        model = runtime.reference_model(device)
        inputs = make_inputs(runtime, {}, 0, device)
    except Exception as exc:  # noqa: BLE001 - the reference that cannot be built is a reason
        raise _failed("making the reference model and its inputs failed", exc) from None
    graphs: list[list[Any]] = []

    def recording_backend(gm: Any, example_inputs: Any) -> Any:
        graphs.append([node.meta.get("grapharg") for node in gm.graph.nodes
                       if node.op == "placeholder"])
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    reorder_warnings()
    torch._inductor.config.compile_threads = 1  # no compile pool inside an evaluator worker
    torch._inductor.config.fx_graph_cache = False  # a cache hit need not show the code
    compiled = torch.compile(model, backend=recording_backend, fullgraph=True)
    try:
        with torch.no_grad():
            # compiled on the model as built, before any call: a forward that changes the
            # model's state (an RNN's hidden tensor moved to the device and replaced) is
            # traced from the state ModelNew starts from; its result gives the output's form
            result, codes = run_and_get_code(compiled, *inputs)
    except Exception as exc:  # noqa: BLE001 - a problem inductor cannot compile is a reason
        raise _failed("torch.compile failed", exc) from None
    if len(graphs) != 1 or len(codes) != 1:
        raise NoK0(f"torch.compile made {len(graphs)} graphs and {len(codes)} modules (one "
                   "of each is wrapped)")
    graph_inputs = []
    for arg in graphs[0]:
        source_ = getattr(arg, "source", None)
        if source_ is None:
            raise NoK0("a graph input has no recorded source (a dynamic size or a constant)")
        name = source_.name() if callable(source_.name) else source_.name
        graph_inputs.append(source_expression(str(name)))
    if isinstance(result, torch.Tensor):
        n_outputs = None
    elif isinstance(result, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in result):
        n_outputs = len(result)
    else:
        raise NoK0(f"the forward returns a {type(result).__name__}, not a tensor or a tuple "
                   "of them")
    _, kernels = inductor_kernels(codes[0])
    return {"output_code": codes[0], "forward_args": forward_args,
            "graph_inputs": graph_inputs, "n_outputs": n_outputs,
            "configs": {k: v.to_dict() for k, v in
                        _chosen_configs(list(kernels)).items()},
            "note": f"torch {torch.__version__}, default mode, {problem.name}"}


def k0_for(problem: Problem, device: str) -> str:
    """The wrapped k0 of `problem`; NoK0 says why there is none."""
    compiled = compile_problem(problem, device)
    configs = {k: LaunchConfig.from_dict(v) for k, v in compiled["configs"].items()}
    return wrap_as_model_new(compiled["output_code"], problem.path.read_text(encoding="utf-8"),
                             compiled["forward_args"], compiled["graph_inputs"],
                             compiled["n_outputs"], configs, note=compiled["note"])


def k0_in_worker(runner: Any, workdir: Path, task_spec: str, task_name: str) -> dict[str, Any]:
    """Worker side: the problem's k0 (``code``) and its check (``check_status``,
    ``check_error``), or ``status: no_k0`` with the ``reason``."""
    from live.tasks.kernelbench import find

    started = time.perf_counter()
    arg = task_spec.removeprefix("kernelbench:")
    try:
        code = k0_for(find(arg, task_name), runner.device)
    except NoK0 as exc:
        return {"status": "no_k0", "reason": str(exc), "recycle": True,
                "compile_s": time.perf_counter() - started,
                **({"failure_kind": exc.failure_kind} if exc.failure_kind else {})}
    finally:
        if runner.device == "cuda":
            release_device_memory()
    compile_s = time.perf_counter() - started
    # checked only, as a load-time check without its per-shape rounds
    request = GoldCheckRequest(task_spec=task_spec, task_name=task_name, code=code, seed=0,
                               n_seeds=1, keep_going=False, measure_peaks=False)
    response = runner.evaluate(request, workdir, on_compiled=lambda: None)
    return {"status": "ok", "code": code, "check_status": response.status,
            "check_error": response.error, "check_failure_kind": response.failure_kind,
            "compile_s": compile_s,
            "check_s": time.perf_counter() - started - compile_s, "recycle": True}
