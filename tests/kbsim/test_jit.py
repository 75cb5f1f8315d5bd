"""`kbsim._jit.inner_njit`: functions compiled for compiled callers only, without the wrappers
Python calls go through; `kbsim._jit.gc_paused`: no garbage collection while numba compiles."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from numba import njit

from kbsim._jit import InnerDispatcher, gc_paused, inner_njit
from kbsim.policies._v2 import prepare_v2


@inner_njit(cache=False)
def _weighted_sum(values, weight):
    total = 0.0
    for v in values:
        total += weight * v
    return total


@njit(cache=False)
def _caller(values, weight):
    return _weighted_sum(values, weight) + 1.0


def test_a_compiled_caller_runs_an_inner_function_as_plain_python_would() -> None:
    values = np.array([0.5, 1.25, -2.0, 3.0])
    assert _caller(values, 3.0) == _weighted_sum.py_func(values, 3.0) + 1.0


def test_an_inner_function_is_compiled_without_the_python_entry_point() -> None:
    values = np.arange(3.0)
    _caller(values, 2.0)
    (cres,) = _weighted_sum.overloads.values()
    assert cres.library.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name) == 0
    (caller_cres,) = _caller.overloads.values()
    wrapper = caller_cres.fndesc.llvm_cpython_wrapper_name
    assert caller_cres.library.get_pointer_to_function(wrapper) != 0


def test_calling_an_inner_function_from_python_raises_instead_of_crashing() -> None:
    with pytest.raises(TypeError, match=r"_weighted_sum is compiled for compiled callers only"):
        _weighted_sum(np.arange(3.0), 2.0)
    # the policy's inner functions are declared so
    assert isinstance(prepare_v2, InnerDispatcher)
    with pytest.raises(TypeError, match="prepare_v2"):
        prepare_v2()


def test_gc_paused_turns_the_collector_off_nested_and_back_on_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block is still open
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_gc_paused_leaves_a_collector_the_caller_turned_off_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_replay_engine_compiles_with_the_collector_off(monkeypatch) -> None:
    from kbsim.envs.registry import build_env
    from kbsim.policies.spec import parse_policy
    from kbsim.replay import chunks

    seen = []

    class _Worker:  # stands for a worker numba has not compiled yet
        overloads: dict = {}

        def compile(self, signature) -> None:
            seen.append(gc.isenabled())

    monkeypatch.setattr(chunks, "compiled_worker", lambda family, kind: _Worker())
    env = build_env("synthetic", "default,tasks=2")
    chunks.prepare_workers([(parse_policy("greedy"), env)], 2, parallel=False)
    assert seen == [False] and gc.isenabled()
