"""How soon a pool of check workers ends, by the order it takes TritonBench-G's checks in.

Replays measured check times (the `wall_s` of a cold load's records, e.g.
`benchmarks/results/tritonbench_g_live_h200/cold_load_records.json`) through
a list-scheduling pool of WORKERS workers (each takes the next check as soon as it is free)
for several orders: the source's, the project's cost hint (D88), autotuned configurations
alone (the hint before D88) and the measured times themselves (the best this pool can do).
A check's time is taken as fixed, whatever runs beside it: a model, not a measurement.

    python benchmarks/tritonbench_check_order.py TRITONBENCH_DIR RECORDS.json [...]
"""

from __future__ import annotations

import argparse
import heapq
import json
from collections.abc import Callable
from pathlib import Path

from live.tasks.tritonbench import check_cost_hint

WORKERS = 16


def makespan(order: list[str], seconds: dict[str, float], workers: int = WORKERS) -> float:
    free_at = [0.0] * workers
    for name in order:
        heapq.heappush(free_at, heapq.heappop(free_at) + seconds[name])
    return max(free_at)


def orders(code: dict[str, str], seconds: dict[str, float]) -> dict[str, list[str]]:
    """The orders compared, by label (biggest key first; ties in name order)."""
    def configs_only(name: str) -> float:
        text = code[name]
        return 2.0 + text.count("Config(") if "autotune" in text else 1.0

    names = sorted(seconds)
    keys: dict[str, Callable[[str], float]] = {
        "cost hint (D88)": lambda name: check_cost_hint(code[name]),
        "configurations only (before D88)": configs_only,
        "measured times (best order)": lambda name: seconds[name],
    }
    return {"source order": names,
            **{label: sorted(names, key=lambda name, k=key: -k(name))
               for label, key in keys.items()}}


def main(folder: str, *record_files: str) -> None:
    operators = Path(folder).expanduser() / "TritonBench_G_v1"
    for path in record_files:
        records = json.loads(Path(path).read_text())
        seconds = {r["name"]: float(r["wall_s"] or 0.0) for r in records}
        code = {name: (operators / f"{name}.py").read_text() for name in seconds}
        print(f"{path}: {len(seconds)} checks, {sum(seconds.values()):.0f} worker-s, "
              f"{sum(seconds.values()) / WORKERS:.0f} s per worker")
        for label, order in orders(code, seconds).items():
            print(f"  {label:<34} {makespan(order, seconds):6.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the TritonBench-G checkout the records were made on")
    parser.add_argument("records", nargs="+", help="cold-load records JSON (one or more)")
    cli = parser.parse_args()
    main(cli.folder, *cli.records)
