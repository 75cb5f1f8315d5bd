"""Evaluator verdicts, an older tree against this one: the same seeded live runs, kernel by kernel.

After a change to the evaluator that should not change what it decides, run the same short live
run (``explore`` + the seeded ``mutate`` proposer, so both trees propose the same kernels) with an
older tree and with this one, one after the other on the same GPU, and compare every kernel both
evaluated: its status, and its speedup over the task's reference (``ref_ms / ms``).

    git archive OLD_COMMIT | gzip > old.tar.gz
    python3 benchmarks/gpu/evaluator_ab.py old.tar.gz OUT_DIR --tasks builtin \\
        --tasks tritonbench:.gpu-data/tritonbench-g@ten.json --steps 6 --device cuda

Each ``--tasks`` spec is one pair of runs (old, then new), under ``OUT_DIR/runs/{old,new}-K``,
each with a check cache of its own (``OUT_DIR/runs/{old,new}-K.cache``), so each tree's load
runs its own gold checks.
``OUT_DIR/evaluator_ab.json`` holds, per spec and over all: kernels evaluated by both, those with
the same status, every disagreement (task, kernel, both statuses and errors), and for kernels
timed by both the new/old speedup ratio (median, 10th and 90th percentile, share within ±5 %).
A status that differs where both runs hit a time limit or the GPU faulted is listed, not
explained away. Exit status 1 when any status differs. ``--device cpu`` runs the same on the
CPU's tiny shapes (Triton interpreted): a smoke test, never a timing figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def evaluations(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The run's evaluations by (task, kernel); a kernel evaluated twice keeps its first."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    path = folder / "evaluations.jsonl"
    if not path.is_file():
        return found
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a killed run
            continue
        if row.get("kernel_id"):
            found.setdefault((row["task_id"], row["kernel_id"]), row)
    return found


def speedup(row: dict[str, Any]) -> float | None:
    ms, ref = row.get("ms"), row.get("ref_ms")
    if row.get("status") != "ok" or not ms or not ref:
        return None
    return float(ref) / float(ms)


def compare(old: dict[tuple[str, str], dict[str, Any]],
            new: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """Kernel-by-kernel agreement of two runs' evaluations."""
    both = sorted(set(old) & set(new))
    differ = [{"task": t, "kernel": k, "old": old[t, k].get("status"),
               "new": new[t, k].get("status"), "old_error": (old[t, k].get("error") or "")[:200],
               "new_error": (new[t, k].get("error") or "")[:200]}
              for t, k in both if old[t, k].get("status") != new[t, k].get("status")]
    ratios = []
    for key in both:
        a, b = speedup(old[key]), speedup(new[key])
        if a and b:
            ratios.append(b / a)
    out: dict[str, Any] = {"old_only": len(set(old) - set(new)),
                           "new_only": len(set(new) - set(old)), "both": len(both),
                           "same_status": len(both) - len(differ), "differ": differ,
                           "timed_by_both": len(ratios)}
    if ratios:
        ratios.sort()
        deciles = statistics.quantiles(ratios, n=10) if len(ratios) > 1 else ratios * 9
        out.update(ratio_median=round(statistics.median(ratios), 4),
                   ratio_p10=round(deciles[0], 4), ratio_p90=round(deciles[-1], 4),
                   within_5pct=sum(abs(r - 1) <= 0.05 for r in ratios))
    return out


def live(tree: Path, out: Path, spec: str, steps: int, device: str, workers: int,
         max_wall: float) -> float:
    """One seeded live run of `spec` with the code in `tree`, its own check cache beside
    `out`; its wall time."""
    start = time.perf_counter()
    with open(out.with_suffix(".log"), "w") as log:
        subprocess.run([sys.executable, "-m", "kernelband.cli", "live", "--out", str(out),
                        "--tasks", spec, "--policy", "explore", "--proposer", "mutate",
                        "--steps", str(steps), "--seed", "0", "--device", device,
                        "--profile", "off", "--eval-workers", str(workers),
                        "--max-wall", f"{max_wall:g}", "--quiet"],
                       cwd=tree, stdout=log, stderr=subprocess.STDOUT, check=False,
                       env=dict(os.environ, PYTHONPATH=str(tree), PYTHONUNBUFFERED="1",
                                KERNELBAND_CACHE_DIR=str(out.with_suffix(".cache"))))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="the older tree: a `git archive` tarball (.tar.gz)")
    parser.add_argument("out", type=Path, help="output folder")
    parser.add_argument("--tasks", action="append", required=True,
                        help="a task spec; repeat for several (each is a pair of runs)")
    parser.add_argument("--steps", type=int, default=6, help="steps per task [6]")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--eval-workers", type=int, default=8)
    parser.add_argument("--max-wall", type=float, default=240.0,
                        help="seconds per run after which it starts nothing new [240]")
    args = parser.parse_args(argv)
    if not args.old.is_file():
        parser.error(f"{args.old}: no such tarball (make one with `git archive COMMIT | gzip`)")
    old_tree = Path(tempfile.mkdtemp(prefix="kb-old-tree-"))
    with tarfile.open(args.old) as tar:
        tar.extractall(old_tree, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                    else {}))
    for extra in (".gpu-data",):  # the benchmarks a task spec reads by relative path
        if (ROOT / extra).exists() and not (old_tree / extra).exists():
            (old_tree / extra).symlink_to(ROOT / extra)
    runs = args.out.resolve() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"specs": {}}
    all_old: dict[tuple[str, str], dict[str, Any]] = {}
    all_new: dict[tuple[str, str], dict[str, Any]] = {}
    for k, spec in enumerate(args.tasks):
        walls = {}
        for label, tree in (("old", old_tree), ("new", ROOT)):
            walls[label] = round(live(tree, runs / f"{label}-{k}", spec, args.steps, args.device,
                                      args.eval_workers, args.max_wall), 1)
            print(f"{spec}: {label} tree ran in {walls[label]} s", flush=True)
        old, new = evaluations(runs / f"old-{k}"), evaluations(runs / f"new-{k}")
        all_old.update(old)
        all_new.update(new)
        report["specs"][spec] = {"wall_s": walls, **compare(old, new)}
    report["all"] = compare(all_old, all_new)
    (args.out / "evaluator_ab.json").write_text(json.dumps(report, indent=2) + "\n")
    for name, part in [*report["specs"].items(), ("all", report["all"])]:
        line = (f"{name}: {part['both']} kernels evaluated by both, {part['same_status']} with "
                f"the same status")
        if part.get("timed_by_both"):
            line += (f"; speedup new/old over {part['timed_by_both']} timed by both: median "
                     f"{part['ratio_median']:.3f} [p10 {part['ratio_p10']:.3f}, p90 "
                     f"{part['ratio_p90']:.3f}], {part['within_5pct']} within ±5 %")
        print(line)
    for d in report["all"]["differ"]:
        print(f"  differs: {d['task']} {d['kernel']}: {d['old']} -> {d['new']}")
    return 1 if report["all"]["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
