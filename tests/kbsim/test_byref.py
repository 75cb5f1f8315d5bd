"""`kbsim._byref`: named tuples of arrays as one pointer in compiled code.

A reference made from an image written in Python (`tuple_image` / `ref_of_image`) or from a
tuple held by value (`ref_of_value`) reads and writes the very arrays of its tuple, in the
function that made it and in the callees it is passed to; and the replay engine's worker takes
no named tuple by value.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import pytest
from numba import njit

from kbsim._byref import TupleRef, ref_of_image, ref_of_value, tuple_image
from kbsim._jit import inner_njit
from kbsim.envs.registry import build_env
from kbsim.policies.spec import parse_policy
from kbsim.replay import chunks


class Box(NamedTuple):
    ints: np.ndarray  # (n,) int64
    grid: np.ndarray  # (r, c) float64
    flags: np.ndarray  # (n,) bool
    empty: np.ndarray  # (0, 3) float64


def _box() -> Box:
    return Box(np.arange(4, dtype=np.int64), np.arange(6.0).reshape(2, 3),
               np.array([True, False, True, False]), np.zeros((0, 3)))


@inner_njit(_nrt=False)
def _callee_adds(box, value) -> float:
    """Not inlined: the reference crosses a call."""
    box.grid[1, 2] += value
    return box.grid.sum() + box.ints[3] + box.grid.shape[1] + box.empty.shape[1]


@njit(_nrt=False)
def _through_image(image, tuple_type, value):
    ref = ref_of_image(image, tuple_type)
    ref.ints[0] = 10
    total = _callee_adds(ref, value)
    return total, ref.flags[2], ref.flags[1], ref.grid.strides[0]


def test_a_reference_reads_and_writes_the_tuple_s_own_arrays():
    box = _box()
    image = tuple_image(box)
    got = _through_image(image.image, image.tuple_type, 100.0)
    # 0+1+2+3+4+(5+100) + ints[3] + 3 columns + 3 columns of the empty array
    assert got == (115.0 + 3 + 3 + 3, True, False, 24)
    assert box.ints.tolist() == [10, 1, 2, 3] and box.grid[1, 2] == 105.0
    assert box.flags.tolist() == [True, False, True, False]


def test_an_image_keeps_a_strided_view_s_strides():
    base = np.arange(24.0).reshape(4, 6)
    box = Box(np.arange(4, dtype=np.int64), base[::2, ::2], np.zeros(4, np.bool_),
              np.zeros((0, 3)))
    image = tuple_image(box)
    _through_image(image.image, image.tuple_type, 1.0)
    assert base[2, 4] == 17.0  # grid[1, 2] of the view
    assert base.sum() == np.arange(24.0).sum() + 1.0


def test_the_callee_is_compiled_for_the_reference_not_the_tuple():
    box = _box()
    image = tuple_image(box)
    _through_image(image.image, image.tuple_type, 0.0)
    first = [signature[0] for signature in _callee_adds.signatures]
    assert all(isinstance(t, TupleRef) for t in first)
    assert numba.typeof(box) in [t.tuple_type for t in first]


def test_an_image_is_refused_for_a_tuple_that_is_not_all_arrays():
    class Mixed(NamedTuple):
        a: np.ndarray
        n: int

    with pytest.raises(TypeError, match="named tuple of numpy arrays"):
        tuple_image(Mixed(np.zeros(2), 3))


def test_the_replay_worker_takes_no_named_tuple_by_value():
    """The worker's Python-facing entry unboxes plain arrays and scalars only: the state, pool,
    environment data, scratch and outputs come as images (what keeps a cold replay's compile
    small, docs/benchmarks.md)."""
    env = build_env("synthetic", "default,tasks=2")
    signature = chunks._signature(parse_policy("kernelband-v2"), env, 3, env.kind)
    assert not [t for t in signature if isinstance(t, numba.types.BaseTuple)]
    assert sum(isinstance(t, numba.types.TypeRef) for t in signature) == 6


@njit
def _with_runtime(image, tuple_type):
    ref = ref_of_image(image, tuple_type)
    grid = ref.grid  # incref / decref of an array with no owner: nothing to count
    copied = grid.copy() * 2.0  # allocates with numba's runtime
    return copied.sum() + grid[0, 1]


def test_a_reference_works_in_a_function_compiled_with_numba_s_runtime():
    box = _box()
    image = tuple_image(box)
    for _ in range(3):
        assert _with_runtime(image.image, image.tuple_type) == 2 * 15.0 + 1.0
    assert box.grid.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@njit(_nrt=False)
def _through_value_copy(box, value):
    ref = ref_of_value(box)
    again = ref_of_value(ref)  # a reference passes through as it is
    ref.ints[1] = 20
    return _callee_adds(again, value), again.ints[1]


def test_a_reference_to_a_tuple_held_by_value_reaches_its_arrays():
    """`ref_of_value`: code holding the tuple by value hands a callee compiled for references
    a copy of the tuple's fields, the same arrays."""
    box = _box()
    total, ints1 = _through_value_copy(box, 1.0)
    assert box.ints.tolist() == [0, 20, 2, 3] and box.grid[1, 2] == 6.0
    assert total == box.grid.sum() + 3 + 3 + 3 and ints1 == 20
    assert all(isinstance(signature[0], TupleRef) for signature in _callee_adds.signatures)

