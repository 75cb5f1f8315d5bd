"""`select_unpredictable`: exactly `a if cond else b`, emitted as one LLVM select marked
unpredictable (so LLVM does not turn it back into a branch)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from kbsim.policies._branchless import select_unpredictable


@njit
def _pick_float(cond, a, b):
    return select_unpredictable(cond, a, b)


@njit
def _pick_mixed(cond, a, b):
    return select_unpredictable(cond, a, b)


@njit
def _positive_part(r, success):
    return select_unpredictable(bool(success) & (r > 0.0), r, 0.0)


@pytest.mark.parametrize(
    "a, b",
    [(1.5, -2.0), (-0.0, 0.0), (0.0, -0.0), (math.inf, -math.inf), (math.nan, 3.0),
     (3.0, math.nan), (5e-324, -5e-324)],
)
def test_float_select_is_the_conditional_expression_bit_for_bit(a: float, b: float) -> None:
    for cond in (True, False):
        got = _pick_float(cond, a, b)
        want = a if cond else b
        assert np.float64(got).tobytes() == np.float64(want).tobytes()


def test_integer_and_mixed_operands_unify() -> None:
    assert _pick_mixed(True, 7, -1) == 7 and _pick_mixed(False, 7, -1) == -1
    got = _pick_mixed(False, 2, 0.25)  # int64 and float64 unify to float64
    assert got == 0.25 and isinstance(got, float)


@pytest.mark.parametrize(
    "r, success, want",
    [(0.25, True, 0.25), (0.25, False, 0.0), (-0.5, True, 0.0), (0.0, True, 0.0),
     (-0.0, True, 0.0), (math.nan, True, 0.0), (-math.inf, True, 0.0), (math.inf, True, math.inf),
     (0.25, 1, 0.25), (0.25, 0, 0.0)],
)
def test_reward_positive_part_matches_the_branching_form(r: float, success, want: float) -> None:
    got = _positive_part(r, success)
    branching = (r if r > 0.0 else 0.0) if success else 0.0
    assert np.float64(got).tobytes() == np.float64(branching).tobytes()
    assert np.float64(got).tobytes() == np.float64(want).tobytes()


def test_llvm_select_is_marked_unpredictable() -> None:
    _positive_part(0.5, True)  # the shape v2_reward uses: a condition computed in the kernel
    ir = _positive_part.inspect_llvm(_positive_part.signatures[0])
    selects = [line for line in ir.splitlines() if " select i1 " in line]
    assert selects and all("!unpredictable" in line for line in selects)
    assert " br i1 " not in ir.split("define", 2)[1]  # the kernel itself has no branch


def test_bad_operands_are_typing_errors() -> None:
    with pytest.raises(TypingError, match="cond must be a bool"):
        _pick_float(1.0, 1.0, 2.0)
    with pytest.raises(TypingError, match="must be numbers"):
        _pick_float(True, "a", "b")
