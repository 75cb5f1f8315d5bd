"""The evaluator's GPU memory plan: workers, input caches and concurrent checks inside the card.

Before a run (parent side, CPU only) every task's bytes per shape are estimated by building the
shape's inputs and running the PyTorch reference under torch's fake-tensor mode (no memory, about
0.1 s per task): inputs, the input clones the checks keep, the reference's outputs and every
temporary it allocates, the candidate's poisoned outputs, and the comparator's float64 work
(`COMPARE_BYTES_PER_ELEMENT`). From the card's memory (or ``--gpu-memory``) the plan then fixes

- how many worker processes fit (each holds a CUDA context and an input cache),
- each worker's input-cache bytes and its CUDA allocator cap (its planned bytes plus 15 % and
  256 MiB of slack: the plan's total is what is shared, the cap only stops a runaway worker),
- a pool of bytes for the checks and timings in flight: a worker reserves its task's need from the
  pool (`MemoryPool`) before it checks, and gives it back when it asks for the device alone to
  time (the worker empties its allocator cache first, so what it gave back is free on the card),
- which shapes are dropped: a shape whose need does not fit even one worker alone. Its task keeps
  its other shapes and still runs; the drop is recorded as a note (manifest, summary).

The sum of every worker's fixed part plus the pool never exceeds the usable bytes, so concurrent
checks never take the card past its cap (tests/live/test_memory_plan.py simulates it).
"""

from __future__ import annotations

import contextlib
import logging
import math
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from live.tasks.findings import NO_FINDINGS, TaskFindings

log = logging.getLogger(__name__)

GIB = 2**30
#: elements the comparator (live.evaluator.checks) compares at a time in float64 (about 56
#: bytes each in flight: 2**24 -> ~0.9 GiB)
CHUNK_ELEMENTS = 2**24
#: bytes a worker process holds before any tensor: CUDA context, cuBLAS workspace, Triton's
#: launcher modules (measured 0.5-0.6 GiB per process on H100/H200 with torch 2.x; rounded up)
CONTEXT_BYTES = int(0.75 * GIB)
#: comparator work per output element: float64 copies of output and reference, the error, the
#: limit and their temporaries alive at once, plus boolean masks (live.evaluator.checks.
#: compare_output: 45-46 bytes counted; on an H200, 8 workers under a 24 GiB plan at 44 bytes
#: ran bias_gelu's 16384 x 11008 check out of its allocator cap). The comparator works on at
#: most ``CHUNK_ELEMENTS`` elements of one output at a time, plus a flat copy of a
#: non-contiguous output.
COMPARE_BYTES_PER_ELEMENT = 56
#: slack on each worker's allocator cap over its planned bytes (fragmentation, rounding)
ALLOCATOR_SLACK = 0.15
ALLOCATOR_SLACK_BYTES = 256 * 2**20
#: share of the cap the plan hands out (the allocator's rounding and fragmentation take the rest)
USABLE_FRACTION = 0.92
#: the L2 flush buffer of timing (2 x L2; 60 MB L2 on H100/H200 rounded up)
FLUSH_BYTES = 128 * 2**20
#: the largest input cache a worker gets when memory is plentiful (the previous default)
MAX_CACHE_BYTES = 8 * GIB


@dataclass(frozen=True)
class ShapeNeed:
    """Estimated device bytes of one shape: pristine ``inputs`` and the transient peak of
    checking or timing it (``peak``, inputs included)."""

    inputs: int
    outputs: int
    peak: int


@dataclass
class TaskMemory:
    """One task's estimate: per perf and test shape, or None where it could not be made."""

    name: str
    perf: list[ShapeNeed | None]
    test: list[ShapeNeed | None]
    dropped: list[int] = field(default_factory=list)  # perf-shape indices dropped by the plan
    notes: list[str] = field(default_factory=list)
    #: the most of the usable bytes one check of this task may need
    #: (``TaskFindings.max_check_share``; None: all of them); larger perf shapes are left out
    #: of live checks, NOTE (D78)
    max_share: float | None = None

    @property
    def kept_perf(self) -> list[int]:
        return [i for i in range(len(self.perf)) if i not in self.dropped]

    def need(self, unknown: int) -> int:
        """Bytes reserved while checking one candidate: the largest kept shape's peak (test
        shapes too); `unknown` for a shape without an estimate."""
        needs = [n.peak if n is not None else unknown
                 for i, n in enumerate(self.perf) if i not in self.dropped]
        needs += [n.peak if n is not None else unknown for n in self.test]
        return max(needs, default=0)

    def perf_inputs(self) -> int:
        """Bytes of the kept perf shapes' inputs (what a worker caches for this task)."""
        return sum(n.inputs for i, n in enumerate(self.perf) if n is not None and i not in
                   self.dropped)


def _tensor_bytes(values: Iterable[Any]) -> int:
    import torch

    return sum(x.numel() * x.element_size() for x in values if isinstance(x, torch.Tensor))


def estimate_shape(task: Any, shape: dict[str, int]) -> ShapeNeed:
    """Bytes one shape needs on the device, from a fake-tensor run of inputs and reference."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Allocations(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.total = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            values = out if isinstance(out, (tuple, list)) else (out,)
            self.total += _tensor_bytes(values)
            return out

    with FakeTensorMode(allow_non_fake_inputs=True):
        inputs = tuple(task.make_inputs(dict(shape), 0, "cpu"))
        recorder = _Allocations()
        with recorder:
            refs = task.reference(*inputs)
        refs = tuple(refs) if isinstance(refs, (tuple, list)) else (refs,)
        in_bytes = _tensor_bytes(inputs)
        out_bytes = _tensor_bytes(refs)
        largest_out = max((x.numel() * x.element_size() for x in refs
                           if isinstance(x, torch.Tensor)), default=0)
        out_elements = max((x.numel() for x in refs if isinstance(x, torch.Tensor)), default=0)
    temporaries = max(recorder.total, out_bytes)  # the reference's outputs and temporaries
    # inputs + the unmodified-input clones + reference work + poisoned candidate outputs
    # + the comparator's float64 work on the largest output
    compare = COMPARE_BYTES_PER_ELEMENT * min(out_elements, CHUNK_ELEMENTS) + largest_out
    peak = 2 * in_bytes + temporaries + out_bytes + compare + FLUSH_BYTES
    return ShapeNeed(inputs=in_bytes, outputs=out_bytes, peak=peak)


def _leave_out_beyond_share(memory: TaskMemory, usable: int) -> None:
    """NOTE (D78): a task with ``max_share`` leaves out of live checks every kept perf shape
    whose check needs more than that share of the usable bytes (the smallest kept shape stays,
    whatever it needs), with a note. One check that holds most of the pool makes every other
    check wait for it; TritonBench-G's largest inputs (up to 49 GiB) did."""
    if memory.max_share is None:
        return
    limit = memory.max_share * usable
    peaks = {i: need.peak for i in memory.kept_perf if (need := memory.perf[i]) is not None}
    over = [i for i, peak in peaks.items() if peak > limit]
    if over and len(over) == len(peaks):
        over.remove(min(over, key=peaks.__getitem__))
    for index in sorted(over):
        memory.dropped.append(index)
        memory.notes.append(
            f"perf shape {index} left out of live checks: needs {peaks[index] / GIB:.2f} GiB to "
            f"check, more than this task's share ({memory.max_share:g}) of {usable / GIB:.2f} "
            "GiB usable, so that several checks run at once")


def estimate_task(task: Any, findings: TaskFindings = NO_FINDINGS) -> TaskMemory:
    """Every perf and test shape of `task`; a shape whose fake run fails has no estimate. A task
    that runs its own code to make inputs (``call_style`` ``returns``, e.g. TritonBench-G
    operators: their scripts are not run under fake tensors) has the peaks its source measured
    at load time (its findings' ``measured_peak_bytes``), else none."""
    if getattr(task, "call_style", "dps") != "dps":
        # measured at load time where the source did (TritonBench-G: each checked shape's peak
        # in the gold check, which holds the same copies and comparator work as a candidate's)
        peaks = findings.measured_peak_bytes
        sizes = findings.shape_bytes or ()
        perf = [ShapeNeed(inputs=sizes[i] if i < len(sizes) else peaks[i], outputs=0,
                          peak=peaks[i] + FLUSH_BYTES) if i in peaks else None
                for i in range(len(task.perf_shapes))]
        # shapes the gold check dropped are not run at all: nothing to reserve for them
        return TaskMemory(task.name, perf, [None] * len(task.test_shapes),
                          dropped=findings.shapes_with("dropped"),
                          max_share=findings.max_check_share)

    def one(shape: dict[str, int]) -> ShapeNeed | None:
        try:
            return estimate_shape(task, shape)
        except Exception as exc:  # noqa: BLE001 - a task source fake mode cannot trace
            log.debug("%s: no memory estimate for %s: %s", task.name, shape, exc)
            return None

    return TaskMemory(task.name, [one(dict(s)) for s in task.perf_shapes],
                      [one(dict(s)) for s in task.test_shapes],
                      max_share=findings.max_check_share)


@dataclass
class MemoryPlan:
    """What the evaluator may use on one GPU; see the module docstring."""

    cap_bytes: int
    usable_bytes: int
    workers: int
    cache_bytes: int  # per worker
    pool_bytes: int  # shared by the checks in flight
    worker_cap_bytes: int  # each worker's CUDA allocator cap
    unknown_need: int  # reserved for a shape without an estimate
    tasks: dict[str, TaskMemory]
    source: str  # where cap_bytes came from

    def need(self, task_name: str) -> int:
        """Bytes a worker reserves from the pool to check a candidate of `task_name`."""
        memory = self.tasks.get(task_name)
        need = memory.need(self.unknown_need) if memory is not None else self.unknown_need
        return min(need, self.pool_bytes)

    def dropped_shapes(self, task_name: str) -> list[int]:
        memory = self.tasks.get(task_name)
        return list(memory.dropped) if memory is not None else []

    def notes(self) -> dict[str, list[str]]:
        """Per task, the notes of its dropped shapes (tasks without notes left out)."""
        return {name: list(m.notes) for name, m in self.tasks.items() if m.notes}

    def committed_bytes(self) -> int:
        """The most the plan lets the evaluator hold at once (<= usable_bytes)."""
        return self.workers * (CONTEXT_BYTES + self.cache_bytes) + self.pool_bytes

    def describe(self) -> dict[str, Any]:
        """Plain data for the trace manifest."""
        return {
            "cap_gib": round(self.cap_bytes / GIB, 2), "source": self.source,
            "usable_gib": round(self.usable_bytes / GIB, 2), "workers": self.workers,
            "cache_gib_per_worker": round(self.cache_bytes / GIB, 2),
            "pool_gib": round(self.pool_bytes / GIB, 2),
            "worker_cap_gib": round(self.worker_cap_bytes / GIB, 2),
            "task_need_gib": {n: round(self.need(n) / GIB, 2) for n in sorted(self.tasks)},
            "dropped_shapes": {n: m.dropped for n, m in self.tasks.items() if m.dropped},
            "notes": self.notes(),
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_memory(tasks: Sequence[Any] | dict[str, TaskMemory], cap_bytes: int, workers: int,
                source: str = "given",
                findings: Mapping[str, TaskFindings] | None = None) -> MemoryPlan:
    """The plan for `tasks` (Task objects, with their `findings` by name, or estimates by name)
    on `cap_bytes` of GPU memory, with at most `workers` worker processes (fewer when their
    contexts would not leave room)."""
    if isinstance(tasks, dict):
        memory = {name: TaskMemory(m.name, list(m.perf), list(m.test), list(m.dropped),
                                   max_share=m.max_share) for name, m in tasks.items()}
    else:
        memory = {t.name: estimate_task(t, (findings or {}).get(t.name, NO_FINDINGS))
                  for t in tasks}
    usable = int(cap_bytes * USABLE_FRACTION)
    room_alone = usable - CONTEXT_BYTES  # one worker, nothing cached
    if room_alone <= 0:
        raise ValueError(f"{cap_bytes / GIB:.2f} GiB of GPU memory cannot hold even one "
                         "evaluator worker's CUDA context.")
    known = [n.peak for m in memory.values() for n in (*m.perf, *m.test) if n is not None]
    for m in memory.values():
        for index, need in enumerate(m.perf):
            if need is not None and need.peak > room_alone:
                m.dropped.append(index)
                m.notes.append(
                    f"perf shape {index} dropped: needs {need.peak / GIB:.2f} GiB to check, "
                    f"{room_alone / GIB:.2f} GiB fit one evaluator worker on this card")
        for index, need in enumerate(m.test):
            if need is not None and need.peak > room_alone:
                m.notes.append(f"test shape {index} needs {need.peak / GIB:.2f} GiB, more than "
                               f"{room_alone / GIB:.2f} GiB: its check may run out of memory")
    for m in memory.values():
        _leave_out_beyond_share(m, usable)
    fitting = [p for p in known if p <= room_alone]
    unknown = max(fitting, default=min(room_alone, 2 * GIB))
    biggest = max(m.need(unknown) for m in memory.values()) if memory else unknown
    biggest = min(biggest, room_alone)
    # workers: each needs its context; the pool must hold the biggest need at least once
    n = max(1, min(workers, (usable - biggest) // CONTEXT_BYTES))
    spare = usable - n * CONTEXT_BYTES - biggest
    # caches: one task's perf inputs per worker is what the affinity queue makes useful; give at
    # most half of what is spare to caches, the rest widens the pool (more checks at once)
    one_task = max((m.perf_inputs() for m in memory.values()), default=0)
    cache = int(min(MAX_CACHE_BYTES, max(one_task, 1), max(0, spare // 2) // n))
    pool = usable - n * (CONTEXT_BYTES + cache)
    worker_cap = int((CONTEXT_BYTES + cache + min(pool, biggest)) * (1 + ALLOCATOR_SLACK)
                     + ALLOCATOR_SLACK_BYTES)
    if n == 1:
        # a lone worker shares the card with nothing: its cap is all that is usable, not the
        # biggest need estimated from checks (an evaluation holds more than its task's check
        # measured, and the allocator fragments: KernelBench's level2/59 and level3/13 ran out
        # of memory at 24 and 29 GiB of an 80 GB card)
        worker_cap = max(worker_cap, usable)
    return MemoryPlan(cap_bytes=int(cap_bytes), usable_bytes=usable, workers=int(n),
                      cache_bytes=cache, pool_bytes=int(pool), worker_cap_bytes=int(worker_cap),
                      unknown_need=int(unknown), tasks=memory, source=source)


def card_memory_bytes() -> tuple[int, str] | None:
    """Total memory of the first visible GPU without a CUDA context in this process
    (``nvidia-smi``), as (bytes, source); None where it cannot be read."""
    import os

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    args = [exe, "--query-gpu=memory.total", "--format=csv,noheader,nounits"]
    if visible and visible.isdigit():
        args += ["-i", visible]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=20, check=True)
        mib = float(out.stdout.strip().splitlines()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return int(mib * 2**20), "nvidia-smi memory.total"


def resolve_cap(gpu_memory_gib: float | None) -> tuple[int, str]:
    """The bytes kernelband may use: ``--gpu-memory`` (never above the card), else the card."""
    card = card_memory_bytes()
    if gpu_memory_gib is not None:
        if gpu_memory_gib <= 0:
            raise ValueError(f"--gpu-memory must be positive, got {gpu_memory_gib}")
        cap = int(gpu_memory_gib * GIB)
        if card is not None and card[0] < cap:
            return card[0], f"{card[1]} (below --gpu-memory {gpu_memory_gib:g})"
        return cap, f"--gpu-memory {gpu_memory_gib:g}"
    if card is not None:
        return card
    import torch

    return int(torch.cuda.get_device_properties(0).total_memory), "torch device properties"


class MemoryPool:
    """Bytes of the plan's pool, reserved by the checks in flight (threads of one process).

    ``acquire(n)`` waits until `n` bytes are free (FIFO: a big request is not starved by small
    ones); ``release(n)`` gives them back. Never more than `capacity` is out at once.
    """

    def __init__(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError("the pool needs a positive capacity")
        self.capacity = int(capacity)
        self._free = int(capacity)
        self._cond = threading.Condition()
        self._queue: list[object] = []
        self.peak_out = 0

    def acquire(self, nbytes: int) -> int:
        """Reserve min(nbytes, capacity); returns what was reserved (pass it to release)."""
        want = int(min(max(nbytes, 0), self.capacity))
        ticket = object()
        with self._cond:
            self._queue.append(ticket)
            while self._queue[0] is not ticket or self._free < want:
                self._cond.wait()
            self._queue.pop(0)
            self._free -= want
            self.peak_out = max(self.peak_out, self.capacity - self._free)
            self._cond.notify_all()
        return want

    def release(self, nbytes: int) -> None:
        with self._cond:
            self._free += int(nbytes)
            if self._free > self.capacity:
                raise RuntimeError("MemoryPool.release of more than was acquired")
            self._cond.notify_all()

    @property
    def out(self) -> int:
        with self._cond:
            return self.capacity - self._free


@contextlib.contextmanager
def session_reservation(pool: MemoryPool, plan: MemoryPlan,
                        task_names: Sequence[str]) -> Iterator[int]:
    """Hold what a profiling session's program may use on the device (a CUDA context and one
    task's inputs at a time: the largest need of `task_names`) from `pool` while it runs. Its
    start-up overlaps the checks in flight (only its measured calls hold the device alone), so
    it takes its bytes from the same pool as they do."""
    want = CONTEXT_BYTES + max((plan.need(name) for name in task_names), default=0)
    got = pool.acquire(want)
    try:
        yield got
    finally:
        pool.release(got)


def ceil_gib(nbytes: int) -> float:
    return math.ceil(nbytes / GIB * 100) / 100
