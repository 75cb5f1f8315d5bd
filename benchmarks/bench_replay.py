"""Replay engine speed: full KernelBand v2 episodes, and the paper's ablation grid.

1. v2 episodes: synthetic env (pool growth, re-clustering every 10 steps), T = 200, on one and on
   two numba threads; microseconds per step amortised over the whole `run_sweep` call (RNG
   derivation and the summary included), and the two-thread speed-up.
   Targets: <= 2 us/step on one core; >= 1.8x faster on 2 cores than on 1.
2. Ablation grid: 8 policies (kbsim.replay.presets.BENCH_POLICIES) x 183 tasks x T = 40 x 1,000
   seeds on the fitted env, fitted on a generated 183-task trace; summary only (no per-step
   Parquet). Target: under 60 s on a 2-core machine.

Each timing is the best of --repeats runs after a warm-up run (numba compilation excluded; a
first run compiles the engine per policy family and environment, 10-60 s, then it is cached).

    python benchmarks/bench_replay.py                      # both, print a Markdown table
    python benchmarks/bench_replay.py --seeds 100 --write-docs

A/B against another tree (a `git archive` of main, say): run each with its own tree on the path,
``PYTHONPATH=<tree> python <tree>/benchmarks/bench_replay.py`` (the venv's editable install
points at the checkout it was installed from, and would otherwise measure that one for both),
alternate the trees, and compare medians and CPU seconds; a fresh ``NUMBA_CACHE_DIR`` per tree
keeps their compiled code apart.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from datetime import datetime, timezone
from pathlib import Path

import numba

from kbsim.envs.fitted import build_fitted
from kbsim.envs.synthetic import build_synthetic
from kbsim.replay.presets import BENCH_POLICIES
from kbsim.replay.sweep import run_sweep
from kbsim.trace.synthetic_trace import synthetic_tables

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = "<!-- bench_replay:start -->", "<!-- bench_replay:end -->"


def _best(fn, repeats: int, warmup=None) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of the process in that run) over `repeats` runs.

    CPU seconds (all threads) matter on a shared machine: wall time there depends on the load.
    """
    (warmup or fn)()  # warm-up (and compilation on a cold cache)
    runs = []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        runs.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(runs)


def bench_v2(episodes_per_task: int, repeats: int) -> dict:
    env = build_synthetic("default,tasks=10")
    steps = 200
    n_steps = 10 * episodes_per_task * steps
    out = {"episodes": 10 * episodes_per_task, "steps": steps}
    for threads in (1, 2):
        seconds, cpu = _best(
            lambda t=threads: run_sweep(["kernelband-v2"], env, episodes_per_task, steps,
                                        keep_steps=False, threads=t),
            repeats,
        )
        out[f"us_per_step_{threads}"] = seconds / n_steps * 1e6
        out[f"cpu_us_per_step_{threads}"] = cpu / n_steps * 1e6
    out["speedup_2_vs_1"] = out["us_per_step_1"] / out["us_per_step_2"]
    return out


def bench_grid(seeds: int, repeats: int, n_tasks: int = 183) -> dict:
    t0 = time.perf_counter()
    steps_table, kernels = synthetic_tables(n_steps=n_tasks * 200, n_tasks=n_tasks, seed=0)
    env = build_fitted(steps_table, kernels)
    build_s = time.perf_counter() - t0
    seconds, cpu = _best(
        lambda: run_sweep(list(BENCH_POLICIES), env, seeds, 40, keep_steps=False, threads=2),
        repeats,
        warmup=lambda: run_sweep(list(BENCH_POLICIES), env, 2, 40, keep_steps=False, threads=2),
    )
    episodes = len(BENCH_POLICIES) * n_tasks * seeds
    return {
        "policies": len(BENCH_POLICIES),
        "tasks": n_tasks,
        "seeds": seeds,
        "steps": 40,
        "episodes": episodes,
        "fit_s": build_s,
        "sweep_s": seconds,
        "cpu_s": cpu,
        "us_per_step": seconds / (episodes * 40) * 1e6,
    }


def machine() -> str:
    cores = len(os.sched_getaffinity(0))
    load = os.getloadavg()[0]
    return (f"{platform.machine()} {platform.system()}, {cores} CPU cores usable, "
            f"Python {platform.python_version()}, numba {numba.__version__} "
            f"(load average {load:.1f})")


def markdown(v2: dict | None, grid: dict | None, command: str, where: str) -> str:
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    lines = [f"Run {date} UTC on {where}. Command: `{command}`.", ""]
    if v2:
        lines += [
            f"**KernelBand v2 episodes** (synthetic env, T = {v2['steps']}, "
            f"{v2['episodes']} episodes, pool growth, re-clustering every 10 steps):",
            "",
            "| threads | wall us per step | CPU us per step (all threads) | target |",
            "| --- | ---: | ---: | --- |",
            f"| 1 | {v2['us_per_step_1']:.2f} | {v2['cpu_us_per_step_1']:.2f} | <= 2 us |",
            f"| 2 | {v2['us_per_step_2']:.2f} | {v2['cpu_us_per_step_2']:.2f} | |",
            f"| speed-up 2 vs 1 (wall) | {v2['speedup_2_vs_1']:.2f}x | | >= 1.8x |",
            "",
        ]
    if grid:
        lines += [
            f"**Ablation grid** (fitted env, {grid['policies']} policies x {grid['tasks']} "
            f"tasks x T = {grid['steps']} x {grid['seeds']} seeds = {grid['episodes']:,} "
            "episodes, 2 threads, summary only):",
            "",
            "| fit env | sweep (wall) | CPU (both threads) | target |",
            "| ---: | ---: | ---: | --- |",
            f"| {grid['fit_s']:.1f} s | **{grid['sweep_s']:.1f} s** | {grid['cpu_s']:.1f} s | "
            "sweep < 60 s on 2 cores |",
            "",
        ]
    return "\n".join(lines)


def write_docs(section: str) -> None:
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    block = f"{START}\n{section}\n{END}"
    if START in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text,
                      flags=re.S)
    else:
        text = text.rstrip() + "\n\n## Replay engine\n\n" + block + "\n"
    DOCS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", choices=["v2", "grid", "both"], default="both")
    parser.add_argument("--v2-episodes-per-task", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=1000, help="grid seeds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--where", default=None, help="machine description for the docs")
    parser.add_argument("--json", type=Path, default=None, help="also write raw figures here")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    v2 = bench_v2(args.v2_episodes_per_task, args.repeats) if args.which != "grid" else None
    grid = bench_grid(args.seeds, args.repeats) if args.which != "v2" else None
    where = args.where or machine()
    command = "python benchmarks/bench_replay.py " + " ".join(
        a for a in os.sys.argv[1:] if not a.startswith("--where") and a != args.where
    )
    section = markdown(v2, grid, command.strip(), where)
    print(section)
    if args.json:
        args.json.write_text(json.dumps({"v2": v2, "grid": grid, "machine": where}, indent=2))
    if args.write_docs:
        write_docs(section)


if __name__ == "__main__":
    main()
