"""GPU-only faults: hostile candidates through the real evaluator on a CUDA device (issue 9).

Runs the hostile fixtures (tests/live/fixtures/hostile) for the ``vadd`` task of
``tests.live.fixtures.candidates.tiny_tasks`` twice — with the static pre-check off (the sandbox
alone) and on (as in the live runner) — and after each one a known-good candidate, to show the
evaluator recovers (a CUDA fault poisons the worker's context; it must be replaced). For the side
stream it also reports the measured ms against the good kernel's: work on a side stream escapes
the default-stream events, so a fooled timer shows up as an impossible speedup.

Usage (on a GPU machine, from the repository root)::

    python benchmarks/gpu_faults.py                 # the GPU-only three, markdown table
    python benchmarks/gpu_faults.py --all --json out/gpu_faults.json

Paste the table into docs/reliability.md, section "GPU-only faults".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from live.evaluator import Evaluator, EvaluatorConfig  # noqa: E402
from live.evaluator.static_check import static_check  # noqa: E402
from tests.live.fixtures.candidates.tiny_tasks import SPEC  # noqa: E402

HOSTILE = ROOT / "tests" / "live" / "fixtures" / "hostile"
GOOD = (ROOT / "tests" / "live" / "fixtures" / "candidates" / "vadd_good.py").read_text()
GPU_ONLY = ["illegal_memory", "oom", "side_stream"]
EXPECTED = {
    "illegal_memory": "runtime_error (illegal memory access), worker replaced",
    "oom": "runtime_error (CUDA out of memory), worker replaced",
    "side_stream": "rejected by the static check; with it off: timing fooled or not",
}


def _source(name: str, canary: Path) -> str:
    code = (HOSTILE / f"{name}.py").read_text()
    return code.replace("__CANARY_PATH__", str(canary)).replace("__PORT__", "9")


def _short(text: str | None, n: int = 110) -> str:
    text = " ".join((text or "").split()).replace("|", "/")
    return text if len(text) <= n else text[: n - 3] + "..."


def run(names: list[str], timeout_s: float, out_dir: Path, device: str = "cuda") -> list[dict]:
    rows = []
    canary = out_dir / "canary.txt"
    canary.write_text("must survive")
    with Evaluator(EvaluatorConfig(SPEC, device=device, timeout_s=timeout_s,
                                   compile_timeout_s=120)) as ev:
        baseline = ev.evaluate("vadd", GOOD, seed=0)
        print(f"device: {baseline.device_name}; good vadd: {baseline.status}, "
              f"{baseline.ms} ms", file=sys.stderr)
        for name in names:
            code = _source(name, canary)
            started = time.perf_counter()
            result = ev.evaluate("vadd", code, seed=0)
            elapsed_s = time.perf_counter() - started
            after = ev.evaluate("vadd", GOOD, seed=1)
            rows.append({
                "fault": name,
                "expected": EXPECTED.get(name, ""),
                "static_check": static_check(code) or "passes",
                "status": result.status,
                "error": result.error,
                "worker_recycled": result.worker_recycled,
                "ms": result.ms,
                "good_ms": baseline.ms,
                "speedup": result.speedup,
                "good_speedup": baseline.speedup,
                "eval_s": elapsed_s,
                "good_after": after.status,
                "canary_intact": canary.exists() and canary.read_text() == "must survive",
                "device": result.device_name or baseline.device_name,
            })
            print(f"{name}: {result.status} {_short(result.error, 200)}", file=sys.stderr)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| fault | static check (live runner) | sandbox alone: status | error | worker "
             "replaced | candidate ms / good ms | good kernel right after |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        ms = ("-" if r["ms"] is None else f"{r['ms']:.4f} / {r['good_ms']:.4f}")
        lines.append(f"| {r['fault']} | {_short(r['static_check'], 70)} | {r['status']} | "
                     f"{_short(r['error'])} | {'yes' if r['worker_recycled'] else 'no'} | {ms} | "
                     f"{r['good_after']} |")
    device = rows[0]["device"] if rows else "?"
    return f"Device: {device}.\n\n" + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="every hostile fixture, not only "
                        "the GPU-only three")
    parser.add_argument("--timeout", type=float, default=10.0, help="run timeout, seconds")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="cpu (with TRITON_INTERPRET=1) only to try the script itself")
    args = parser.parse_args()
    names = GPU_ONLY
    if args.all:
        names = sorted(p.stem for p in HOSTILE.glob("*.py")
                       if not p.stem.startswith("_") and p.stem != "fault_table")
    out_dir = Path("/tmp/kb-gpu-faults")
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = run(names, args.timeout, out_dir, args.device)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2, default=str))
    print(markdown(rows))


if __name__ == "__main__":
    main()
