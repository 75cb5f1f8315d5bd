"""The task format: what the kernel lab needs to judge a candidate for one operator.

A *candidate* is the source text of a Python module that defines, beside its ``@triton.jit``
kernels, an entry function named ``task.entry`` in destination-passing style::

    def entry(*inputs, *outputs) -> None

The evaluator allocates every output itself (from the reference's outputs, pre-filled with NaN,
or with a sentinel for integer dtypes) so that elements a candidate forgets to write are caught.
``k0`` is such a candidate: plain, correct and deliberately not tuned.

Shapes are dicts of named sizes (``{"M": 4096, "N": 1024}``); ``make_inputs(shape, seed,
device)`` builds the inputs for one shape. Three shape lists serve three purposes: ``test_shapes``
(correctness on a GPU), ``perf_shapes`` (timing and correctness on a GPU) and ``cpu_shapes``
(tiny: everything on CPU under ``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Shape = dict[str, int]

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
class Task:
    """One kernel optimization task.

    Attributes:
        name: unique id, used as ``task_id`` in traces (``softmax``, ``tritonbench/add``).
        description: one paragraph for prompts and docs.
        category: regime, e.g. ``elementwise``, ``reduction``, ``scan``, ``matmul``, ``attention``.
        entry: name of the entry function every candidate defines.
        k0: source of the initial candidate.
        reference: PyTorch reference, ``reference(*inputs) -> tuple[Tensor, ...]``.
        make_inputs: ``make_inputs(shape, seed, device) -> tuple`` of tensors and scalars.
        test_shapes, perf_shapes, cpu_shapes: see the module docstring.
        tolerances: ``dtype name -> (atol, rtol)``; defaults from ``DEFAULT_TOLERANCES``.
        bytes_moved: minimal DRAM bytes per shape (for % of roofline), or None.
        flops: floating-point operations per shape, or None.
        source: where the task came from (``builtin`` or a TritonBench path).
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

    def tolerance(self, dtype_name: str) -> tuple[float, float]:
        """(atol, rtol) for outputs of this dtype."""
        if dtype_name in self.tolerances:
            return self.tolerances[dtype_name]
        return DEFAULT_TOLERANCES.get(dtype_name, (1e-5, 1e-5))
