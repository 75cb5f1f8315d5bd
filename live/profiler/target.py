"""The program Nsight Compute runs: one candidate on one shape, a few launches.

``python -m live.profiler.target --task-spec S --task T --code FILE [--code FILE2 ...]
[--shape-index I] [--calls N] [--drop T=I,J]``: every candidate in turn on the same inputs, N
calls each (a batch of candidates whose kernels were renamed apart, see live.profiler.batch).
``--item TASK=FILE`` (repeated) takes candidates of several tasks into one session, one task's
inputs at a time. Candidates are loaded as the evaluator loads them
(``live.evaluator.loader.load_candidate``: a whole TritonBench-G operator file's test code is
not run), and the shape run is the middle one of the shapes not dropped (``--drop``, and those
the task's load-time check dropped). A candidate that raises is reported on stderr and skipped.
Writes nothing to stdout (ncu's CSV goes there).

Nsight Compute runs this with ``--profile-from-start off``: each task's inputs are built and its
candidates loaded and called once (compiling, autotuning) unprofiled; only the measured calls
are between ``cudaProfilerStart`` and ``cudaProfilerStop``. Where ``KB_PROFILE_GATE`` names a
Unix socket (the live runner's), the program asks there for the device before each task's
measured calls (``r``), starts on ``g``, and says ``d`` when done: the runner holds the GPU
lock's exclusive side only for that span, not for the session's start-up and compiling.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

#: the environment variable naming the Unix socket of the device gate (`live.profiler.gate`)
GATE_ENV = "KB_PROFILE_GATE"


class _GateClient:
    """The target's side of the device gate: one connection, one turn per task."""

    def __init__(self, path: str | None) -> None:
        self.sock: socket.socket | None = None
        if path:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(path)

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        import torch

        if self.sock is not None:
            self.sock.sendall(b"r")
            if self.sock.recv(1) != b"g":
                raise RuntimeError("the device gate closed before giving the device")
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        try:
            yield
        finally:
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            if self.sock is not None:
                self.sock.sendall(b"d")


def representative_shape_index(n_shapes: int) -> int:
    """The middle performance shape (sizes are listed in increasing order by convention)."""
    return max(0, (n_shapes - 1) // 2)


def parse_drops(values: list[str]) -> dict[str, list[int]]:
    """``--drop TASK=I,J`` values as {task: [I, J]} (several for one task add up)."""
    drops: dict[str, list[int]] = {}
    for value in values:
        task_name, _, indices = value.partition("=")
        drops.setdefault(task_name, []).extend(int(i) for i in indices.split(",") if i)
    return drops


@dataclass
class Prepared:
    """One task's inputs and its candidates loaded, compiled and called once (unprofiled)."""

    shape_index: int | None  # the perf shape run (None: every one is dropped)
    inputs: tuple
    outputs: tuple | None
    loaded: list[tuple[int, ModuleType]]
    failed: list[tuple[int, str]]


def prepare(task: Any, candidates: list[tuple[int, str]], *, drop_shapes: list[int],
            shape_index: int | None, device: str = "cuda") -> Prepared:
    """Load each ``(number, code file)`` with ``load_candidate`` (the dropped shapes out: the
    shape run is the representative one of the kept shapes, or `shape_index`), make the inputs
    and call each candidate once; a candidate that fails is listed with why, not raised."""
    import torch

    from live.evaluator.checks import as_tuple, poisoned_like
    from live.evaluator.loader import kept_shapes, load_candidate

    dps = getattr(task, "call_style", "dps") == "dps"
    kept = list(kept_shapes(task, drop_shapes)[0])
    if shape_index is None:
        if not kept:
            return Prepared(None, (), None, [], [(number, "every perf shape is dropped")
                                                 for number, _ in candidates])
        shape_index = kept[representative_shape_index(len(kept))]
    inputs = task.make_inputs(dict(task.perf_shapes[shape_index]), 0, device)
    outputs = tuple(poisoned_like(r) for r in as_tuple(task.reference(*inputs))) \
        if dps else None
    prepared = Prepared(shape_index, inputs, outputs, [], [])
    for number, code in candidates:  # load, compile and autotune unprofiled
        code_path = Path(code)
        try:
            module = load_candidate(task, code_path.read_text(), drop_shapes=drop_shapes,
                                    workdir=code_path.parent,
                                    module_name=f"kb_profiled_{number}").module
            task.call(module, inputs, outputs)
            if device == "cuda":
                torch.cuda.synchronize()
            prepared.loaded.append((number, module))
        except Exception as exc:  # noqa: BLE001 - one candidate's fault ends only its turn
            prepared.failed.append((number, f"{type(exc).__name__}: {exc}"))
    return prepared


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task-spec", required=True)
    parser.add_argument("--task", default=None)
    parser.add_argument("--code", action="append", default=[])
    parser.add_argument("--item", action="append", default=[],
                        help="TASK=FILE: candidates of several tasks in one session (numbered "
                        "in the order given, across tasks)")
    parser.add_argument("--drop", action="append", default=[],
                        help="TASK=I,J: perf-shape indices of TASK not to run (beside those "
                        "the task's load-time check dropped)")
    parser.add_argument("--shape-index", type=int, default=None)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args(argv)
    sys.stdout = sys.stderr  # keep ncu's stdout clean

    import torch

    from live.evaluator.task_source import resolve_task

    items = [tuple(item.split("=", 1)) for item in args.item]
    if args.task is not None:
        items += [(args.task, code) for code in args.code]
    if not items:
        parser.error("give --task and --code, or --item TASK=FILE")
    drops = parse_drops(args.drop)
    failed = 0
    gate = _GateClient(os.environ.get(GATE_ENV))
    by_task: dict[str, list[tuple[int, str]]] = {}
    for number, (task_name, code) in enumerate(items):
        by_task.setdefault(task_name, []).append((number, code))
    for task_name, candidates in by_task.items():  # one task's inputs on the device at a time
        task = resolve_task(args.task_spec, task_name)
        prepared = prepare(task, candidates, drop_shapes=drops.get(task_name, []),
                           shape_index=args.shape_index)
        for number, why in prepared.failed:
            failed += 1
            print(f"kb-profile: candidate {number} failed: {why}", file=sys.stderr)
        if prepared.loaded:
            with gate.turn():  # the device alone from here (the runner's lock), profiled
                for number, module in prepared.loaded:
                    try:
                        for _ in range(args.calls):
                            task.call(module, prepared.inputs, prepared.outputs)
                        torch.cuda.synchronize()
                    except Exception as exc:  # noqa: BLE001
                        failed += 1
                        print(f"kb-profile: candidate {number} failed: "
                              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        del prepared
        torch.cuda.empty_cache()
    return 1 if failed == len(items) else 0


if __name__ == "__main__":
    sys.exit(main())
