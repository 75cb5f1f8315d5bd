"""TritonBench-G operators under NVIDIA compute-sanitizer: is a passing plain script hollow?

For each operator it runs, each under ``compute-sanitizer --tool memcheck`` and ``--tool
initcheck``:

- ``plain``: the operator's own file as its authors run it (``python OP.py`` in the operator
  folder: the kernels and the test code that builds ``result_gold``);
- ``perf``: the operator's performance inputs as the adapter makes them (seeded, on the CPU,
  then the script's ``to_cuda``), the ``--inputs`` smallest of them, each through the script's
  ``call_op`` with the gold code (what the adapter checks and times).

memcheck reports out-of-bounds and misaligned accesses; initcheck reports reads of device
memory nothing wrote (e.g. index tables made with ``torch.empty`` and never filled), which a
fresh allocation hides behind zeros. A run with errors shows why a plain pass is hollow.

    python benchmarks/gpu/sanitize_tritonbench.py DATA_DIR OP [OP ...] --out OUT_DIR \\
        [--inputs 2] [--timeout 300]

DATA_DIR is a TritonBench-G folder (TritonBench_G_v1/ and perf_G/); run from the repository
root on a host with a CUDA GPU and compute-sanitizer on PATH (or CUDA_HOME/bin). OUT_DIR gets
one log per (operator, part, tool) and ``sanitize.json``: per run the exit status, the
sanitizer's error count and its first distinct error lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PERF_SNIPPET = """
import sys, torch
from live.tasks.tritonbench.operator import (PERF_SEED, _cpu_inputs, _smallest, make_inputs,
                                            reference)
path, op, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
entries, is_sequence = _cpu_inputs(path, op, PERF_SEED)
for index in _smallest(entries)[:count]:
    inputs = make_inputs(path, op, {"index": index}, PERF_SEED, "cuda")
    try:
        reference(path, op, is_sequence, *inputs)
        torch.cuda.synchronize()
        print(f"perf input {index}: ran", flush=True)
    except Exception as exc:
        print(f"perf input {index}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
              flush=True)
        break
"""

ERROR_LINE = re.compile(r"^=+ +((Invalid|Uninitialized|Program hit|Misaligned|Out of range)"
                        r".*)$", re.MULTILINE)
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


def sanitizer() -> str:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    candidate = Path(home) / "bin" / "compute-sanitizer"
    if candidate.is_file():
        return str(candidate)
    raise SystemExit("compute-sanitizer is not on PATH nor in CUDA_HOME/bin")


def run_one(command: list[str], cwd: Path, log: Path, timeout: float,
            env: dict[str, str]) -> dict[str, object]:
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
        text, status = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text = ((exc.stdout or b"").decode(errors="replace")
                + (exc.stderr or b"").decode(errors="replace"))
        status = "timeout"
    log.write_text(text)
    errors = [m.group(1).strip() for m in ERROR_LINE.finditer(text)]
    summary = SUMMARY.search(text)
    return {"status": status, "seconds": round(time.monotonic() - start, 1),
            "errors": int(summary.group(1)) if summary else None,
            "first_errors": list(dict.fromkeys(errors))[:5],
            "tail": text.strip().splitlines()[-3:] if text.strip() else []}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="TritonBench-G folder")
    parser.add_argument("ops", nargs="+", help="operator names (file stems)")
    parser.add_argument("--out", type=Path, required=True, help="folder for logs and sanitize.json")
    parser.add_argument("--inputs", type=int, default=2,
                        help="performance inputs to run, smallest first [2]")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run [300]")
    args = parser.parse_args()
    tool_path = sanitizer()
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.data.resolve()
    ops_dir = next((d for d in (data / "TritonBench_G_v1", data) if d.is_dir()
                    and any(d.glob("*.py"))), data)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    results = []
    for op in args.ops:
        script = ops_dir / f"{op}.py"
        if not script.is_file():
            raise SystemExit(f"{script}: no such operator file")
        parts = {
            "plain": ([sys.executable, str(script)], ops_dir),
            "perf": ([sys.executable, "-c", PERF_SNIPPET, str(data), op, str(args.inputs)], ROOT),
        }
        for part, (command, cwd) in parts.items():
            for tool in ("none", "memcheck", "initcheck"):
                full = command if tool == "none" else [
                    tool_path, "--tool", tool, "--print-limit", "20", "--target-processes",
                    "all", *command]
                log = args.out / f"{op}-{part}-{tool}.log"
                record = {"op": op, "part": part, "tool": tool,
                          **run_one(full, cwd, log, args.timeout, env)}
                results.append(record)
                print(f"{op} {part:5} {tool:9} status {record['status']!s:7} "
                      f"errors {record['errors']!s:5} {record['seconds']:6.1f} s "
                      f"{'; '.join(record['first_errors'][:2])[:160]}", flush=True)
                # after every run: a run stopped from outside keeps what was found
                (args.out / "sanitize.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
