"""Kernel-lab benchmark: gold-vs-gold, A/A, evaluator cost vs TritonBench's do_bench, ncu.

Run on a GPU (results go to docs/benchmarks.md, "Kernel lab")::

    python benchmarks/bench_eval.py --device cuda --out OUT_DIR --tasks builtin

Sections, each written to ``OUT_DIR/results.json`` as soon as it finishes:

1. gold: ``kernelband tasks check`` (every task's k0 vs its reference), reference timings JSON.
2. aa: k0 timed as both baseline and candidate in one evaluation: speedup should be 1.
3. cost: our protocol repeated (k0 vs reference) against ``triton.testing.do_bench(warmup=100,
   rep=1000)`` per shape, side by side in one process: GPU-seconds and spread of repeats.
4. faults: an out-of-bounds kernel (illegal memory access) then k0 again on the same evaluator.
5. ncu: Nsight Compute on a few k0 kernels; raw CSV kept as a parser fixture.

On CPU (``--device cpu``) it runs the same code on the tiny shapes as a smoke test; those
timings are interpreter wall clock, never GPU figures.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from live.evaluator import Evaluator, EvaluatorConfig  # noqa: E402
from live.evaluator.task_source import resolve_task, resolve_tasks  # noqa: E402
from live.gold.suite import check_tasks, write_reference_timings  # noqa: E402

OOB_ADD = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + 2_000_000_000  # 8 GB past x
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, x)


def add(x, y, alpha, out):
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, alpha, x.numel(), BLOCK=256)
'''


def cv(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def med(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


class Report:
    def __init__(self, out: Path):
        self.out = out
        self.data: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def put(self, key: str, value: object) -> None:
        self.data[key] = value
        (self.out / "results.json").write_text(json.dumps(self.data, indent=1, default=str))
        print(f"[bench] {key} done at {time.perf_counter() - T0:.0f} s", flush=True)


T0 = time.perf_counter()


def environment(device: str) -> dict:
    info: dict = {"python": sys.version.split()[0]}
    import torch
    import triton

    info["torch"], info["triton"] = torch.__version__, triton.__version__
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, sm_count=props.multi_processor_count,
                    capability=f"{props.major}.{props.minor}",
                    l2_bytes=getattr(props, "L2_cache_size", None))
        try:
            info["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=30).stdout.strip()
        except OSError:
            pass
    return info


def section_gold(ev: Evaluator, spec: str, out: Path) -> dict:
    rows = {}

    def show(c) -> None:  # noqa: ANN001
        r = c.result
        rows[c.task_id] = {k: v for k, v in r.to_dict().items() if k not in ("phi", "runtime_vec")}
        print(f"  gold {c.task_id:<18} {r.status:<13} ref {r.ref_ms} k0 {r.ms} "
              f"cv {r.timing_cv} {r.error or ''}", flush=True)

    checks, info = check_tasks(spec, evaluator=ev, on_result=show)
    write_reference_timings(out / "ref_timings.json", spec, checks, info)
    return {"passed": sum(c.passed for c in checks), "total": len(checks), "tasks": rows}


def section_aa(ev: Evaluator, tasks: list) -> dict:
    rows = {}
    for task in tasks:
        r = ev.evaluate(task.name, task.k0, seed=0, baseline_code=task.k0)
        rows[task.name] = {"status": r.status, "error": r.error, "speedup": r.speedup,
                           "timing_cv": r.timing_cv, "shape_ms": r.shape_ms,
                           "ref_shape_ms": r.ref_shape_ms, "reps": r.timing_reps,
                           "timing_s": r.timing_s, "check_s": r.check_s, "compile_s": r.compile_s,
                           "eval_latency_s": r.eval_latency_s,
                           "worker_overhead_s": r.worker_overhead_s,
                           "registers": r.registers, "spills": r.spills,
                           "shared_bytes": r.shared_bytes, "num_warps": r.num_warps,
                           "num_stages": r.num_stages, "phi": r.phi,
                           "runtime_vec": r.runtime_vec}
        print(f"  aa {task.name:<18} {r.status} speedup {r.speedup} cv {r.timing_cv} "
              f"overhead {r.worker_overhead_s}", flush=True)
    ok = [v for v in rows.values() if v["status"] == "ok"]
    within = [v for v in ok if abs(v["speedup"] - 1.0) <= 0.02]
    return {"tasks": rows, "within_2pct": len(within), "total": len(rows),
            "median_timing_cv": med([v["timing_cv"] for v in ok]),
            "median_worker_overhead_s": med([v["worker_overhead_s"] for v in ok]),
            "max_worker_overhead_s": max((v["worker_overhead_s"] for v in ok), default=None)}


def section_cost(ev: Evaluator, tasks: list, repeats: int, device: str) -> dict:
    import torch
    from triton.testing import do_bench

    from live.evaluator.checks import as_tuple, poisoned_like
    from live.tasks.loading import import_source

    rows = {}
    for task in tasks:
        ours = [ev.evaluate(task.name, task.k0, seed=0) for _ in range(repeats)]
        ours = [r for r in ours if r.status == "ok"]
        if not ours:
            rows[task.name] = {"error": "k0 failed"}
            continue
        module = import_source(task.k0, f"bench_{task.name}")
        dps = getattr(task, "call_style", "dps") == "dps"
        shapes = []
        for index, shape in enumerate(task.perf_shapes):
            inputs = task.make_inputs(dict(shape), 0, device)
            outs = (tuple(poisoned_like(r) for r in as_tuple(task.reference(*inputs)))
                    if dps else None)
            fn = (lambda i=inputs, o=outs, t=task, m=module: t.call(m, i, o))
            ref_fn = (lambda i=inputs, t=task: t.reference(*i))
            bench_ms, bench_s = [], []
            for _ in range(repeats):
                started = time.perf_counter()
                bench_ms.append(float(do_bench(fn, warmup=100, rep=1000)))
                torch.cuda.synchronize()
                bench_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            ref_bench_ms = float(do_bench(ref_fn, warmup=100, rep=1000))
            ref_bench_s = time.perf_counter() - started
            ours_ms = [r.shape_ms[index] for r in ours]
            shapes.append({"shape": dict(shape), "ours_ms": ours_ms, "ours_cv": cv(ours_ms),
                           "dobench_ms": bench_ms, "dobench_cv": cv(bench_ms),
                           "dobench_s": bench_s, "dobench_ref_ms": ref_bench_ms,
                           "dobench_ref_s": ref_bench_s,
                           "ours_ref_ms": [r.ref_shape_ms[index] for r in ours]})
            del inputs, outs
        ours_s = med([r.timing_s for r in ours])
        tb_s = sum(med(s["dobench_s"]) + s["dobench_ref_s"] for s in shapes)
        rows[task.name] = {"shapes": shapes, "ours_timing_s": [r.timing_s for r in ours],
                           "ours_check_s": [r.check_s for r in ours],
                           "ours_reps": [r.timing_reps for r in ours],
                           "tritonbench_s": tb_s, "ours_s": ours_s,
                           "ratio": tb_s / ours_s if ours_s else None}
        print(f"  cost {task.name:<18} ours {ours_s:.3f} s  do_bench {tb_s:.2f} s", flush=True)
    all_shapes = [s for v in rows.values() for s in v.get("shapes", [])]
    total_ours = sum(v["ours_s"] for v in rows.values() if v.get("ours_s"))
    total_tb = sum(v["tritonbench_s"] for v in rows.values() if v.get("tritonbench_s"))
    return {"tasks": rows, "repeats": repeats,
            "total_ours_s": total_ours, "total_tritonbench_s": total_tb,
            "ratio": total_tb / total_ours if total_ours else None,
            "median_ours_cv": med([s["ours_cv"] for s in all_shapes]),
            "median_dobench_cv": med([s["dobench_cv"] for s in all_shapes])}


def section_faults(ev: Evaluator, spec: str) -> dict:
    k0 = resolve_task(spec, "add").k0
    started = time.perf_counter()
    bad = ev.evaluate("add", OOB_ADD, seed=0)
    good = ev.evaluate("add", k0, seed=0)
    return {"oob": {"status": bad.status, "error": bad.error, "recycled": bad.worker_recycled},
            "after": {"status": good.status, "speedup": good.speedup},
            "seconds": time.perf_counter() - started}


def section_ncu(spec: str, names: list[str], out: Path, device: str, cache: str) -> dict:
    from live.profiler import NcuProfiler

    profiler = NcuProfiler(spec, device=device, cache_dir=cache, timeout_s=120)
    rows = {}
    if profiler.available and profiler.ncu_path:
        query = subprocess.run([profiler.ncu_path, "--query-metrics"], capture_output=True,
                               text=True, timeout=120)
        (out / "ncu_query_metrics.txt").write_text(query.stdout + query.stderr)
        rows["_metrics_used"] = profiler.metrics()
    for name in names:
        task = resolve_task(spec, name)
        result = profiler.profile(name, task.k0)
        rows[name] = asdict(result)
        if profiler.last_raw_csv:
            (out / f"ncu_{name}.csv").write_text(profiler.last_raw_csv)
        print(f"  ncu {name:<18} profiled={result.profiled} hw={result.hw_sig} "
              f"err={result.error}", flush=True)
    rows["_unavailable"] = profiler.unavailable_reason
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="builtin")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default="results/bench_eval", help="output folder")
    parser.add_argument("--cost-tasks", default="add,softmax,cumsum,matmul_fp16")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ncu-tasks", default="add,softmax,matmul_fp16")
    parser.add_argument("--max-seconds", type=float, default=420.0,
                        help="wall time the run may take: cost and ncu start only while there "
                        "is room for them")
    parser.add_argument("--ncu-cache", default="/tmp/kernelband-ncu-cache")
    parser.add_argument("--sections", default="gold,aa,cost,faults,ncu")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out)
    sections = set(args.sections.split(","))
    ev = Evaluator(EvaluatorConfig(args.tasks, device=args.device, timeout_s=300,
                                   compile_timeout_s=300))
    device = ev.device
    report.put("environment", environment(device))
    tasks = resolve_tasks(args.tasks)
    try:
        if "gold" in sections:
            report.put("gold", section_gold(ev, args.tasks, out))
        if "aa" in sections:
            report.put("aa", section_aa(ev, tasks))
        room = time.perf_counter() - T0 < args.max_seconds / 2
        if "cost" in sections and device == "cuda" and room:
            wanted = [t for t in tasks if t.name in args.cost_tasks.split(",")]
            report.put("cost", section_cost(ev, wanted, args.repeats, device))
        if "faults" in sections and device == "cuda":
            report.put("faults", section_faults(ev, args.tasks))
    finally:
        ev.close()
    if "ncu" in sections and time.perf_counter() - T0 < args.max_seconds * 0.8:
        report.put("ncu", section_ncu(args.tasks, args.ncu_tasks.split(","), out, device,
                                      args.ncu_cache))
    report.put("elapsed_s", time.perf_counter() - T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
