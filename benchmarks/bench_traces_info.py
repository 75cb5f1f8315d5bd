"""Trace-store benchmark: `kernelband traces info` on a 1,000,000-step synthetic dataset.

Target (issue 2): under 5 s on a 2-core machine. Times the real CLI in a subprocess (interpreter
start-up, imports and all), several repeats, and reports the median::

    python benchmarks/bench_traces_info.py                  # 1M steps, 5 repeats
    python benchmarks/bench_traces_info.py --write-docs     # also update docs/benchmarks.md

The dataset is made by kbsim.trace.synthetic_trace (20 tasks) in a temporary directory unless
--dir names one (reused when it already holds a dataset). Also timed, for context: writing the
dataset and a full `kernelband traces validate`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbsim.trace.synthetic_trace import write_synthetic_trace  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
START = "<!-- bench_traces_info:start -->"
END = "<!-- bench_traces_info:end -->"


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("kernelband")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from kernelband.cli import main; main()"]


def time_command(args: list[str], repeats: int) -> list[float]:
    """Wall-clock seconds of each run of the CLI with `args` (fails loudly on a non-zero exit)."""
    seconds = []
    for _ in range(repeats):
        start_s = time.perf_counter()
        subprocess.run([*_cli(), *args], check=True, capture_output=True)
        seconds.append(time.perf_counter() - start_s)
    return seconds


def machine() -> str:
    cpus = os.cpu_count()
    return f"{platform.machine()} Linux, {cpus} CPU cores, Python {platform.python_version()}"


def write_docs(section: str) -> None:
    """Replace this benchmark's section of docs/benchmarks.md (create the file if absent)."""
    text = DOCS.read_text() if DOCS.exists() else "# Benchmarks\n"
    block = f"{START}\n{section.rstrip()}\n{END}"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        after = rest.split(END, 1)[1]
        text = before + block + after
    else:
        text = text.rstrip() + "\n\n## Trace store\n\n" + block + "\n"
    DOCS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="dataset directory (kept)")
    parser.add_argument("--write-docs", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()

    tmp = None
    dataset = args.dir
    if dataset is None:
        tmp = tempfile.mkdtemp(prefix="bench_traces_")
        dataset = Path(tmp) / "synthetic"
    try:
        write_s = float("nan")
        if not (dataset / "manifest.json").exists():
            start_s = time.perf_counter()
            write_synthetic_trace(dataset, args.steps, args.tasks, seed=0)
            write_s = time.perf_counter() - start_s
        size_mb = sum(f.stat().st_size for f in dataset.rglob("*.parquet")) / 1e6
        info_s = time_command(["traces", "info", str(dataset)], args.repeats)
        validate_s = time_command(["traces", "validate", str(dataset)], 1)[0]
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    median_s = statistics.median(info_s)
    verdict = "meets" if median_s < 5.0 else "MISSES"
    load_1min = os.getloadavg()[0]
    row = " | ".join(
        [
            f"| {datetime.now(timezone.utc):%Y-%m-%d %H:%M}",
            f"{machine()} (load average {load_1min:.1f} when done)",
            f"`python benchmarks/bench_traces_info.py --steps {args.steps}`",
            f"**{median_s:.2f} s**",
            f"{min(info_s):.2f} / {max(info_s):.2f} s |",
        ]
    )
    section = f"""\
`kernelband traces info` on a synthetic dataset of {args.steps:,} steps, {args.tasks} tasks
({size_mb:.0f} MB of Parquet), the real CLI in a subprocess, {args.repeats} runs.

| date (UTC) | machine | command | median | min / max |
| --- | --- | --- | --- | --- |
{row}

Target: under 5 s on a 2-core machine ({verdict} it). For context, on the same run: writing the
dataset took {write_s:.1f} s and a full `kernelband traces validate` (every column and row
check) {validate_s:.1f} s.
"""
    print(section)
    if args.write_docs:
        write_docs(section)
        print(f"updated {DOCS}")


if __name__ == "__main__":
    main()
