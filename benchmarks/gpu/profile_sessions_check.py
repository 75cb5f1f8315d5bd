"""`kernelband traces profile --sessions N` against one session, side by side, on a GPU.

Copies a trace twice, profiles the same tasks' pending kernels in each copy (one session, then N
at once; ``--rounds 2`` repeats the pair in the other order), each pass under the same
``--max-wall``, and prints kernels per second, the share of each pass that some session measured
(``device_held_s / seconds``), and how far the two passes' signatures of the same kernel lie
apart (percentage points of peak, the largest over SM, DRAM and L2). Run it where the trace's tasks
load as in its recording (for a TritonBench-G run: KERNELBAND_CACHE_DIR seeded from the run's
check cache, as ``benchmarks/record_runs.py`` does; its ``sessions-check:NAME`` job runs this).

    python benchmarks/gpu/profile_sessions_check.py benchmarks/runs/tb-explore-h200 \
        --tasks tritonbench/cosine_compute,tritonbench/kldiv_triton --sessions 3 \
        --max-wall 60 --json OUTDIR/profile_sessions.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kbsim.trace.reader import load_trace  # noqa: E402


def profile_pass(trace: Path, tasks: str, sessions: int, batch_size: int,
                 max_wall: float, triton_cache: Path) -> dict:
    """One `kernelband traces profile` pass; its manifest entry (seconds, held, counts).

    Each pass compiles into its own Triton cache: a batch's renamed kernels are the same
    source in both passes, so a shared cache would hand the second pass the first's work."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(triton_cache)}
    before = len(load_trace(trace).manifests[0].get("profile_backfill") or [])
    command = [sys.executable, "-m", "kernelband.cli", "traces", "profile", str(trace),
               "--tasks", tasks, "--sessions", str(sessions), "--batch-size", str(batch_size),
               "--max-wall", str(max_wall), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    print(done.stdout.strip(), file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-800:]}")
    passes = load_trace(trace).manifests[0].get("profile_backfill") or []
    if len(passes) == before:
        raise SystemExit(f"{trace}: no pending kernels of {tasks} to profile")
    entry = passes[-1]
    return {"sessions": sessions, **{k: entry[k] for k in (
        "profiled", "failed", "left", "seconds", "device_held_s")}}


def signatures(trace: Path) -> dict[tuple[str, str], list[float]]:
    rows = load_trace(trace).kernels.to_pylist()
    return {(r["task_id"], r["kernel_id"]): r["hw_sig"] for r in rows
            if r["profiled"] and r["hw_sig"] is not None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--tasks", required=True, help="comma-separated task ids")
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=24)
    parser.add_argument("--max-wall", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=1, help="pairs; the 2nd runs N first")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    before = signatures(args.trace)
    rows, gaps = [], []
    with tempfile.TemporaryDirectory(prefix="kb-sessions-") as tmp:
        for round_ in range(args.rounds):
            copies = {}
            order = [1, args.sessions] if round_ % 2 == 0 else [args.sessions, 1]
            for sessions in order:
                copy = Path(tmp) / f"r{round_}-s{sessions}"
                shutil.copytree(args.trace, copy)
                shutil.rmtree(copy / ".profile-cache", ignore_errors=True)  # profile afresh
                copies[sessions] = copy
                row = profile_pass(copy, args.tasks, sessions, args.batch_size, args.max_wall,
                                   Path(tmp) / f"triton-r{round_}-s{sessions}")
                row["round"] = round_
                row["kernels_per_s"] = row["profiled"] / row["seconds"] if row["seconds"] else 0
                row["measured_share"] = (row["device_held_s"] / row["seconds"]
                                         if row["seconds"] else 0)
                rows.append(row)
            one, many = (signatures(copies[s]) for s in (1, args.sessions))
            for key in set(one) & set(many) - set(before):
                gaps.append(max(abs(a - b) for a, b in zip(one[key], many[key], strict=True)))
    print("| round | sessions | profiled | seconds | kernels/s | device measured s | share |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['round']} | {r['sessions']} | {r['profiled']} | {r['seconds']:.1f} | "
              f"{r['kernels_per_s']:.2f} | {r['device_held_s']:.1f} | "
              f"{r['measured_share']:.0%} |")
    gaps.sort()
    summary = {"rows": rows, "common_kernels": len(gaps),
               "signature_gap_median": gaps[len(gaps) // 2] if gaps else None,
               "signature_gap_max": gaps[-1] if gaps else None}
    print(f"signatures of the {len(gaps)} kernels profiled in both passes: largest gap "
          f"{summary['signature_gap_max']} points, median {summary['signature_gap_median']}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
