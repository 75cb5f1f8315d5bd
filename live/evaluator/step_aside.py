"""`StepAside`: a check lets the GPU lock's shared side go at its next safe point while a batch of
timings waits (NOTE D97), instead of holding every timing until its shape or test code ends.

The worker's side of `live.evaluator.gpu_lock.StepAsideSignal`. While a check runs under the
shared side, every torch function call (a `TorchFunctionMode`) and every Triton kernel launch
(Triton's launch-enter hook) first reads the signal's byte; if the lock has closed for timings,
the check

1. waits for its own GPU work to finish (``sync``), so nothing of it runs beside a timing,
2. lets the shared side go (``await_turn("release")``) and asks for it again
   (``await_turn("shared")``), which the parent grants once the batch of timings is served,
3. goes on with the call it was about to make.

Compiling a Triton kernel is CPU work of seconds: a check that is about to compile one (Triton's
``jit_cache_hook``, called before each compilation) lets the shared side go whether or not
timings wait, and takes it again at its next safe point after compiling (the post-compile hook,
or the next torch call or launch if the compiler raised and the candidate carried on).

Nothing else changes: the check's inputs, tensors and memory reservation stay as they are, and a
single kernel already running is waited for, never interrupted. The hooks are installed only
around the check (never while timing) and removed afterwards.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Callable
from typing import Any

from torch.overrides import TorchFunctionMode


class _Gone(Exception):
    """The parent went away while the check stepped aside."""


def gone(exc: BaseException) -> bool:
    """Whether `exc` says the parent went away while a check stepped aside."""
    return isinstance(exc, _Gone)


class _CallMode(TorchFunctionMode):
    def __init__(self, owner: StepAside) -> None:
        super().__init__()
        self._owner = owner

    def __torch_function__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        self._owner.poll()
        return func(*args, **(kwargs or {}))


def _triton_runtime() -> Any | None:
    try:
        import triton
    except ImportError:  # pragma: no cover - workers always have triton
        return None
    return getattr(getattr(triton, "knobs", None), "runtime", None)


class StepAside:
    """Context manager around a check that holds the shared side (see the module docstring).

    Args:
        flag_path: the `StepAsideSignal` file the evaluator passed in the request.
        await_turn: the worker's request for a side of the lock (``"release"``, ``"shared"``);
            False when the parent is gone.
        sync: waits for this process's GPU work to finish.
        first: the candidate's first check, which starts off the lock (loading and compiling
            are CPU work): the shared side is taken at its first safe point, with
            ``"shared:first"`` (the parent keeps the compile phase's time limit), and
            `held_now` says whether the caller must let it go afterwards.

    Attributes:
        holding: whether the check holds the shared side now (it lets it go on its own while
            it makes a shape's inputs, NOTE D95); the safe points act only while it does.
        steps: how many times the check stepped aside.
        waited_s: seconds spent waiting to come back (the timings' time, not the check's).
        lost: the parent went away while the check stepped aside.
    """

    def __init__(self, flag_path: str, await_turn: Callable[[str], bool],
                 sync: Callable[[], None], *, first: bool = False) -> None:
        handle = os.open(flag_path, os.O_RDONLY)
        try:
            self._map = mmap.mmap(handle, 1, access=mmap.ACCESS_READ)
        finally:
            os.close(handle)
        self._await_turn = await_turn
        self._sync = sync
        self._armed = False
        self._mode: _CallMode | None = None
        self._hook_added: Any = None
        self.holding = True
        self.lost = False
        self._turn = "shared:first" if first else "shared"
        self._taken = not first  # the shared side is ours (or was, before a compilation)
        self._compiling = False  # let go for a compilation, to take again after it
        self._compile_hooks: list[tuple[Any, str]] = []
        self.steps = 0
        self.compiles_off_lock = 0
        self.waited_s = 0.0

    # -- the safe point ------------------------------------------------------------------------

    def poll(self) -> None:
        """At a safe point: come back after a compilation, or step aside if the lock has
        closed for timings."""
        if not (self._armed and self.holding):
            return
        if self._compiling or not self._taken:  # GPU work next: take the shared side first
            self._armed = False
            try:
                self._come_back()
            finally:
                self._armed = True
            return
        if self._map.closed or self._map[0] != 1:
            return
        self._armed = False  # the sync and the waits below call torch themselves
        try:
            self._let_go()
            self._come_back()
            self.steps += 1
        finally:
            self._armed = True

    def _let_go(self) -> None:
        self._sync()
        if not self._await_turn("release"):
            self.lost = True
            raise _Gone("the evaluator went away while the check stepped aside")

    @property
    def held_now(self) -> bool:
        """Whether the check holds the shared side now (taken, and not let go to compile)."""
        return self._taken and not self._compiling

    def _come_back(self) -> None:
        self._compiling = False
        self._taken = True
        asked = time.perf_counter()
        if not self._await_turn(self._turn):
            self.lost = True
            raise _Gone("the evaluator went away while the check stepped aside")
        self.waited_s += time.perf_counter() - asked

    def _launch_hook(self, *_args: Any, **_kwargs: Any) -> None:
        self.poll()

    def _before_compile(self, *_args: Any, **_kwargs: Any) -> None:
        """Triton is about to compile: CPU work, done with the shared side let go."""
        if self._armed and self.holding and self._taken and not self._compiling:
            self._armed = False
            try:
                self._let_go()
            finally:
                self._armed = True
            self._compiling = True
            self.compiles_off_lock += 1
        return None  # never skip the compilation

    def _after_compile(self, *_args: Any, **_kwargs: Any) -> None:
        if self._compiling and self._armed and self.holding:
            self._armed = False
            try:
                self._come_back()
            finally:
                self._armed = True
        return None

    # -- install and remove --------------------------------------------------------------------

    def _add_launch_hook(self) -> None:
        runtime = _triton_runtime()
        if runtime is None or not hasattr(runtime, "launch_enter_hook"):
            return
        hooks = runtime.launch_enter_hook
        if hasattr(hooks, "add") and hasattr(hooks, "remove"):  # a chain of hooks (newer Triton)
            hooks.add(self._launch_hook)
            self._hook_added = ("chain", hooks)
        elif hooks is None:  # a single hook slot, free (older Triton)
            runtime.launch_enter_hook = self._launch_hook
            self._hook_added = ("slot", runtime)

    def _remove_launch_hook(self) -> None:
        if self._hook_added is None:
            return
        kind, where = self._hook_added
        if kind == "chain":
            where.remove(self._launch_hook)
        elif where.launch_enter_hook is self._launch_hook:
            where.launch_enter_hook = None
        self._hook_added = None

    def _add_compile_hooks(self) -> None:
        runtime = _triton_runtime()
        if runtime is None:
            return
        for slot, hook in (("jit_cache_hook", self._before_compile),
                           ("jit_post_compile_hook", self._after_compile)):
            if hasattr(runtime, slot) and getattr(runtime, slot) is None:
                setattr(runtime, slot, hook)
                self._compile_hooks.append((runtime, slot))
        if len(self._compile_hooks) == 1:  # both or neither: never let go without coming back
            runtime, slot = self._compile_hooks.pop()
            setattr(runtime, slot, None)

    def _remove_compile_hooks(self) -> None:
        while self._compile_hooks:
            runtime, slot = self._compile_hooks.pop()
            setattr(runtime, slot, None)

    def __enter__(self) -> StepAside:
        self._add_launch_hook()
        self._add_compile_hooks()
        self._mode = _CallMode(self)
        self._mode.__enter__()
        self._armed = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._armed = False
        try:
            if self._mode is not None:
                self._mode.__exit__(*exc)
                self._mode = None
        finally:
            self._remove_launch_hook()
            self._remove_compile_hooks()
            self._map.close()


