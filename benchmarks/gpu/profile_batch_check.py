"""Batch vs single Nsight Compute profiles on a GPU: same signatures, and what a batch saves.

For each task, mutate k0 into distinct variants (random strategies, random walk), profile the
first `--single` of them one ncu session each, then all of them in batches; print per-kernel
latency both ways and the largest difference between the two signatures of a kernel.

    python benchmarks/gpu/profile_batch_check.py --tasks softmax,matmul_fp16 --variants 16 \
        --json out/profile_batch.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kbsim.strategies import STRATEGIES  # noqa: E402
from live.profiler import NcuProfiler  # noqa: E402
from live.proposers import make_proposer  # noqa: E402
from live.proposers.base import ParentInfo  # noqa: E402
from live.tasks.registry import builtin_task  # noqa: E402


def variants(task_name: str, n: int, seed: int) -> list[str]:
    task = builtin_task(task_name)
    proposer = make_proposer("mutate")
    rng = random.Random(seed)
    pool, seen = [task.k0], {task.k0}
    for attempt in range(40 * n):
        if len(pool) >= n:
            break
        parent = rng.choice(pool)
        info = ParentInfo(kernel_id="p", code=parent, ms=None, ref_ms=None)
        got = proposer.propose(task, info, rng.choice(STRATEGIES), seed=seed,
                               sample_index=attempt)
        if got.status == "ok" and got.code and got.code not in seen:
            seen.add(got.code)
            pool.append(got.code)
    return pool


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", default="softmax,matmul_fp16")
    parser.add_argument("--variants", type=int, default=16)
    parser.add_argument("--single", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    report = {}
    for task_name in args.tasks.split(","):
        codes = variants(task_name, args.variants, seed=0)
        single = NcuProfiler("builtin")
        t0 = time.perf_counter()
        alone = [single.profile(task_name, c) for c in codes[:args.single]]
        single_s = (time.perf_counter() - t0) / max(1, len(alone))
        batch = NcuProfiler("builtin")
        t0 = time.perf_counter()
        many = batch.profile_many(task_name, codes, batch_size=args.batch_size)
        batch_s = (time.perf_counter() - t0) / max(1, len(many))
        diffs = [max(abs(a - b) for a, b in zip(x.hw_sig, y.hw_sig, strict=True))
                 for x, y in zip(alone, many, strict=False) if x.profiled and y.profiled]
        report[task_name] = {
            "variants": len(codes), "single_s_per_kernel": round(single_s, 2),
            "batch_s_per_kernel": round(batch_s, 2),
            "ratio": round(single_s / batch_s, 1) if batch_s else None,
            "batch_profiled": sum(r.profiled for r in many),
            "single_profiled": sum(r.profiled for r in alone),
            "max_abs_diff_hw_sig_pct_points": round(max(diffs), 2) if diffs else None,
            "median_abs_diff": round(statistics.median(diffs), 2) if diffs else None,
            "errors": sorted({(r.error or "")[:200] for r in many if not r.profiled}),
        }
        print(task_name, json.dumps(report[task_name]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
