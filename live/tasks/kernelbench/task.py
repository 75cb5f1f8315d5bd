"""One KernelBench problem as a kernelband ``Task`` (worker and parent side).

- **Reference**: ``Model(*get_init_inputs())`` built once per device under a fixed seed
  (``INIT_SEED``, as KernelBench seeds before building each model), called on ``get_inputs()``
  without autograd.
- **Candidate**: a module defining ``ModelNew`` with the same constructor and forward. It is
  built under the same seed (so parameters a candidate creates the same way start equal), once
  per candidate module and device: every check of a candidate calls the same instance, so one
  that returns an output kept from an earlier call fails on the next input set.
- **Inputs**: ``get_inputs()`` under a seeded RNG (restored afterwards), made on the task's
  device (NOTE D98: KernelBench makes them on the CPU and moves them; made on the device they
  are other random values of the same distribution, in a fraction of the time for the
  gigabyte-sized ones), and any tensor left elsewhere is moved there.
- **KernelBench's protocol as check settings**: five random input sets (``test_shapes`` and
  ``cpu_shapes`` are ``{"kb_input_set": k}`` for k = 1..5, each a distinct seed) and
  atol = rtol = 1e-2 for every floating dtype (``tolerances``); the evaluator adds its own:
  several seeds per input set, the perf input (the problem's own sizes, ``perf_shapes = [{}]``)
  checked before it is timed, inputs checked for mutation.
- **Poisoned outputs** (``call_context``): a candidate allocates its own outputs, so on a GPU
  the allocator's free memory is filled with NaN bytes before every checked call (a block as
  large as the reference's outputs, at most 2 GiB, freed again): an output the candidate
  allocates but does not write holds NaN and fails. The same context seeds the RNG, so a model
  that draws random numbers in its forward (dropout, random initial states) draws the same ones
  for reference and candidate.

Tasks are rebuilt in workers from ``(spec, name)``; every callable here is a
``functools.partial`` of a top-level function over a ``ProblemRuntime`` (not pickled).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch

from live.tasks.base import ShapeVerdict, Task, TaskHooks
from live.tasks.findings import TaskFindings
from live.tasks.kernelbench.problems import Problem, category
from live.tasks.loading import exec_module_file

#: the seed models are built under (KernelBench's default)
INIT_SEED = 42
#: the seed the RNG holds during every checked call (dropout, random states in a forward)
CALL_SEED = 1234
#: KernelBench's correctness protocol: this many random input sets, this tolerance
INPUT_SETS = 5
TOLERANCE = (1e-2, 1e-2)
#: the shape key that picks an input set (never a problem's own global)
INPUT_SET_KEY = "kb_input_set"
#: the class a candidate must define
ENTRY = "ModelNew"
#: the most free memory poisoned before a checked call (an output larger than this may land
#: in memory the allocator had not cached: not poisoned)
POISON_MAX_BYTES = 2 * 2**30
#: seed distance between input sets
_SET_STRIDE = 7919

_FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16", "complex64", "complex128")


def gold_candidate(source: str) -> str:
    """The problem's own code as a candidate: ``ModelNew`` is ``Model`` (gold vs gold)."""
    return (source.rstrip() + "\n\n\n"
            "class ModelNew(Model):\n"
            "    \"\"\"The reference itself, as a candidate (gold vs gold).\"\"\"\n")


def compiled_candidate(source: str) -> str:
    """The problem's own code with ``ModelNew``'s forward under ``torch.compile`` (inductor,
    default mode; compiled at its first call): the second baseline of KernelBench's ``fast_p``,
    timed by the evaluator's protocol as a baseline module (`TaskHooks.compiled_reference`)."""
    return (source.rstrip() + "\n\n\nimport torch as _kb_torch  # noqa: E402\n\n\n"
            "class ModelNew(Model):\n"
            "    \"\"\"The reference under torch.compile (default mode).\"\"\"\n\n"
            "    def forward(self, *args):\n"
            "        compiled = self.__dict__.get(\"_kb_compiled\")\n"
            "        if compiled is None:\n"
            "            compiled = _kb_torch.compile(super().forward)\n"
            "            self.__dict__[\"_kb_compiled\"] = compiled\n"
            "        return compiled(*args)\n")


def _device_of(values: tuple) -> str:
    for value in values:
        if isinstance(value, torch.Tensor):
            return str(value.device)
    return "cpu"


def _to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


@contextlib.contextmanager
def _seeded(seed: int, device: str) -> Iterator[None]:
    """The global torch RNG (CPU and `device`'s) seeded, and put back afterwards."""
    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices, device_type="cuda" if devices else "cpu"):
        torch.manual_seed(seed)
        yield


class ProblemRuntime:
    """A problem's module, its reference model per device, and the candidates' models."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self._module: ModuleType | None = None
        self._references: dict[str, torch.nn.Module] = {}
        self._candidates: weakref.WeakKeyDictionary[ModuleType, dict[str, torch.nn.Module]] = \
            weakref.WeakKeyDictionary()
        #: bytes of the last reference call's outputs (what a checked call poisons)
        self.output_bytes = 0

    @property
    def module(self) -> ModuleType:
        if self._module is None:
            name = "kb_problem_" + "".join(c if c.isalnum() else "_" for c in self.problem.name)
            self._module = exec_module_file(self.problem.path, name, keep=False)
        return self._module

    def init_inputs(self, device: str) -> list[Any]:
        with _seeded(INIT_SEED, device):
            return list(_to_device(list(self.module.get_init_inputs()), device))

    def _build(self, cls: type, device: str) -> torch.nn.Module:
        init = self.init_inputs("cpu")
        with _seeded(INIT_SEED, "cpu"):
            model = cls(*init)
        return model.to(device) if isinstance(model, torch.nn.Module) else model

    def reference_model(self, device: str) -> torch.nn.Module:
        if device not in self._references:
            self._references[device] = self._build(self.module.Model, device)
        return self._references[device]

    def candidate_model(self, module: ModuleType, device: str) -> torch.nn.Module:
        models = self._candidates.setdefault(module, {})
        if device not in models:
            cls = getattr(module, ENTRY, None)
            if not isinstance(cls, type):
                raise TypeError(f"the candidate defines no class {ENTRY} (KernelBench: a "
                                f"module with class {ENTRY}(nn.Module), same constructor and "
                                "forward as Model)")
            models[device] = self._build(cls, device)
        return models[device]

    def release(self) -> None:
        self._references.clear()
        self._candidates = weakref.WeakKeyDictionary()


def make_inputs(runtime: ProblemRuntime, shape: dict[str, int], seed: int,
                device: str) -> tuple:
    """``get_inputs()`` for input set ``shape[INPUT_SET_KEY]`` (0: the perf input) under
    `seed`, on `device`."""
    input_set = int(shape.get(INPUT_SET_KEY, 0))
    with _seeded(seed + _SET_STRIDE * input_set, device), torch.device(device):
        inputs = runtime.module.get_inputs()
    return tuple(_to_device(list(inputs), device))


def reference(runtime: ProblemRuntime, *inputs: Any) -> Any:
    """The reference model's forward on `inputs` (no autograd)."""
    model = runtime.reference_model(_device_of(inputs))
    with torch.no_grad():
        out = model(*inputs)
    values = out if isinstance(out, (tuple, list)) else (out,)
    runtime.output_bytes = sum(v.numel() * v.element_size() for v in values
                               if isinstance(v, torch.Tensor))
    return out


def run(runtime: ProblemRuntime, module: ModuleType, inputs: tuple) -> tuple:
    """The candidate's ``ModelNew`` forward on `inputs` (no autograd), as a tuple."""
    model = runtime.candidate_model(module, _device_of(inputs))
    with torch.no_grad():
        out = model(*inputs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@contextlib.contextmanager
def call_context(runtime: ProblemRuntime) -> Iterator[None]:
    """Around each checked call: a seeded RNG and, on a GPU, NaN bytes in the allocator's free
    memory (see the module docstring)."""
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    if cuda and runtime.output_bytes:
        size = min(runtime.output_bytes, POISON_MAX_BYTES)
        poison = torch.empty(size, dtype=torch.uint8, device="cuda")
        poison.fill_(0xFF)  # every float dtype reads 0xFF... as NaN
        del poison
    with _seeded(CALL_SEED, "cuda" if cuda else "cpu"):
        yield


def release(runtime: ProblemRuntime) -> None:
    runtime.release()


def describe_task(task: Task) -> dict[str, Any]:
    """Worker side: what the parent keeps with a gold check (nothing to rebuild from: a task
    is made from its file without running it)."""
    return {"task": task.name}


def _description(problem: Problem, source: str) -> str:
    return (f"KernelBench {problem.level} problem {problem.number} ({problem.stem}). Write "
            f"a module defining class {ENTRY}(nn.Module) with Model's constructor and forward "
            "that computes the same outputs with Triton kernels (launched from its forward), "
            "without calling the PyTorch operators Model uses for its work. The problem:\n\n"
            + source.strip())


def kernelbench_findings(meta: dict[str, Any] | None = None) -> TaskFindings:
    """A problem's findings: `meta`, a gold check's per-shape verdicts and peaks (none
    without a check)."""
    meta = meta or {}
    return TaskFindings(
        shape_verdicts={int(k): ShapeVerdict(**v)
                        for k, v in (meta.get("verdicts") or {}).items()},
        measured_peak_bytes={int(k): int(v) for k, v in (meta.get("peaks") or {}).items()})


def kernelbench_task(problem: Problem, source_spec: str,
                     runtime: ProblemRuntime | None = None) -> Task:
    """The ``Task`` of `problem` (its findings: `kernelbench_findings`)."""
    runtime = runtime or ProblemRuntime(problem)
    source = problem.path.read_text(encoding="utf-8")
    k0 = (problem.k0_path.read_text(encoding="utf-8") if problem.k0_path is not None
          else gold_candidate(source))
    input_sets = tuple({INPUT_SET_KEY: k} for k in range(1, INPUT_SETS + 1))
    return Task(
        name=problem.task_name,
        description=_description(problem, source),
        category=category(problem),
        entry=ENTRY,
        k0=k0,
        reference=functools.partial(reference, runtime),
        make_inputs=functools.partial(make_inputs, runtime),
        test_shapes=input_sets,
        perf_shapes=({},),
        cpu_shapes=input_sets,
        tolerances={dtype: TOLERANCE for dtype in _FLOAT_DTYPES},
        source=source_spec,
        call_style="returns",
        hooks=TaskHooks(run=functools.partial(run, runtime),
                        call_context=functools.partial(call_context, runtime),
                        release=functools.partial(release, runtime),
                        k0_is_reference=problem.k0_path is None,
                        compiled_reference=compiled_candidate(source)),
    )
