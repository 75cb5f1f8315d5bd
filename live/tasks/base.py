"""The task format: what the kernel lab needs to judge a candidate for one operator.

A *candidate* is the source text of a Python module. How the evaluator calls it depends on
``task.call_style``:

- ``"dps"`` (destination-passing style; every built-in task): the module defines, beside its
  ``@triton.jit`` kernels, an entry function named ``task.entry``::

      def entry(*inputs, *outputs) -> None

  The evaluator allocates every output itself, shaped like the reference's outputs and pre-filled
  with NaN (float) or a sentinel (integer dtypes), so that elements a candidate forgets to write
  are caught.
- ``"returns"`` (TritonBench-G operators, whose functions allocate and return their results):
  ``outputs = task.hooks.run(module, inputs)``; the hook knows how to call the operator (for
  TritonBench, the perf script's ``call_op``) and normalises the result to a tuple of tensors.
  NaN poisoning does not apply (the operator allocates its own outputs).

``Task.call(module, inputs, outputs)`` hides the difference: it returns the outputs tuple for
either style. ``k0`` is a candidate too: plain, correct and deliberately not tuned.

A candidate is imported through ``task.module_source(code)`` (identity for the built-in tasks;
TritonBench tasks drop the test code below the separator): ``live.evaluator.loader``'s
``load_candidate`` does this for the evaluator's worker, the self-check and the profiler.

What a task source runs beyond the reference and the inputs (how to call an operator, its own
test code, the RNG state around a call, what to import of a candidate, what to drop after a
check) is one record, ``task.hooks`` (``TaskHooks``; empty for the built-in tasks), never
separate ``Task`` fields.

Optionally, ``task.hooks.source_check(candidate_source, device) -> str | None`` is an extra,
source-level correctness check run in the evaluator's worker: ``None`` means pass, a string is
the one-sentence reason it failed. TritonBench tasks use it to run the operator's own test code
against the candidate and compare its ``result_gold`` with the gold code's (allclose).

Shapes are dicts of named sizes (``{"M": 4096, "N": 1024}``); ``make_inputs(shape, seed,
device)`` builds the inputs for one shape (tensors and plain Python scalars; only tensors are
checked for mutation). Three shape lists serve three purposes: ``test_shapes`` (correctness on a
GPU), ``perf_shapes`` (timing and correctness on a GPU) and ``cpu_shapes`` (tiny: everything on
CPU under ``TRITON_INTERPRET=1``).

Tasks are never pickled: a worker rebuilds one from ``(spec, name)`` with
``live.tasks.registry.resolve_task(spec, name)``. Every callable a task holds is a top-level
function of an importable module, or a ``functools.partial`` of one.

A ``Task`` is the definition only. What its source found at load time (per-shape verdicts,
peak memory) and its limits on the shapes checked and timed are a separate record,
``live.tasks.findings.TaskFindings``, kept beside the task (``Loaded.findings``) and sent to
the worker with each request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

Shape = dict[str, int]

CALL_STYLES = ("dps", "returns")

#: default (atol, rtol) per dtype name
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "int8": (0.0, 0.0),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
}


@dataclass(frozen=True)
class ShapeVerdict:
    """What the load-time gold check decided for one perf shape (NOTE D73)."""

    kind: str  # "dropped" | "unchecked"
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "reason": self.reason}


@dataclass(frozen=True)
class TaskHooks:
    """What a task source adds for its tasks beyond the reference and the inputs: the
    functions it runs (each a top-level function of the source's modules, or a
    ``functools.partial`` of one; None: not used), and, for KernelBench, where k0 comes from
    and a second baseline. Built-in tasks have none.

    Attributes:
        run: for ``returns`` tasks: ``run(module, inputs) -> tuple[Tensor, ...]`` (a task with
            ``run`` is a ``returns`` task; see the module docstring).
        source_check: optional ``source_check(candidate_source, device) -> str | None``.
        source_note: optional ``source_note(device) -> str | None``: what the last passing
            source check left uncompared (TritonBench: result_gold elements where runs of the
            gold code disagree, NOTE D76), for the gold check's record.
        prepare_source: optional ``prepare_source(candidate_source) -> str``: what to import
            instead of the raw candidate (TritonBench: the code above the 146-``#`` separator,
            so a whole operator file's test code is not run at import). Use
            ``Task.module_source``.
        call_context: optional ``call_context() -> context manager`` entered around every
            checked call of the reference and of a candidate (not around timed calls);
            TritonBench tasks run each under the same seeded RNG state, since some operators
            draw their own random inputs inside the call.
        release: optional ``release()``: drop what the task keeps in this process (inputs made
            on the CPU); a load-time check worker calls it after each check, since its next
            check is another task's (TritonBench: one operator's inputs can take 30 GB).
        k0_is_reference: ``k0`` is the reference's own code (what a gold-vs-gold check runs),
            not a solution: a live run has the LLM proposer write k0 from the reference at
            step 0 (KernelBench without a k0 file; NOTE D100).
        compiled_reference: optional source of a candidate module that runs the reference
            under ``torch.compile`` (default mode): timed once per task as a second baseline
            (``compile_ms``: KernelBench's ``fast_p`` against ``torch.compile``).
    """

    run: Callable[[ModuleType, tuple], tuple] | None = None
    source_check: Callable[[str, str], str | None] | None = None
    source_note: Callable[[str], str | None] | None = None
    prepare_source: Callable[[str], str] | None = None
    call_context: Callable[[], AbstractContextManager[Any]] | None = None
    release: Callable[[], None] | None = None
    k0_is_reference: bool = False
    compiled_reference: str | None = None


@dataclass(frozen=True)
class Task:
    """One kernel optimization task.

    Attributes:
        name: unique id, used as ``task_id`` in traces (``softmax``, ``tritonbench/add``).
        description: one paragraph for prompts and docs.
        category: regime, e.g. ``elementwise``, ``reduction``, ``scan``, ``matmul``, ``attention``.
        entry: name of the entry function every candidate defines (``dps``), or the operator's
            public function (``returns``; informational, for prompts).
        k0: source of the initial candidate.
        reference: PyTorch reference, ``reference(*inputs) -> tuple[Tensor, ...]``.
        make_inputs: ``make_inputs(shape, seed, device) -> tuple`` of tensors and scalars.
        test_shapes, perf_shapes, cpu_shapes: see the module docstring.
        tolerances: ``dtype name -> (atol, rtol)``; defaults from ``DEFAULT_TOLERANCES``.
        bytes_moved: minimal DRAM bytes per shape (for % of roofline), or None.
        flops: floating-point operations per shape, or None.
        source: where the task came from (``builtin`` or ``tritonbench:PATH``).
        call_style: ``dps`` or ``returns``; see the module docstring.
        compute_dtype: dtype whose peak FLOP/s bounds the kernel (``float16`` for an fp16
            matmul), used by ``live.hardware.roofline_fraction``.
        language: the kernel language of k0 and of every candidate (a key of
            ``live.evaluator.languages.LANGUAGES``): the static check, code extraction, the
            profiler's kernel filter and the metadata reader follow it.
        hooks: what the task's source runs for it (``TaskHooks``).
    """

    name: str
    description: str
    category: str
    entry: str
    k0: str
    reference: Callable[..., Any]
    make_inputs: Callable[[Shape, int, str], tuple]
    test_shapes: Sequence[Shape]
    perf_shapes: Sequence[Shape]
    cpu_shapes: Sequence[Shape]
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    bytes_moved: Callable[[Shape], int] | None = None
    flops: Callable[[Shape], int] | None = None
    source: str = "builtin"
    call_style: str = "dps"
    compute_dtype: str = "float32"
    language: str = "triton"
    hooks: TaskHooks = field(default_factory=TaskHooks)

    def __post_init__(self) -> None:
        if self.call_style not in CALL_STYLES:
            raise ValueError(
                f"task {self.name!r}: call_style must be one of {CALL_STYLES}, "
                f"not {self.call_style!r}."
            )
        if self.call_style == "returns" and self.hooks.run is None:
            raise ValueError(f"task {self.name!r}: call_style 'returns' needs a run callable "
                             "(TaskHooks.run).")
        from live.evaluator.languages import LANGUAGES

        if self.language not in LANGUAGES:
            raise ValueError(f"task {self.name!r}: language must be one of "
                             f"{tuple(LANGUAGES)}, not {self.language!r}.")

    def tolerance(self, dtype_name: str) -> tuple[float, float]:
        """(atol, rtol) for outputs of this dtype (``float32`` or ``torch.float32``)."""
        dtype_name = dtype_name.removeprefix("torch.")
        if dtype_name in self.tolerances:
            return self.tolerances[dtype_name]
        return DEFAULT_TOLERANCES.get(dtype_name, (1e-5, 1e-5))

    def module_source(self, candidate_source: str) -> str:
        """The text to import as the candidate's module (``hooks.prepare_source`` applied)."""
        if self.hooks.prepare_source is None:
            return candidate_source
        return self.hooks.prepare_source(candidate_source)

    def call(self, module: ModuleType, inputs: tuple, outputs: tuple | None = None) -> tuple:
        """Run a candidate module on ``inputs`` and return its outputs as a tuple.

        ``dps``: ``outputs`` (preallocated, poisoned by the caller) are required and are
        written in place by ``module.<entry>(*inputs, *outputs)``, then returned.
        ``returns``: ``outputs`` is ignored; the result of ``self.hooks.run(module, inputs)``.
        """
        if self.call_style == "dps":
            if outputs is None:
                raise ValueError(f"task {self.name!r} is destination-passing: pass outputs.")
            getattr(module, self.entry)(*inputs, *outputs)
            return tuple(outputs)
        assert self.hooks.run is not None
        return tuple(self.hooks.run(module, inputs))
