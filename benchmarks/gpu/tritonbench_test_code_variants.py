"""Why an operator's test code faults in a check worker and not as a plain script: its test
code run, each case in a fresh process, under variants of what a check worker does before and
around it. Cases: `fresh` (nothing before), `dirty` (device memory freed after holding the
integer maximum, as leftovers of other checks hold), `dirty+scrub` (then D80's zeroing), each
with the check's state (seeded RNG, filled uninitialised memory, D69) or plain; `xN` runs the
test code N times in one process, as gold and candidate runs follow each other.

    python benchmarks/gpu/tritonbench_test_code_variants.py PATH op1 op2 ... --json out.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = ["plain fresh", "checked fresh", "checked fresh x4", "checked dirty",
         "checked dirty+scrub", "checked dirty+scrub x4", "plain dirty+scrub x4"]


def _child(path: str, op: str, case: str) -> None:
    sys.path.insert(0, str(ROOT))
    import torch

    from live.tasks.tritonbench import operator as tb

    source = tb.operator_source(str(Path(path).resolve()), op)
    torch.zeros(1, device="cuda")
    if "dirty" in case:
        small = [torch.full((2**18,), 2**31 - 1, dtype=torch.int32, device="cuda")
                 for _ in range(32)]
        large = torch.full((2**25,), 2**31 - 1, dtype=torch.int32, device="cuda")
        del small, large
    runs = int(case.split(" x")[1]) if " x" in case else 1
    for n in range(runs):
        if "scrub" in case:
            tb.scrub_device_memory()
        code = source.code + "\n\n" + tb.retarget(source.test_code, "cuda") + "\n"
        if case.startswith("checked"):
            with tb.checked_state(0):
                tb.import_source(code, f"variant_{op}_{n}")
        else:
            tb.import_source(code, f"variant_{op}_{n}")
        torch.cuda.synchronize()


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(*sys.argv[2:5])
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("ops", nargs="+")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    results: dict[str, dict[str, str]] = {}
    for op in args.ops:
        results[op] = {}
        for case in CASES:
            proc = subprocess.run([sys.executable, __file__, "--child", args.path, op, case],
                                  capture_output=True, text=True, timeout=300)
            tail = " ".join(proc.stderr.split())[-200:]
            results[op][case] = "ok" if proc.returncode == 0 else f"rc {proc.returncode}: {tail}"
            print(f"{op:26s} {case:24s} {results[op][case][:160]}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
