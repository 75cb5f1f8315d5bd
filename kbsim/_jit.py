"""Compiling with numba: `inner_njit` for the functions only compiled code calls, `gc_paused`
for the compilations themselves.

numba compiles every ``@njit`` function with two entry points for callers outside compiled code:
a CPython wrapper (unboxes each argument from a Python object) and a C-callable wrapper. For a
function taking the policy state, the pool or an environment (named tuples of ~10-50 arrays) the
CPython wrapper is the larger part of the generated code (~175 kB of LLVM IR against ~25-50 kB
for the function itself), and numba lowers, optimises and emits it for every such function,
while the replay engine and the public entry points (`kbsim.policies.kernels`) are the only
functions Python calls. Declared with `inner_njit`, a function is compiled without both wrappers
(NOTE (D64)): the compiling of a cold kernelband-v2 replay on the tape env went from 27.5 to
21.6 CPU-seconds (docs/benchmarks.md, *First contact*); what its callers compute is unchanged.

Such a function can only be called from compiled code: called from Python it raises TypeError
(numba would call a null entry point). Its ``py_func`` is the plain Python function.

`gc_paused`: Python's cyclic garbage collector off while numba compiles. Compiling allocates
hundreds of thousands of objects that live to the end of the compilation (IR, types, LLVM
wrappers), so the collector ran full passes over the whole heap again and again and found
little: ~0.16 CPU-s each, ~12 % of compiling two kernelband-v2 replay workers. Off, the
compilation's garbage waits for the first collection after it (the process's peak memory ~170
MB higher for those two workers).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from numba import config
from numba.core.registry import CPUDispatcher


class InnerDispatcher(CPUDispatcher):
    """A numba dispatcher compiled without CPython / C wrappers: callable from compiled code
    only."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__qualname__} is compiled for compiled "
            "callers only (kbsim._jit.inner_njit); call it from an @njit function, or its "
            ".py_func from Python")


def inner_njit(fn: Callable | None = None, /, *, cache: bool = True,
               **options: Any) -> Any:
    """``njit(cache=cache, **options)`` without the Python-facing wrappers (module docstring).

    Usable bare (``@inner_njit``) or with options (``@inner_njit(_nrt=False)``); the options are
    numba's ``njit`` options. With ``NUMBA_DISABLE_JIT`` set the function stays plain Python.
    """

    def decorate(func: Callable) -> Any:
        if config.DISABLE_JIT:
            return func
        targetoptions = {"nopython": True, "boundscheck": None, **options,
                         "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
        dispatcher = InnerDispatcher(py_func=func, locals={}, targetoptions=targetoptions)
        if cache:
            dispatcher.enable_caching()
        return dispatcher

    return decorate if fn is None else decorate(fn)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (module docstring), on again
    after it if it was on before (so a block inside another leaves it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
