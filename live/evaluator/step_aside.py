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

    Attributes:
        holding: whether the check holds the shared side now (it lets it go on its own while
            it makes a shape's inputs, NOTE D95); the safe points act only while it does.
        steps: how many times the check stepped aside.
        waited_s: seconds spent waiting to come back (the timings' time, not the check's).
        lost: the parent went away while the check stepped aside.
    """

    def __init__(self, flag_path: str, await_turn: Callable[[str], bool],
                 sync: Callable[[], None]) -> None:
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
        self.steps = 0
        self.waited_s = 0.0

    # -- the safe point ------------------------------------------------------------------------

    def poll(self) -> None:
        """At a safe point: step aside if the lock has closed for timings."""
        if not (self._armed and self.holding) or self._map.closed or self._map[0] != 1:
            return
        self._armed = False  # the sync and the waits below call torch themselves
        try:
            self._sync()
            if not self._await_turn("release"):
                self.lost = True
                raise _Gone("the evaluator went away while the check stepped aside")
            asked = time.perf_counter()
            if not self._await_turn("shared"):
                self.lost = True
                raise _Gone("the evaluator went away while the check stepped aside")
            self.waited_s += time.perf_counter() - asked
            self.steps += 1
        finally:
            self._armed = True

    def _launch_hook(self, *_args: Any, **_kwargs: Any) -> None:
        self.poll()

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

    def __enter__(self) -> StepAside:
        self._add_launch_hook()
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
            self._map.close()


