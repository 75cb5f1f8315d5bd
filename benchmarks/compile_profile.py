"""Where numba's first-run compile time goes: one row per compiled function and signature.

Runs one replay (the issue #16 command by default: kernelband-v2 on the tape env of the shipped
exploration trace) with an empty numba cache and numba's compile events recorded, then prints
per dispatcher and signature: inclusive seconds (with the callees it compiled), exclusive seconds
(its own typing, lowering and LLVM), and the LLVM share of the exclusive time.

    PYTHONPATH=$PWD python benchmarks/compile_profile.py
    PYTHONPATH=$PWD python benchmarks/compile_profile.py --policy greedy --env fitted
    PYTHONPATH=$PWD python benchmarks/compile_profile.py --preset paper-ablation \
        --env tape --env fitted                       # what `kernelband demo` compiles
    PYTHONPATH=$PWD python benchmarks/compile_profile.py --synthetic default,tasks=3

The cache folder is a fresh temporary directory (NUMBA_CACHE_DIR, set before numba is imported),
so the run neither reads nor touches any other cache. Every policy family compiles in this one
process, one after the other (a sweep's first run compiles the other families in helper
processes meanwhile: `kbsim.replay.chunks.prepare_workers`), so the total is the serial one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

# measure the kbsim of the tree this script lives in, not the editable install's
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="traces/explore-h200")
    parser.add_argument("--synthetic", default=None)
    parser.add_argument("--policy", action="append", default=None)
    parser.add_argument("--preset", default=None, help="a policy grid (adds to --policy)")
    parser.add_argument("--env", action="append", default=None,
                        choices=["tape", "fitted", "synthetic"], help="default: tape")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--top", type=int, default=25, help="rows to print")
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="kb-numba-")
    os.environ["NUMBA_CACHE_DIR"] = cache

    import numba.core.event as ev

    from kbsim.envs.recorded import load_tables
    from kbsim.envs.registry import build_env
    from kbsim.policies.spec import parse_policy
    from kbsim.replay.chunks import prepare_workers
    from kbsim.replay.presets import get_preset
    from kbsim.replay.sweep import run_sweep

    policies = list(args.policy or [])
    if args.preset:
        policies += list(get_preset(args.preset).policies)
    policies = policies or ["kernelband-v2"]
    if args.synthetic:
        envs = [build_env("synthetic", args.synthetic)]
    else:
        tables = load_tables([args.trace])
        envs = [build_env(name, tables) for name in (args.env or ["tape"])]
    t0 = time.perf_counter()
    with ev.install_recorder("numba:compile") as compiles, \
            ev.install_recorder("numba:llvm_lock") as llvm:
        # every family in this process (a sweep compiles the others in helper processes,
        # whose compiles these recorders would not see)
        prepare_workers([(parse_policy(p), env) for p in policies for env in envs], args.steps,
                        parallel=False)
        run_sweep(policies, envs, args.seeds, args.steps)
    total = time.perf_counter() - t0

    # pair start/end events per (dispatcher, args); nesting gives exclusive times
    stack: list[list] = []
    rows: list[tuple[str, float, float, float]] = []
    llvm_spans = [(ts, e.is_start) for ts, e in llvm.buffer]
    for ts, event in compiles.buffer:
        data = event.data
        name = f"{data['dispatcher'].py_func.__module__}.{data['dispatcher'].__name__}"
        if event.is_start:
            stack.append([name, ts, 0.0, data["args"]])
        else:
            name, start, child, sig = stack.pop()
            inclusive = ts - start
            if stack:
                stack[-1][2] += inclusive
            llvm_s = _llvm_within(llvm_spans, start, ts)
            rows.append((f"{name}{tuple(str(a)[:40] for a in sig)!s:.80}", inclusive,
                         inclusive - child, llvm_s))
    rows.sort(key=lambda r: -r[2])
    print(f"replay with an empty cache: {total:.1f} s wall, {len(rows)} compilations, "
          f"{sum(r[2] for r in rows):.1f} s compiling (cache {cache})")
    print(f"{'exclusive s':>11} {'inclusive s':>11} {'LLVM s (incl)':>13}  function(signature)")
    for name, inclusive, exclusive, llvm_s in rows[: args.top]:
        print(f"{exclusive:11.2f} {inclusive:11.2f} {llvm_s:13.2f}  {name}")


def _llvm_within(spans: list[tuple[float, bool]], start: float, end: float) -> float:
    """Seconds of LLVM-lock time that fall within [start, end]."""
    out = 0.0
    opened = None
    for ts, is_start in spans:
        if is_start:
            opened = ts
        elif opened is not None:
            lo, hi = max(opened, start), min(ts, end)
            if hi > lo:
                out += hi - lo
            opened = None
    return out


if __name__ == "__main__":
    main()
