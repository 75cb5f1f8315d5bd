"""Roofline signature vs Nsight Compute on the shipped traces (CPU; issue 15).

    PYTHONPATH=. python benchmarks/roofline_vs_ncu.py traces/explore-h200 traces/policy-v2-h200 \
        --out benchmarks/results/roofline_vs_ncu

Prints a Markdown table per trace and writes ``results.json`` and ``table.md`` under --out.
The GPU's peaks come from the trace's manifest (hardware.gpu_name, live.hardware.GPU_PEAKS).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kbsim.trace.reader import load_trace
from live.hardware import lookup_gpu
from live.profiler.agreement import DIMS, compare_signatures
from live.tasks.registry import resolve_tasks


def markdown(name: str, result: dict) -> str:
    lines = [f"**{name}**: {result['kernels']} kernels profiled by ncu "
             f"({result['gpu']} peaks, theta_sat {result['theta_sat']:g}); v2's mask the same on "
             f"**{100 * result['same_mask']:.1f} %** of them.", "",
             "| dim | Spearman rho | mean abs diff (points) | saturated ncu % | "
             "saturated roofline % | same saturation % |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for dim in DIMS:
        d = result["dims"][dim]
        lines.append(f"| {dim} | {d['spearman']:.3f} | {d['mean_abs_diff']:.1f} | "
                     f"{100 * d['saturated_ncu']:.1f} | {100 * d['saturated_roofline']:.1f} | "
                     f"{100 * d['same_saturation']:.1f} |")
    lines += ["", "| task | kernels | same mask % | DRAM ncu / roofline (median) | "
              "L2 ncu / roofline (median) |", "| --- | ---: | ---: | ---: | ---: |"]
    for task, t in result["per_task"].items():
        lines.append(f"| {task} | {t['kernels']} | {100 * t['same_mask']:.0f} | "
                     f"{t['dram_ncu_median']:.0f} / {t['dram_roofline_median']:.0f} | "
                     f"{t['l2_ncu_median']:.0f} / {t['l2_roofline_median']:.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--out", default=None)
    parser.add_argument("--theta-sat", type=float, default=75.0)
    args = parser.parse_args()
    tasks = {t.name: t for t in resolve_tasks("builtin")}
    results, text = {}, []
    for path in args.traces:
        data = load_trace(path)
        gpu = data.manifests[0]["hardware"]["gpu_name"]
        peaks = lookup_gpu(gpu)
        if peaks is None:
            raise SystemExit(f"{path}: no peaks for GPU {gpu!r} in live.hardware.GPU_PEAKS")
        result = compare_signatures(data.kernels_df(), tasks, peaks, args.theta_sat)
        results[Path(path).name] = result
        text.append(markdown(Path(path).name, result))
    print("\n".join(text))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(results, indent=2))
        (out / "table.md").write_text("\n".join(text))


if __name__ == "__main__":
    main()
