"""The one output comparator: every correctness judgement of kernelband goes through here.

Used by the evaluator's workers (``check_call``), the in-process self-check
(``live.tasks.selfcheck``) and the TritonBench adapter's ``result_gold`` comparison
(``compare_values``), so a k0 that passes one passes all of them.

- Destination-passing outputs are allocated like the reference's and pre-filled by
  ``poisoned_like`` (NaN for floats, the dtype's minimum for integers, the reference's negation
  for booleans) so that elements the candidate never writes are caught.
- Tensor inputs are compared with clones afterwards. An input that the *reference* writes (an
  in-place operator: a KV-cache copy, an optimizer step) is an output: its post-call state is
  compared with the reference's; only mutation the reference does not do is flagged.
- Tolerances are by dtype (``tolerance(dtype_name) -> (atol, rtol)``); integers and booleans are
  exact unless a task gives them a tolerance; NaN matches NaN, inf matches the same inf.
- ``compare_values`` compares nested results: tensors, NumPy arrays, Python scalars, strings,
  None, and dicts / lists / tuples of them.
- ``agreement`` merges several runs of the same gold code under the same seeds into one expected
  result: elements where the runs disagree (races, memory the code does not own) become
  "anything" (``Varying``, ``ANYTHING``) and are not compared (NOTE D76).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

# defined with the memory plan, which counts its bytes: the runner's process plans without
# importing torch (#36)
from live.evaluator.memory_plan import CHUNK_ELEMENTS

Tolerance = Callable[[str], tuple[float, float]]


@dataclass(frozen=True)
class CheckFailure:
    """Why one call was judged incorrect (a readable message)."""

    message: str


@dataclass(frozen=True)
class Varying:
    """An expected tensor whose elements under ``mask`` may hold anything: there, runs of the
    gold code under the same seeds disagree (NOTE D76). Compared elsewhere as a tensor."""

    value: torch.Tensor
    mask: torch.Tensor

    @property
    def n_varying(self) -> int:
        return int(self.mask.sum())


class _Anything:
    """An expected non-tensor value that differs between runs of the gold code (NOTE D76)."""

    def __repr__(self) -> str:
        return "ANYTHING"


ANYTHING = _Anything()


def as_tuple(value: Any) -> tuple:
    """A reference's result as a tuple of outputs."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def poisoned_like(ref: torch.Tensor) -> torch.Tensor:
    """An output buffer like `ref`, filled with a value a correct kernel overwrites.

    Booleans get the reference's negation: any constant (all False, say) would equal the
    reference wherever it holds that constant, and an unwritten element would pass there.
    """
    out = torch.empty_like(ref)
    if ref.dtype.is_floating_point or ref.dtype.is_complex:
        out.fill_(float("nan"))
    elif ref.dtype == torch.bool:
        out.copy_(~ref)  # every unwritten element then differs from the reference
    else:
        out.fill_(torch.iinfo(ref.dtype).min)
    return out


def clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    """Clones of the tensor inputs (others kept as they are)."""
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float16`` -> ``float16``."""
    return str(dtype).removeprefix("torch.")


def compare_output(
    out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float
) -> str | None:
    """None if `out` matches `ref` within tolerance, else a short description of the mismatch.

    Compared on `out`'s device (copying perf-sized outputs to the host is slow).
    """
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)} != expected {tuple(ref.shape)}"
    ref = ref.detach().to(out.device)
    out = out.detach()
    if ref.dtype == torch.bool or (atol == 0 and rtol == 0 and not (
            ref.dtype.is_floating_point or ref.dtype.is_complex)):
        n_bad = int((out != ref).sum())
        if n_bad == 0:
            return None
        return f"{n_bad}/{ref.numel()} elements differ (exact dtype {dtype_name(ref.dtype)})"
    if not (ref.dtype.is_floating_point or ref.dtype.is_complex):
        # integers with a tolerance (e.g. quantization off by one rounding step)
        diff = (out.long() - ref.long()).abs().double()
        bad = diff > atol + rtol * ref.long().abs().double()
        n_bad = int(bad.sum())
        if n_bad == 0:
            return None
        return (f"{n_bad}/{ref.numel()} elements differ, max abs error {float(diff.max()):.3g} "
                f"(atol {atol}, rtol {rtol})")
    if ref.dtype.is_complex:
        out = torch.view_as_real(out.resolve_conj())
        ref = torch.view_as_real(ref.resolve_conj())
    # float64 work in chunks: a whole perf-sized output in float64 with its error, limit and
    # masks is ~56 bytes per element (a 1 GiB fp16 output: ~28 GiB), which ran TritonBench-G
    # checks out of memory; per chunk it is a bounded ~CHUNK_ELEMENTS * 56 bytes
    out_flat, ref_flat = out.reshape(-1), ref.reshape(-1)
    n_nan = n_bad = 0
    max_err = 0.0
    for start in range(0, ref_flat.numel(), CHUNK_ELEMENTS):
        out_f = out_flat[start:start + CHUNK_ELEMENTS].double()
        ref_f = ref_flat[start:start + CHUNK_ELEMENTS].double()
        ref_nan = torch.isnan(ref_f)
        out_nan = torch.isnan(out_f)
        n_nan += int((out_nan & ~ref_nan).sum())
        if n_nan:
            continue  # reported as NaN below; the error counts no longer matter
        both_inf_same = torch.isinf(ref_f) & (out_f == ref_f)
        err = (out_f - ref_f).abs()
        err = torch.where(ref_nan | both_inf_same, torch.zeros_like(err), err)
        bad = (err > atol + rtol * ref_f.abs()) & ~(ref_nan & out_nan)
        chunk_bad = int(bad.sum())
        if chunk_bad:
            n_bad += chunk_bad
            max_err = max(max_err, float(err[bad].max()))
    if n_nan:
        return (f"{n_nan}/{ref.numel()} elements differ: NaN where the reference has a value "
                "(unwritten or invalid)")
    if n_bad == 0:
        return None
    return (f"{n_bad}/{ref.numel()} elements differ, max abs error {max_err:.3g} "
            f"(atol {atol}, rtol {rtol})")


def compare_tensor(out: Any, ref: torch.Tensor, tolerance: Tolerance) -> str | None:
    """`compare_output` with the type, dtype and the dtype's tolerance checked first."""
    if not isinstance(out, torch.Tensor):
        return f"a {type(out).__name__}, not a tensor"
    if out.dtype != ref.dtype:
        return f"dtype {dtype_name(out.dtype)} != expected {dtype_name(ref.dtype)}"
    atol, rtol = tolerance(dtype_name(ref.dtype))
    return compare_output(out, ref, atol, rtol)


def _numpy_array(value: Any) -> Any:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with torch
        return None
    return value if isinstance(value, (np.ndarray, np.generic)) else None


def compare_values(got: Any, expected: Any, tolerance: Tolerance,
                   where: str = "result") -> str | None:
    """None when two (nested) results agree; else one sentence naming where they differ.

    Tensors by `compare_tensor`; NumPy arrays as tensors (object arrays element by element);
    floats with float64's tolerance; ints, bools, strings, None and anything else by equality;
    dicts by keys then values, lists and tuples by length then items.
    """
    if isinstance(expected, torch.Tensor):
        problem = compare_tensor(got, expected, tolerance)
        return None if problem is None else f"{where}: {problem}"
    if isinstance(expected, Varying):
        return _compare_varying(got, expected, tolerance, where)
    if expected is ANYTHING:
        return None
    array = _numpy_array(expected)
    if array is not None:
        if _numpy_array(got) is None:
            return f"{where}: expected a NumPy array, got {type(got).__name__}"
        if array.dtype == object:
            return compare_values(list(got.ravel()), list(array.ravel()), tolerance, where)
        return compare_values(torch.as_tensor(got), torch.as_tensor(array), tolerance, where)
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"{where}: keys differ"
        for key in expected:
            problem = compare_values(got[key], expected[key], tolerance, f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"{where}: lengths differ"
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            problem = compare_values(a, b, tolerance, f"{where}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(expected, float):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return f"{where}: expected a float, got {type(got).__name__}"
        atol, rtol = tolerance("float64")
        if (math.isnan(expected) and math.isnan(got)) or got == expected or \
                math.isclose(got, expected, rel_tol=rtol, abs_tol=atol):
            return None
        return f"{where}: {got!r} != {expected!r} (atol {atol}, rtol {rtol})"
    try:
        same = bool(got == expected)
    except Exception as exc:  # noqa: BLE001 - objects whose == is not a truth value
        return f"{where}: cannot compare {type(got).__name__} values ({type(exc).__name__})"
    return None if same else f"{where}: {got!r} != {expected!r}"


def _compare_varying(got: Any, expected: Varying, tolerance: Tolerance,
                     where: str) -> str | None:
    ref = expected.value
    if isinstance(got, torch.Tensor) and got.dtype == ref.dtype and got.shape == ref.shape:
        keep = ~expected.mask.to(got.device)
        problem = compare_tensor(got[keep], ref.to(got.device)[keep], tolerance)
    else:
        problem = compare_tensor(got, ref, tolerance)
    if problem is None:
        return None
    return (f"{where}: {problem}, {expected.n_varying} elements where the gold code disagrees "
            "with itself set aside")


def elements_apart(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    """Per element of two same-shaped tensors: True where they differ beyond (atol, rtol) of `b`
    (NaN matches NaN, inf the same inf; exact for booleans and tolerance-free integers)."""
    a = a.detach().to(b.device)
    if b.dtype.is_complex:
        return elements_apart(torch.view_as_real(a.resolve_conj()),
                              torch.view_as_real(b.resolve_conj()), atol, rtol).any(dim=-1)
    if b.dtype == torch.bool or not b.dtype.is_floating_point and atol == 0 and rtol == 0:
        return a != b
    x, y = a.double(), b.double()
    both_nan = torch.isnan(x) & torch.isnan(y)
    same_inf = torch.isinf(y) & (x == y)
    err = (x - y).abs()
    apart = (err > atol + rtol * y.abs()) | (torch.isnan(x) != torch.isnan(y))
    return apart & ~both_nan & ~same_inf


def agreement(runs: Sequence[Any], tolerance: Tolerance) -> tuple[Any, int, int]:
    """Several results of the same code under the same seeds merged into one expected result;
    how many elements (or values) the runs disagree on, and how many there are.

    NOTE (D76): where the runs differ beyond the dtype's tolerance, the expected result holds
    "anything" (a ``Varying`` tensor's masked elements, ``ANYTHING`` for other values), which
    ``compare_values`` does not compare; everything the runs agree on is compared as usual.
    Results of different structure are not merged (the first run is returned as it is).
    """
    first = runs[0]
    if isinstance(first, torch.Tensor):
        n_all = first.numel()
        if not all(isinstance(r, torch.Tensor) and r.shape == first.shape
                   and r.dtype == first.dtype for r in runs[1:]):
            return first, 0, n_all
        atol, rtol = tolerance(dtype_name(first.dtype))
        mask = torch.zeros(first.shape, dtype=torch.bool, device=first.device)
        for other in runs[1:]:
            mask |= elements_apart(other, first, atol, rtol)
        n = int(mask.sum())
        return (Varying(first, mask) if n else first), n, n_all
    parts: list[tuple[Any, int, int]]
    if isinstance(first, dict):
        if not all(isinstance(r, dict) and set(r) == set(first) for r in runs[1:]):
            return first, 0, 1
        parts = [agreement([r[key] for r in runs], tolerance) for key in first]
        merged: Any = dict(zip(first, (p[0] for p in parts), strict=True))
    elif isinstance(first, (tuple, list)):
        if not all(isinstance(r, (tuple, list)) and len(r) == len(first) for r in runs[1:]):
            return first, 0, 1
        parts = [agreement([r[i] for r in runs], tolerance) for i in range(len(first))]
        merged = type(first)(p[0] for p in parts) if isinstance(first, tuple) else \
            [p[0] for p in parts]
    else:
        same = all(compare_values(r, first, tolerance) is None for r in runs[1:])
        return (first, 0, 1) if same else (ANYTHING, 1, 1)
    return merged, sum(p[1] for p in parts), sum(p[2] for p in parts)


def check_call(
    run_candidate: Callable[[tuple, list | None], Sequence[Any]],
    reference: Callable[..., Any],
    inputs: tuple,
    tolerance: Tolerance,
    synchronize: Callable[[], None],
    destination_passing: bool = True,
    call_context: Callable[[], AbstractContextManager[Any]] | None = None,
) -> CheckFailure | None:
    """Run the reference and the candidate on `inputs`; None if the candidate is correct.

    ``run_candidate(inputs, outputs)`` returns the candidate's outputs; for destination-passing
    tasks it gets poisoned buffers, otherwise ``None`` (the candidate allocates). Inputs the
    reference writes are restored before the candidate runs and judged as outputs afterwards.
    ``call_context()``, when given (``TaskHooks.call_context``), is entered around each of the two
    calls (TritonBench: the same seeded RNG state, for operators that draw random numbers).
    Exceptions raised by the candidate or the reference propagate (the caller classifies them).
    """
    around = call_context or nullcontext
    originals = clone_inputs(inputs)
    with around():
        refs = list(as_tuple(reference(*inputs)))
    synchronize()
    gold_written = {index: after.clone() for index, (before, after)
                    in enumerate(zip(originals, inputs, strict=True))
                    if isinstance(after, torch.Tensor) and not _same(before, after)}
    if gold_written:
        # the reference's outputs may alias the inputs about to be restored
        refs = [r.clone() if isinstance(r, torch.Tensor) else r for r in refs]
        for index in gold_written:
            inputs[index].copy_(originals[index])
    outputs = [poisoned_like(r) for r in refs] if destination_passing else None
    with around():
        produced = list(as_tuple(run_candidate(inputs, outputs)))
    synchronize()
    for index, (before, after) in enumerate(zip(originals, inputs, strict=True)):
        if not isinstance(after, torch.Tensor):
            continue
        if index in gold_written:
            problem = compare_tensor(after, gold_written[index], tolerance)
            if problem is not None:
                return CheckFailure(f"input {index} (written in place by the reference too): "
                                    f"{problem}")
        elif not _same(before, after):
            return CheckFailure(f"input {index} was modified by the candidate")
    if len(produced) != len(refs):
        return CheckFailure(f"{len(produced)} outputs, expected {len(refs)}")
    for index, (out, ref) in enumerate(zip(produced, refs, strict=True)):
        problem = compare_values(out, ref, tolerance, f"output {index}")
        if problem is not None:
            return CheckFailure(problem)
    return None


def _same(before: torch.Tensor, after: torch.Tensor) -> bool:
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    if not (before.dtype.is_floating_point or before.dtype.is_complex):
        return bool(torch.equal(before, after))
    a, b = before.reshape(-1), after.reshape(-1)
    for start in range(0, a.numel(), CHUNK_ELEMENTS):  # NaN-aware, without whole-tensor copies
        x, y = a[start:start + CHUNK_ELEMENTS], b[start:start + CHUNK_ELEMENTS]
        if not (torch.equal(torch.isnan(x), torch.isnan(y))
                and torch.equal(torch.nan_to_num(x), torch.nan_to_num(y))):
            return False
    return True
