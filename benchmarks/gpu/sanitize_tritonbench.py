"""TritonBench-G operators under NVIDIA compute-sanitizer: is a passing plain script hollow?

For each operator it runs both parts, ``plain`` (the operator's own file, as its authors run
it) and ``perf`` (the ``--inputs`` smallest performance inputs as the adapter makes them,
through the script's ``call_op`` with the gold code), each without the sanitizer and under
``memcheck`` and ``initcheck`` (live/tasks/tritonbench/sanitize.py says what each shows).
``kernelband tasks check --explain-skips`` runs the same for the operators a load skips
although their plain script passes; this program runs it for any operators, keeping the logs.

    python benchmarks/gpu/sanitize_tritonbench.py DATA_DIR OP [OP ...] --out OUT_DIR \\
        [--inputs 2 | --indices 5,6] [--timeout 300] [--candidate KERNEL.py]

``--candidate`` runs a candidate's code (one operator) on the performance inputs instead of the
gold code: a kernel whose verdict differs between runs, say.

DATA_DIR is a TritonBench-G folder (TritonBench_G_v1/ and perf_G/); run from the repository
root on a host with a CUDA GPU and compute-sanitizer on PATH (or CUDA_HOME/bin). OUT_DIR gets
one log per (operator, part, tool) and ``sanitize.json`` (rewritten after every run): per run
the exit status, seconds, the sanitizer's error count and its first distinct errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from live.tasks.tritonbench.sanitize import PARTS, TOOLS, find_sanitizer, run_part  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="TritonBench-G folder")
    parser.add_argument("ops", nargs="+", help="operator names (file stems)")
    parser.add_argument("--out", type=Path, required=True, help="folder for logs and sanitize.json")
    parser.add_argument("--inputs", type=int, default=2,
                        help="performance inputs to run, smallest first [2]")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run [300]")
    parser.add_argument("--indices", default=None,
                        help="performance inputs to run by number, e.g. 5,6,8 (instead of the "
                        "--inputs smallest)")
    parser.add_argument("--candidate", type=Path, default=None,
                        help="a candidate's code (e.g. a kernel of a trace's kernels table) to "
                        "run on the performance inputs instead of the gold code (one operator; "
                        "the plain part is skipped)")
    args = parser.parse_args()
    sanitizer = find_sanitizer()
    if sanitizer is None:
        raise SystemExit("compute-sanitizer is not on PATH nor in CUDA_HOME/bin")
    if args.candidate is not None and len(args.ops) != 1:
        raise SystemExit("--candidate goes with exactly one operator")
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    parts = ("perf",) if args.candidate is not None else PARTS
    for op in args.ops:
        for part in parts:
            for tool in (None, *TOOLS):
                run = run_part(args.data, op, part, tool, timeout_s=args.timeout,
                               inputs=args.inputs, sanitizer=sanitizer,
                               log=args.out / f"{op}-{part}-{tool or 'none'}.log",
                               candidate=args.candidate,
                               indices=[int(i) for i in args.indices.split(",")]
                               if args.indices else None)
                results.append(run.to_dict())
                print(f"{op} {part:5} {run.tool:9} status {run.status!s:7} "
                      f"errors {run.errors!s:5} {run.seconds:6.1f} s "
                      f"{'; '.join(run.first_errors[:2])[:160]}", flush=True)
                # after every run: a run stopped from outside keeps what was found
                (args.out / "sanitize.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
