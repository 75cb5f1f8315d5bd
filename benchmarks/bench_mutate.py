"""The mutate proposer on a GPU: how often its candidates are correct, and how much faster the
best of a small greedy search gets than k0, per built-in task.

For each task: round 1 proposes ``--per-round`` candidates from k0 (strategies in turn, sample
index = proposal number, ``max_edits=2``); round 2 proposes as many from round 1's fastest
correct candidate. Each candidate is checked with ``live.tasks.selfcheck.selfcheck(task,
"cuda")`` (every test and perf shape, NaN-poisoned outputs) and timed with
``triton.testing.do_bench`` (median) summed over the perf shapes. Not the evaluator's protocol
(no L2 flush, no interleaving): a quick look at what the mutator reaches, not a result to quote
as a KernelBand speedup. Writes ``OUT_DIR/bench_mutate.json``.

    python benchmarks/bench_mutate.py --out OUT_DIR --per-round 12
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbsim.strategies import STRATEGIES  # noqa: E402
from live.evaluator.checks import poisoned_like  # noqa: E402
from live.proposers.mutate import mutate_source  # noqa: E402
from live.tasks.loading import import_source  # noqa: E402
from live.tasks.registry import resolve_tasks  # noqa: E402
from live.tasks.selfcheck import selfcheck  # noqa: E402


def sum_ms(task, code: str) -> float:
    import torch
    import triton

    module = import_source(code, task.name)
    total_ms = 0.0
    for shape in task.perf_shapes:
        inputs = task.make_inputs(shape, 0, "cuda")
        outputs = tuple(poisoned_like(r) for r in task.reference(*inputs))
        total_ms += triton.testing.do_bench(
            lambda inputs=inputs, outputs=outputs: task.call(module, inputs, outputs),
            warmup=25, rep=100)
        torch.cuda.synchronize()
    return total_ms


def judge(task, code: str) -> tuple[bool, float | None, str | None]:
    result = selfcheck(task, "cuda", source=code)
    error = result.error or next((c.error for c in result.checks if not c.ok), None)
    if error:
        return False, None, error
    return True, sum_ms(task, code), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", default="builtin")
    parser.add_argument("--per-round", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=480.0,
                        help="wall time the run may take: no task starts after it")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    import torch

    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "per_round": args.per_round, "seed": args.seed, "tasks": []}
    for task in resolve_tasks(args.tasks):
        if time.perf_counter() - started > args.max_seconds:
            report["stopped_early"] = task.name
            break
        k0_ok, k0_ms, k0_error = judge(task, task.k0)
        row = {"task": task.name, "k0_ms": k0_ms, "k0_error": k0_error, "rounds": []}
        parent_code, parent_ms = task.k0, k0_ms
        for round_index in range(2):
            proposals = []
            for number in range(args.per_round):
                strategy = STRATEGIES[number % len(STRATEGIES)]
                code, detail = mutate_source(parent_code, strategy, seed=args.seed,
                                             sample_index=round_index * 1000 + number,
                                             max_edits=2)
                if code is None:
                    proposals.append({"strategy": strategy, "status": "not_applicable"})
                    continue
                ok, ms, error = judge(task, code)
                proposals.append({"strategy": strategy, "status": "ok" if ok else "incorrect",
                                  "ms": ms, "error": error, "detail": detail, "code": code})
            correct = [p for p in proposals if p["status"] == "ok"]
            best = min(correct, key=lambda p: p["ms"], default=None)
            row["rounds"].append({
                "parent_ms": parent_ms,
                "proposed": sum(p["status"] != "not_applicable" for p in proposals),
                "correct": len(correct),
                "best_ms": None if best is None else best["ms"],
                "best_detail": None if best is None else best["detail"],
                "errors": [p["error"] for p in proposals if p["status"] == "incorrect"],
            })
            if best is not None and parent_ms is not None and best["ms"] < parent_ms:
                parent_code, parent_ms = best["code"], best["ms"]
        row["best_ms"] = parent_ms
        row["speedup_vs_k0"] = (k0_ms / parent_ms) if k0_ms and parent_ms else None
        report["tasks"].append(row)
        (args.out / "bench_mutate.json").write_text(json.dumps(report, indent=1))
        print(f"{task.name:16s} k0 {k0_ms} ms -> best {parent_ms} ms "
              f"(x{row['speedup_vs_k0']}); correct "
              f"{sum(r['correct'] for r in row['rounds'])}/"
              f"{sum(r['proposed'] for r in row['rounds'])}", flush=True)
    report["wall_s"] = time.perf_counter() - started
    (args.out / "bench_mutate.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
