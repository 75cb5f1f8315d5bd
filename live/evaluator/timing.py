"""Timing of a baseline and a candidate in one process, interleaved (worker side).

CUDA: every repetition flushes L2 (writes a buffer twice the L2 size), then times each function
with its own pair of CUDA events; the order of the two alternates between repetitions so neither
always runs on the heels of the other. Repetitions run in windows; after ``min_reps`` the loop
stops once the medians of both functions moved less than ``rel_tol`` over the last window, or at
``max_reps`` / ``max_time_s``. Slow calls (hundreds of milliseconds: TritonBench-G's largest
inputs) get fewer warm-up repetitions and shorter windows, so ``max_time_s`` bounds the timing
(``window_for``). CPU (interpreter): wall clock, a few repetitions, flagged as such.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TimingConfig:
    """How hard to time. Defaults aim at ~1 % repeatability for the whole interleaved pair."""

    warmup_reps: int = 5
    min_reps: int = 20
    max_reps: int = 100
    window: int = 10
    rel_tol: float = 0.005
    max_time_s: float = 2.0
    cpu_reps: int = 2
    #: warm-up stops after this long (at least one repetition), however few reps that is
    max_warmup_s: float = 0.5


def window_for(rep_s: float, config: TimingConfig) -> int:
    """Repetitions per window when one interleaved repetition takes `rep_s` seconds: the
    configured window, shortened so that a window takes at most a quarter of ``max_time_s``
    (at least one repetition). Only slow calls are affected: at the defaults, a repetition
    over 50 ms."""
    if rep_s <= 0:
        return config.window
    fits = int(config.max_time_s / 4 / rep_s)
    return max(1, min(config.window, fits))


@dataclass(frozen=True)
class Samples:
    """Per-repetition times (ms) of each timed function, in the order they were given."""

    ms: tuple[tuple[float, ...], ...]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def robust_cv(values: Sequence[float]) -> float:
    """1.4826 · MAD / median: a coefficient of variation that one preempted rep cannot inflate.

    NOTE (D11): ``timing_cv`` in records is this robust CV (duration-weighted over shapes), not
    std/mean, which a single interrupted repetition can dominate.
    """
    med = median(values)
    if med <= 0:
        return float("nan")
    mad = median([abs(v - med) for v in values])
    return 1.4826 * mad / med


def classic_cv(values: Sequence[float]) -> float:
    """Standard deviation / mean."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return float(statistics.stdev(values) / mean) if mean > 0 else float("nan")


def _stable(history: list[list[float]], window: int, rel_tol: float) -> bool:
    for samples in history:
        now = median(samples)
        before = median(samples[:-window])
        if now <= 0 or abs(now - before) / now >= rel_tol:
            return False
    return True


def time_cuda_interleaved(
    fns: Sequence[Callable[[], object]], config: TimingConfig, l2_bytes: int
) -> Samples:
    """Interleaved CUDA-event timings of `fns` with L2 flushed before every timed call."""
    import torch  # here: the runner's process imports this module and never times (#36)

    flush = torch.empty(max(int(2 * l2_bytes), 1 << 20), dtype=torch.int8, device="cuda")
    started = time.perf_counter()
    rep_s = 0.0
    for done in range(1, config.warmup_reps + 1):
        for fn in fns:
            flush.zero_()
            fn()
        torch.cuda.synchronize()
        rep_s = (time.perf_counter() - started) / done
        if time.perf_counter() - started > config.max_warmup_s:
            break  # a slow call: what is left of warm-up would cost seconds
    window = window_for(rep_s, config)
    history: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    started = time.perf_counter()
    reps = 0
    while True:
        pending = []
        for rep in range(window):
            sequence = order if (reps + rep) % 2 == 0 else order[::-1]
            for index in sequence:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                flush.zero_()
                start.record()
                fns[index]()
                end.record()
                pending.append((index, start, end))
        torch.cuda.synchronize()
        for index, start, end in pending:
            history[index].append(float(start.elapsed_time(end)))
        reps += window
        if reps >= config.max_reps or time.perf_counter() - started > config.max_time_s:
            break
        if reps >= config.min_reps and _stable(history, window, config.rel_tol):
            break
    del flush
    return Samples(ms=tuple(tuple(h) for h in history))


def time_cpu(fns: Sequence[Callable[[], object]], config: TimingConfig) -> Samples:
    """Wall-clock timings (ms) under the interpreter: NOT GPU figures."""
    history: list[list[float]] = [[] for _ in fns]
    for rep in range(config.cpu_reps):
        sequence = range(len(fns)) if rep % 2 == 0 else reversed(range(len(fns)))
        for index in sequence:
            start = time.perf_counter()
            fns[index]()
            history[index].append((time.perf_counter() - start) * 1e3)
    return Samples(ms=tuple(tuple(h) for h in history))
