"""What a live TritonBench-G run did, per strategy and per operator (issue #14).

Reads a trace (``kernelband live --out DIR``) and prints, as Markdown:

- per strategy: how many proposals the mutate proposer could not apply (``not_applicable``),
  and of the evaluated ones how many were ok, incorrect, compile errors and other failures,
  with the median and range of the ok ones' speedup over their parent;
- the most frequent error of each failure status, so "what fails" has its reason.

    python benchmarks/tritonbench_live_summary.py DIR [--json out.json]

Runs on any CPU (it reads Parquet only).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbsim.trace.reader import load_trace  # noqa: E402

COLUMNS = ["task_id", "strategy", "status", "error", "parent_ms", "child_ms"]
STATUSES = ("ok", "not_applicable", "incorrect", "compile_error")


def summarize(path: Path) -> dict[str, Any]:
    steps = load_trace(path, steps_columns=COLUMNS).steps.to_pylist()
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    speedups: dict[str, list[float]] = collections.defaultdict(list)
    errors: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row in steps:
        strategy, status = row["strategy"] or "(k0)", row["status"]
        per[strategy][status if status in STATUSES else "other"] += 1
        if status == "ok" and row["parent_ms"] and row["child_ms"]:
            speedups[strategy].append(row["parent_ms"] / row["child_ms"])
        if status != "ok" and row["error"]:
            errors[status][_first_words(row["error"])] += 1
    tasks = sorted({row["task_id"] for row in steps})
    return {
        "steps": len(steps),
        "operators": len(tasks),
        "statuses": dict(collections.Counter(row["status"] for row in steps)),
        "per_strategy": {
            s: {**dict(c), "speedup_median": statistics.median(speedups[s])
                if speedups[s] else None,
                "speedup_range": [min(speedups[s]), max(speedups[s])] if speedups[s] else None}
            for s, c in sorted(per.items())},
        "top_errors": {status: counter.most_common(3) for status, counter in errors.items()},
    }


def _first_words(error: str, n: int = 14) -> str:
    """An error's gist to group by: its first words, each number as N."""
    return re.sub(r"\d+(\.\d+)?", "N", " ".join(error.split()[:n]))


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"{summary['steps']} steps on {summary['operators']} operators: "
             + ", ".join(f"{n} {s}" for s, n in sorted(summary["statuses"].items(),
                                                        key=lambda kv: -kv[1])),
             "",
             "| strategy | ok | not applicable | incorrect | compile error | other | "
             "median speedup of the ok ones over their parent (range) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for strategy, row in summary["per_strategy"].items():
        median, span = row["speedup_median"], row["speedup_range"]
        speed = "-" if median is None else f"{median:.2f} ({span[0]:.2f}-{span[1]:.2f})"
        lines.append(f"| {strategy} | {row.get('ok', 0)} | {row.get('not_applicable', 0)} | "
                     f"{row.get('incorrect', 0)} | {row.get('compile_error', 0)} | "
                     f"{row.get('other', 0)} | {speed} |")
    lines += ["", "Most frequent errors:", ""]
    for status, top in sorted(summary["top_errors"].items()):
        for gist, n in top:
            lines.append(f"- {status} ({n}): {gist}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    summary = summarize(args.path)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
