"""How long an evaluator worker takes to start: forked from the fork server against started as
its own interpreter (``KERNELBAND_WORKER_START=exec``), side by side.

Starts `--starts` workers one after another in each mode, alternating the modes, and times each
from the start call until the worker says ``ready`` (torch and triton imported, the device
queried), with the CPU time the worker itself used by then. The first forked worker of the
process is timed apart: it waits for the fork server to start (one per process, importing torch
once). With ``--evaluate``, each worker then judges the ``vadd`` candidate of the test
fixtures once (a correctness and timing run on the device), to show a forked worker serves as a
started one does.

    python benchmarks/worker_start.py --device cuda --starts 10 --json OUT/worker_start.json
    python benchmarks/worker_start.py --device cpu --starts 5

Prints one line per mode: median and range of seconds to ready and of the worker's CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _worker_cpu_s(pid: int) -> float:
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def _one(mode: str, device: str, evaluate: bool) -> dict:
    from live.evaluator.forkserver import ForkedProcess
    from live.evaluator.sandbox import WorkerProcess
    from live.evaluator.settings import WorkerSettings

    os.environ["KERNELBAND_WORKER_START"] = mode
    start = time.perf_counter()
    worker = WorkerProcess(WorkerSettings(device=device))
    worker.wait_ready(300)
    ready_s = time.perf_counter() - start
    row = {"mode": mode, "ready_s": ready_s, "worker_cpu_s": _worker_cpu_s(worker.proc.pid),
           "forked": isinstance(worker.proc, ForkedProcess)}
    if evaluate:
        row["status"] = _evaluate(worker)
    worker.shutdown()
    return row


def _evaluate(worker) -> str:
    from live.evaluator.messages import EvaluateRequest
    from tests.live.fixtures.candidates.tiny_tasks import SPEC

    source = (ROOT / "tests/live/fixtures/candidates/vadd_good.py").read_text()
    worker.send(EvaluateRequest(task_spec=SPEC, task_name="vadd", code=source, seed=0))
    while True:
        got = worker.receive(300)
        if got.kind != "message":
            return f"{got.kind}: {got.detail}"
        if got.message[0] == "phase" and got.message[1] in ("shared", "timing"):
            worker.send({"op": "go"})
        elif got.message[0] == "result":
            reply = got.message[1]
            return getattr(reply, "status", str(reply))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--starts", type=int, default=5, help="workers per mode")
    parser.add_argument("--evaluate", action="store_true",
                        help="each worker judges one candidate before it exits")
    parser.add_argument("--json", type=Path, default=None, help="write every start here")
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from live.evaluator import forkserver

    os.environ["KERNELBAND_WORKER_START"] = "fork"
    if not forkserver.enabled():
        raise SystemExit("worker_start: this platform cannot fork workers from a server")
    first = _one("fork", args.device, evaluate=False)  # this process's first: starts the server
    rows = []
    for _ in range(args.starts):
        for mode in ("exec", "fork"):
            rows.append(_one(mode, args.device, args.evaluate))
    summary = {"device": args.device, "first_fork_s": first["ready_s"], "rows": rows}
    print(f"first forked worker of the process (starts the fork server, which imports torch "
          f"and triton): ready in {first['ready_s']:.2f} s")
    for mode in ("exec", "fork"):
        mine = [row for row in rows if row["mode"] == mode]
        ready = [row["ready_s"] for row in mine]
        cpu = [row["worker_cpu_s"] for row in mine]
        statuses = sorted({row.get("status", "-") for row in mine})
        summary[mode] = {"ready_s_median": statistics.median(ready),
                         "cpu_s_median": statistics.median(cpu)}
        print(f"{mode:5s} {len(mine)} workers: ready in median {statistics.median(ready):.3f} s "
              f"({min(ready):.3f}-{max(ready):.3f}), worker CPU median "
              f"{statistics.median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f}); "
              f"evaluations: {', '.join(statuses)}")
    print(f"exec / fork, median seconds to ready: "
          f"{summary['exec']['ready_s_median'] / summary['fork']['ready_s_median']:.1f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
