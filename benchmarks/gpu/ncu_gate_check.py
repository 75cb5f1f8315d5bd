"""Nsight Compute behind the device gate, on a GPU: the k0 of every built-in task profiled in one
session per batch of four tasks (as the live runner's batches), with a `GpuLock` as the gate.
Prints, per batch, the session's seconds and the seconds it held the device alone, and, per
task, how far its signature is from the one the shipped H200 exploration trace recorded for
the same k0 (profiled from the start of the program, before the gate).

    python benchmarks/gpu/ncu_gate_check.py --json out/ncu_gate.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kbsim.trace.reader import load_trace  # noqa: E402
from live.evaluator.gpu_lock import GpuLock  # noqa: E402
from live.profiler import NcuProfiler  # noqa: E402
from live.tasks.registry import BUILTIN_TASKS, builtin_task  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(ROOT / "traces" / "explore-h200"))
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    kernels = load_trace(args.trace).kernels_df()
    k0 = kernels[kernels["parent_id"].isna() & (kernels["profiler"] == "ncu")]
    shipped = {row.task_id: list(row.hw_sig) for row in k0.itertuples()}
    names = list(BUILTIN_TASKS)
    lock = GpuLock()
    profiler = NcuProfiler("builtin")
    profiler.device_gate = lock.exclusive
    batches, tasks = [], {}
    for start in range(0, len(names), args.batch):
        chunk = names[start:start + args.batch]
        held_before, t0 = profiler.held_s, time.perf_counter()
        results = profiler.profile_items([(n, builtin_task(n).k0) for n in chunk])
        batches.append({"tasks": chunk, "seconds": round(time.perf_counter() - t0, 2),
                        "held_s": round(profiler.held_s - held_before, 2)})
        print(json.dumps(batches[-1]), flush=True)
        for name, result in zip(chunk, results, strict=True):
            was = shipped.get(name)
            diff = (max(abs(a - b) for a, b in zip(result.hw_sig, was, strict=True))
                    if result.profiled and result.hw_sig and was else None)
            tasks[name] = {"profiled": result.profiled, "hw_sig": result.hw_sig,
                           "shipped_hw_sig": was, "max_abs_diff": diff,
                           "error": (result.error or "")[:200] or None}
            print(name, json.dumps(tasks[name]), flush=True)
    report = {"batches": batches, "tasks": tasks,
              "session_s": round(sum(b["seconds"] for b in batches), 2),
              "held_s": round(sum(b["held_s"] for b in batches), 2),
              "profiled": sum(t["profiled"] for t in tasks.values())}
    print(json.dumps({k: report[k] for k in ("session_s", "held_s", "profiled")}))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0 if report["profiled"] == len(names) else 1


if __name__ == "__main__":
    sys.exit(main())
