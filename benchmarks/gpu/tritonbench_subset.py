"""Gold-vs-gold check of some TritonBench-G operators, cold, on a GPU: what `kernelband tasks
check` does for the whole benchmark, for the named operators only, with an empty check cache
(a temporary one), so one change to the checks can be tried on the operators it is for.

    python benchmarks/gpu/tritonbench_subset.py PATH op1 op2 ... --json out/subset.json

Prints one line per operator (passed or the reason, the plain-script outcome, the check's
seconds) and the load's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("ops", nargs="+")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["KERNELBAND_CACHE_DIR"] = cache
        from live.tasks.sources import LoadOptions
        from live.tasks.tritonbench import load_checked

        started = time.perf_counter()
        loaded = load_checked(Path(args.path), LoadOptions(
            device="cuda", use_cache=False, progress=True, workers=args.workers,
            timeout_s=args.timeout), args.ops)
        wall = time.perf_counter() - started
    passed = sorted(t.name.removeprefix("tritonbench/") for t in loaded.tasks)
    rows = []
    for op in args.ops:
        skip = next((s for s in loaded.skipped if s.op == op), None)
        rows.append({"op": op, "passed": op in passed,
                     "reason": None if skip is None else skip.reason,
                     "plain_script": None if skip is None else skip.plain_script})
        line = "passed" if skip is None else f"SKIPPED: {skip.reason[:300]} | plain script: " \
            f"{(skip.plain_script or '-')[:120]}"
        print(f"{op:32s} {line}")
    print(f"{len(passed)}/{len(args.ops)} passed, {wall:.1f} s; stats: {loaded.stats}")
    if args.json:
        Path(args.json).write_text(json.dumps({"wall_s": wall, "ops": rows,
                                               "stats": loaded.stats}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
