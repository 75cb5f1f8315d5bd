"""The one output comparator (live.evaluator.checks): poisoning, in-place inputs, nested values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from live.evaluator.checks import check_call, compare_values, poisoned_like
from live.tasks.base import DEFAULT_TOLERANCES


def tolerance(name: str) -> tuple[float, float]:
    return DEFAULT_TOLERANCES.get(name, (1e-5, 1e-5))


def test_bool_poison_is_the_negation_so_no_unwritten_element_can_pass() -> None:
    # an all-False (or all-True) poison would equal the reference wherever it holds that value:
    # a kernel that writes only the True elements would pass. The negation differs everywhere.
    ref = torch.tensor([True, False, False, True])
    poison = poisoned_like(ref)
    assert bool((poison != ref).all())
    half_written = poison.clone()
    half_written[ref] = True  # a kernel that only writes where the answer is True
    assert compare_values(half_written, ref, tolerance) is not None


def test_in_place_operator_inputs_it_writes_are_outputs() -> None:
    def gold(cache: torch.Tensor, index: torch.Tensor, value: torch.Tensor) -> None:
        cache[index] = value  # writes its input by design (a KV-cache copy)

    def run_same(inputs: tuple, outputs: list | None) -> tuple:
        return (gold(*inputs),)

    def run_wrong(inputs: tuple, outputs: list | None) -> tuple:
        inputs[0][inputs[1]] = inputs[2] + 1
        return (None,)

    def run_touching_value(inputs: tuple, outputs: list | None) -> tuple:
        gold(*inputs)
        inputs[2].zero_()  # mutation the gold code does not do
        return (None,)

    def make() -> tuple:
        return torch.zeros(4, 3), torch.tensor([1, 3]), torch.ones(2, 3)

    sync = lambda: None  # noqa: E731
    assert check_call(run_same, gold, make(), tolerance, sync, destination_passing=False) is None
    wrong = check_call(run_wrong, gold, make(), tolerance, sync, destination_passing=False)
    assert wrong is not None and "input 0 (written in place by the reference too)" in wrong.message
    touched = check_call(run_touching_value, gold, make(), tolerance, sync,
                         destination_passing=False)
    assert touched is not None and touched.message == "input 2 was modified by the candidate"


@pytest.mark.parametrize(
    ("got", "expected", "problem"),
    [
        ({"a": [torch.ones(2), 3, "x", None]}, {"a": [torch.ones(2), 3, "x", None]}, None),
        ({"a": [torch.ones(2), 3, "x", None]}, {"a": [torch.ones(2), 3, "y", None]},
         "result['a'][2]: 'x' != 'y'"),
        ((np.ones(3), 1.0), (np.ones(3), 1.0 + 1e-9), None),
        ((np.ones(3), 1.0), (np.zeros(3), 1.0), "result[0]: 3/3 elements differ"),
        (np.array(["a", "b"], dtype=object), np.array(["a", "b"], dtype=object), None),
        (torch.ones(2, dtype=torch.float16), torch.ones(2), "dtype float16 != expected float32"),
        ([1, 2], [1, 2, 3], "lengths differ"),
        ({"a": 1}, {"b": 1}, "keys differ"),
        (float("nan"), float("nan"), None),
        (torch.tensor([1.0, 2.0]), 3.0, "expected a float, got Tensor"),
    ],
)
def test_compare_values_handles_nested_results(got, expected, problem) -> None:
    found = compare_values(got, expected, tolerance)
    assert (found is None) if problem is None else (problem in found), found


def test_compare_values_never_raises_on_ambiguous_truth_values() -> None:
    class Opaque:
        def __eq__(self, other: object) -> bool:
            raise ValueError("The truth value of an array is ambiguous")

    assert "cannot compare" in compare_values(Opaque(), Opaque(), tolerance)


def test_call_context_puts_reference_and_candidate_in_one_rng_state() -> None:
    from live.tasks.tritonbench import seeded_rng

    def draws(x: torch.Tensor) -> torch.Tensor:  # an operator making its own random input
        return x + torch.rand(x.shape)

    def run(inputs: tuple, outputs: list | None) -> tuple:
        return (draws(*inputs),)

    sync = lambda: None  # noqa: E731
    x = torch.zeros(8)
    unseeded = check_call(run, draws, (x,), tolerance, sync, destination_passing=False)
    assert unseeded is not None and "elements differ" in unseeded.message
    seeded = check_call(run, draws, (x,), tolerance, sync, destination_passing=False,
                        call_context=lambda: seeded_rng(0))
    assert seeded is None


def test_outputs_written_in_part_compare_alike_from_filled_memory() -> None:
    from live.tasks.tritonbench.operator import checked_state

    leftovers = iter(range(1, 100))

    def half_written(x: torch.Tensor) -> torch.Tensor:  # a kernel that writes half its output
        out = torch.empty(x.shape)
        out[: x.numel() // 2] = x[: x.numel() // 2] * 2
        return out

    def run(inputs: tuple, outputs: list | None) -> tuple:
        return (half_written(*inputs),)

    sync = lambda: None  # noqa: E731
    x = torch.ones(8)
    deterministic = torch.are_deterministic_algorithms_enabled()
    with checked_state(0):
        (out,) = run((x,), None)
        assert torch.isnan(out[4:]).all() and torch.empty(2, dtype=torch.int32).eq(2**31 - 1).all()
    assert torch.are_deterministic_algorithms_enabled() == deterministic  # restored
    assert check_call(run, half_written, (x,), tolerance, sync, destination_passing=False,
                      call_context=lambda: checked_state(0)) is None

    def writes_the_rest_too(x: torch.Tensor) -> torch.Tensor:  # a candidate may fill them
        return torch.cat([x[:4] * 2, torch.full((4,), float(next(leftovers)))])

    assert check_call(lambda i, o: (writes_the_rest_too(*i),), half_written, (x,), tolerance,
                      sync, destination_passing=False,
                      call_context=lambda: checked_state(0)) is None


def test_chunked_comparison_counts_like_one_pass(monkeypatch) -> None:
    """The float64 work runs in chunks (memory); counts, the max error and NaN reporting are
    those of the whole tensor, whatever the chunk size."""
    import live.evaluator.checks as checks

    torch.manual_seed(0)
    ref = torch.randn(1000, dtype=torch.float32)
    out = ref.clone()
    out[[3, 500, 999]] += torch.tensor([0.5, 2.0, 0.25])
    whole = checks.compare_output(out, ref, 1e-3, 1e-3)
    monkeypatch.setattr(checks, "CHUNK_ELEMENTS", 7)
    assert checks.compare_output(out, ref, 1e-3, 1e-3) == whole
    assert whole.startswith("3/1000 elements differ, max abs error 2")
    out[998] = float("nan")
    assert checks.compare_output(out, ref, 1e-3, 1e-3).startswith("1/1000 elements differ: NaN")
    nan_ref = ref.clone()
    nan_ref[10] = float("nan")
    strided = torch.stack([nan_ref, nan_ref]).t()  # non-contiguous, NaN in both: the same
    assert checks.compare_output(strided.clone(), strided, 0.0, 0.0) is None
    assert checks._same(strided, strided.clone())
    changed = strided.clone()
    changed[900, 1] += 1
    assert not checks._same(strided, changed)


def test_runs_of_the_gold_code_merge_into_what_they_agree_on() -> None:
    """NOTE D76: elements the runs disagree on (beyond tolerance) are not compared; the rest
    are, exactly for integers."""
    from live.evaluator.checks import ANYTHING, Varying, agreement

    a = {"f": torch.tensor([1.0, 2.0, 3.0, float("nan")]),
         "i": torch.tensor([1, 2, 3], dtype=torch.int8), "s": 0.5, "name": "x"}
    b = {"f": torch.tensor([1.0, 2.0 + 1e-9, 9.0, float("nan")]),  # 2.0 within tolerance
         "i": torch.tensor([1, 5, 3], dtype=torch.int8), "s": 0.75, "name": "x"}
    merged, varying, total = agreement([a, b, a], tolerance)
    assert (varying, total) == (3, 4 + 3 + 2)
    assert isinstance(merged["f"], Varying) and merged["f"].mask.tolist() == [0, 0, 1, 0]
    assert merged["i"].mask.tolist() == [0, 1, 0]
    assert merged["s"] is ANYTHING and merged["name"] == "x"
    # anything goes where the runs disagree, nothing else does
    assert compare_values(
        {"f": torch.tensor([1.0, 2.0, -4.0, float("nan")]),
         "i": torch.tensor([1, 0, 3], dtype=torch.int8), "s": 99.0, "name": "x"},
        merged, tolerance) is None
    problem = compare_values({**b, "i": torch.tensor([0, 5, 3], dtype=torch.int8)}, merged,
                             tolerance)
    assert problem == ("result['i']: 1/2 elements differ (exact dtype int8), 1 elements where "
                       "the gold code disagrees with itself set aside")
    assert "dtype" in compare_values({**a, "f": a["f"].half()}, merged, tolerance)
    # runs of different structure are not merged; one run is itself
    assert agreement([[1, 2], [1, 2, 3]], tolerance) == ([1, 2], 0, 1)
    assert agreement([a], tolerance) == (a, 0, 9)
