"""Where one TritonBench-G operator's gold check spends its time, on a GPU, in one process: the
gold module's import, its performance inputs made on the CPU, then per input the copy to the
GPU and two checked calls (the first compiles and autotunes), and the operator's test code.
Autotuning is quick, as in a check worker (D71). A stack dump every `--dump` seconds shows
where a slow step is.

    python benchmarks/gpu/tritonbench_op_phases.py PATH OP --json out/phases.json
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("op")
    parser.add_argument("--dump", type=float, default=60.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    faulthandler.dump_traceback_later(args.dump, repeat=True)
    import torch

    from live.evaluator.autotune import install_quick_autotune
    from live.tasks.tritonbench import operator as tb

    install_quick_autotune()
    path = str(Path(args.path).resolve())
    phases: dict[str, object] = {}

    def step(name: str, fn):  # noqa: ANN001, ANN202
        started = time.perf_counter()
        value = fn()
        torch.cuda.synchronize()
        phases[name] = round(time.perf_counter() - started, 3)
        print(f"{name:28s} {phases[name]:8.3f} s", flush=True)
        return value

    module = step("import gold", lambda: tb._gold_module(path, args.op))
    entries, _ = step("inputs on the CPU", lambda: tb._cpu_inputs(path, args.op, 0))
    perf = tb._perf_instance(path, args.op, module, "cuda")
    for index, entry in enumerate(entries):
        moved = step(f"shape {index} to GPU", lambda e=entry: tb.move_entry(e, "cuda", perf))
        for n in (1, 2):
            def call(x=moved):  # noqa: ANN001, ANN202
                with tb.checked_state(0):
                    return perf.call_op(x)
            step(f"shape {index} call {n}", call)
        del moved
    source = tb.operator_source(path, args.op)
    step("test code", lambda: tb.result_gold_of(source.code, source.test_code, "cuda",
                                                f"phases_{args.op}"))
    faulthandler.cancel_dump_traceback_later()
    if args.json:
        Path(args.json).write_text(json.dumps(phases, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
