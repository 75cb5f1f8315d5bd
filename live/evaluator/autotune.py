"""Triton autotuning made quick in workers that check, not time (NOTE D71, D79, D89).

Installed at a worker's start: by the live evaluator's workers that check beside others
(``WorkerSettings.quick_autotune``, D79) and by load-time gold-check workers
(`live.gold.judge`, D71 and D89); undone before a plain-script run of a benchmark's operator
in a worker that checked before (`live.tasks.tritonbench.script`).
"""

from __future__ import annotations

import math
from typing import Any

#: NOTE (D71): in a load-time check worker (``WorkerSettings.quick_autotune``) Triton's autotuner
#: benchmarks each configuration for about this many milliseconds (warm-up and timed runs)
#: instead of 25 + 100: the check needs a configuration that runs, not the fastest one, and on
#: an H200 every operator autotuned on all its performance inputs took 50-180 s (13 of them past
#: the 180 s limit) with full benchmarks. k0 reuses the reference's choice (D66).
QUICK_AUTOTUNE_MS = 1


def install_quick_autotune() -> bool:
    """Make ``triton.testing.do_bench`` (the benchmarker Triton's autotuner asks its driver for
    at tuning time, and the one the deprecated ``warmup=``/``rep=`` interface calls) run for
    ``QUICK_AUTOTUNE_MS`` whatever it is asked; True once installed. For load-time check
    workers (D71) and live evaluator workers that check beside others (D79): nothing in them
    is timed with it (timing uses CUDA events, `live.evaluator.timing`)."""
    try:
        import triton.testing
    except ImportError:
        return False
    original = triton.testing.do_bench
    if getattr(original, "_kb_quick", False):
        return True
    names = ("warmup", "rep", "grad_to_none", "quantiles", "return_mode")

    def quick_do_bench(fn: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs.update(zip(names[:len(args)], args, strict=True))
        kwargs.update(warmup=QUICK_AUTOTUNE_MS, rep=QUICK_AUTOTUNE_MS)
        return original(fn, **kwargs)

    quick_do_bench._kb_quick = True  # type: ignore[attr-defined]
    quick_do_bench._kb_original = original  # type: ignore[attr-defined]
    triton.testing.do_bench = quick_do_bench
    return True


def install_first_config_autotune() -> bool:
    """NOTE (D89): in a load-time check worker (``WorkerSettings.first_config``) Triton's
    autotuner runs the first of its (pruned) configurations that compiles and runs, instead of
    compiling and benchmarking every one: a gold check needs a configuration that runs, the
    same one for the gold code and k0, not the fastest. The others are reported to the
    autotuner as not running (infinite time), so it picks the first; nothing is read from or
    written to Triton's on-disk autotuning cache (a choice made this way is no tuning result).
    The live evaluator still tunes in full. True once installed."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    if getattr(Autotuner.run, "_kb_first", False):
        return True
    original_run, original_bench = Autotuner.run, Autotuner._bench

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.cache_results = False
        self._kb_ran = None  # a new key may benchmark: no configuration has run for it yet
        return original_run(self, *args, **kwargs)

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        ran = getattr(self, "_kb_ran", None)
        if ran is not None:  # one configuration ran for this key: the rest are not tried
            return [float("inf")] * len(ran) if isinstance(ran, list | tuple) else float("inf")
        timing = original_bench(self, *args, config=config, **meta)
        values = timing if isinstance(timing, list | tuple) else [timing]
        if all(math.isfinite(float(v)) for v in values):
            self._kb_ran = timing
        return timing

    run._kb_first = True  # type: ignore[attr-defined]
    run._kb_original = original_run, original_bench  # type: ignore[attr-defined]
    Autotuner.run, Autotuner._bench = run, bench
    return True


def restore_autotuning() -> None:
    """Undo `install_quick_autotune` and `install_first_config_autotune` in this process: a
    plain-script run (``live.tasks.tritonbench.script``) in a worker that checked an operator
    before must tune as the benchmark's own script does."""
    try:
        import triton.testing
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    original = getattr(triton.testing.do_bench, "_kb_original", None)
    if original is not None:
        triton.testing.do_bench = original
    originals = getattr(Autotuner.run, "_kb_original", None)
    if originals is not None:
        Autotuner.run, Autotuner._bench = originals
