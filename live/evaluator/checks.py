"""Correctness of one candidate call (worker side; needs torch).

Outputs are allocated by the evaluator like the reference's, pre-filled with NaN (floats) or a
sentinel (integers, booleans) so that elements the candidate never writes are caught; tensor
inputs are compared with clones afterwards so that a candidate which mutates its inputs is caught.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class CheckFailure:
    """Why one call was judged incorrect (a readable message)."""

    message: str


def as_tuple(value: Any) -> tuple:
    """A reference's result as a tuple of outputs."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def poisoned_like(ref: torch.Tensor) -> torch.Tensor:
    """An output buffer like `ref`, filled with a value a correct kernel overwrites."""
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
    """None if `out` matches `ref` within tolerance, else a short description of the mismatch."""
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)} != expected {tuple(ref.shape)}"
    if ref.dtype == torch.bool or (atol == 0 and rtol == 0 and not ref.dtype.is_floating_point):
        bad = out != ref
        n_bad = int(bad.sum())
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
        return (f"{n_bad}/{ref.numel()} elements off, max abs error {float(diff.max()):.3g} "
                f"(atol {atol}, rtol {rtol})")
    out_f, ref_f = out.double(), ref.double()
    ref_nan = torch.isnan(ref_f)
    out_nan = torch.isnan(out_f)
    unexpected_nan = out_nan & ~ref_nan
    n_nan = int(unexpected_nan.sum())
    if n_nan:
        return f"{n_nan}/{ref.numel()} elements NaN (unwritten or invalid)"
    both_inf_same = torch.isinf(ref_f) & (out_f == ref_f)
    err = (out_f - ref_f).abs()
    err = torch.where(ref_nan | both_inf_same, torch.zeros_like(err), err)
    limit = atol + rtol * ref_f.abs()
    bad = (err > limit) & ~(ref_nan & out_nan)
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    max_err = float(err[bad].max())
    return (f"{n_bad}/{ref.numel()} elements off, max abs error {max_err:.3g} "
            f"(atol {atol}, rtol {rtol})")


def check_call(
    run_candidate: Callable[[tuple, list | None], Sequence[Any]],
    reference: Callable[..., Any],
    inputs: tuple,
    tolerance: Callable[[str], tuple[float, float]],
    synchronize: Callable[[], None],
    destination_passing: bool = True,
) -> CheckFailure | None:
    """Run the reference and the candidate on `inputs`; None if the candidate is correct.

    ``run_candidate(inputs, outputs)`` returns the candidate's outputs; for destination-passing
    tasks it gets NaN-poisoned buffers, otherwise ``None`` (the candidate allocates).
    Exceptions raised by the candidate propagate (the caller classifies them).
    """
    refs = list(as_tuple(reference(*inputs)))
    originals = clone_inputs(inputs)
    outputs = [poisoned_like(r) for r in refs] if destination_passing else None
    produced = list(as_tuple(run_candidate(inputs, outputs)))
    synchronize()
    for index, (before, after) in enumerate(zip(originals, inputs, strict=True)):
        if isinstance(after, torch.Tensor) and not _same(before, after):
            return CheckFailure(f"input {index} was modified by the candidate")
    if len(produced) != len(refs):
        return CheckFailure(f"{len(produced)} outputs, expected {len(refs)}")
    for index, (out, ref) in enumerate(zip(produced, refs, strict=True)):
        if not isinstance(out, torch.Tensor):
            return CheckFailure(f"output {index} is a {type(out).__name__}, not a tensor")
        atol, rtol = tolerance(dtype_name(ref.dtype))
        problem = compare_output(out, ref, atol, rtol)
        if problem is not None:
            return CheckFailure(f"output {index}: {problem}")
    return None


def _same(before: torch.Tensor, after: torch.Tensor) -> bool:
    if before.dtype.is_floating_point or before.dtype.is_complex:
        return bool(torch.equal(torch.isnan(before), torch.isnan(after))) and bool(
            torch.equal(torch.nan_to_num(before), torch.nan_to_num(after)))
    return bool(torch.equal(before, after))
