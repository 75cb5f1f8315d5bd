"""Render the "Kernel lab" section of docs/benchmarks.md from a bench_eval.py run.

    python benchmarks/bench_eval_md.py RESULTS_DIR [--ref ref_timings.json] [--command TEXT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _f(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def render(results: dict, ref: dict | None, command: str) -> str:
    env = results["environment"]
    gpu = env.get("gpu", "cpu")
    lines = [
        f"Run {results['started']} on **{gpu}** ({env.get('sm_count')} SMs, driver "
        f"{env.get('driver', '?')}), torch {env['torch']}, triton {env['triton']}, "
        f"Python {env['python']}.", "", f"Command: `{command}`", ""]
    if ref is not None:
        tasks = ref["tasks"]
        passed = sum(v["passed"] for v in tasks.values())
        lines += [f"**`kernelband tasks check --device cuda`: {passed}/{len(tasks)} built-in "
                  "tasks pass** (k0 vs PyTorch reference, Σ over perf shapes of per-shape "
                  "medians).", "",
                  "| task | status | reference ms | k0 ms | k0 speedup | timing CV % |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for name, v in tasks.items():
            cv = None if v["timing_cv"] is None else 100 * v["timing_cv"]
            lines.append(f"| {name} | {v['status']} | {_f(v['ref_ms'], '.4f')} | "
                         f"{_f(v['k0_ms'], '.4f')} | {_f(v['speedup'])} | {_f(cv, '.2f')} |")
        lines.append("")
    aa = results.get("aa")
    if aa:
        rows = aa["tasks"]
        ok = [v for v in rows.values() if v["status"] == "ok"]
        worst = max((abs(v["speedup"] - 1) for v in ok), default=None)
        lines += [
            f"**A/A** (k0 timed as both baseline and candidate, interleaved): speedup within "
            f"±2 % on **{aa['within_2pct']}/{aa['total']}** tasks (worst |speedup − 1| = "
            f"{_f(None if worst is None else 100 * worst, '.2f')} %); median timing CV "
            f"**{_f(100 * aa['median_timing_cv'], '.2f')} %** (robust per-repetition CV, "
            f"1.4826·MAD/median, duration-weighted over shapes).", "",
            f"**Worker overhead** per candidate with a warm worker (latency − compile − checks − "
            f"timing): median **{_f(1e3 * aa['median_worker_overhead_s'], '.1f')} ms**, max "
            f"{_f(1e3 * aa['max_worker_overhead_s'], '.1f')} ms (target ≤ 50 ms).", ""]
        regs = {k: (v.get("registers"), v.get("num_warps"), v.get("num_stages"),
                    v.get("shared_bytes")) for k, v in rows.items() if v.get("registers")}
        if regs:
            lines += ["Compile metadata read from Triton's compiled kernels (registers/thread, "
                      "warps, stages, shared bytes): " + ", ".join(
                          f"{k} {r}/{w}/{s}/{b}" for k, (r, w, s, b) in regs.items()) + ".", ""]
    cost = results.get("cost")
    if cost:
        lines += [
            f"**Cost vs TritonBench's protocol**, side by side in one process, "
            f"{cost['repeats']} repeats: our whole timing phase (k0 and reference interleaved, "
            f"all perf shapes) against `do_bench(warmup=100, rep=1000)` of k0 plus one of the "
            f"reference per shape: **{_f(cost['total_ours_s'], '.2f')} s vs "
            f"{_f(cost['total_tritonbench_s'], '.1f')} s of GPU time, {_f(cost['ratio'], '.0f')}× "
            f"less**. Spread of repeated measurements (CV of the per-shape medians over repeats, "
            f"median over shapes): ours **{_f(100 * cost['median_ours_cv'], '.2f')} %**, "
            f"do_bench **{_f(100 * cost['median_dobench_cv'], '.2f')} %**.", "",
            "| task | shapes | ours s | do_bench s | ratio | ours CV % (per shape) | "
            "do_bench CV % (per shape) |", "| --- | ---: | ---: | ---: | ---: | --- | --- |"]
        for name, v in cost["tasks"].items():
            if "shapes" not in v:
                continue
            ours_cv = " / ".join(_f(100 * s["ours_cv"], ".2f") for s in v["shapes"])
            db_cv = " / ".join(_f(100 * s["dobench_cv"], ".2f") for s in v["shapes"])
            lines.append(f"| {name} | {len(v['shapes'])} | {_f(v['ours_s'])} | "
                         f"{_f(v['tritonbench_s'], '.2f')} | {_f(v['ratio'], '.0f')} | "
                         f"{ours_cv} | {db_cv} |")
        lines.append("")
    faults = results.get("faults")
    if faults:
        lines += [f"**Fault on the GPU**: an out-of-bounds kernel gave `{faults['oob']['status']}` "
                  f"(\"{faults['oob']['error'][:120]}\"), worker recycled: "
                  f"{faults['oob']['recycled']}; k0 right after on the same evaluator: "
                  f"`{faults['after']['status']}`.", ""]
    ncu = results.get("ncu")
    if ncu:
        lines += ["**Nsight Compute** (k0, middle perf shape, 3 launches, duration-weighted):", "",
                  "| task | SM % | DRAM % | L2 % | L2 hit % | warp eff. % | occupancy % | "
                  "regs | bank conflicts | coalescing % | tensor % | ncu s |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                  "| ---: |"]
        for name, v in ncu.items():
            if name.startswith("_") or not v.get("profiled"):
                continue
            h, p = v["hw_sig"], v["profile9"]
            lines.append(f"| {name} | {h[0]:.1f} | {h[1]:.1f} | {h[2]:.1f} | {p[0]:.1f} | "
                         f"{p[3]:.1f} | {p[4]:.1f} | {p[5]:.0f} | {p[6]:.0f} | {p[7]:.1f} | "
                         f"{p[8]:.1f} | {_f(v['latency_s'], '.1f')} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results_dir")
    parser.add_argument("--ref", default=None)
    parser.add_argument("--command", default="python benchmarks/bench_eval.py")
    args = parser.parse_args()
    results = json.loads((Path(args.results_dir) / "results.json").read_text())
    ref = json.loads(Path(args.ref).read_text()) if args.ref else None
    print(render(results, ref, args.command))


if __name__ == "__main__":
    main()
