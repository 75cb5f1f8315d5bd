"""How often the mutate proposer can apply each strategy to TritonBench-G code (issue #14).

For every operator under PATH (or those a `kernelband tasks check --json` document says passed),
apply each strategy to the operator's k0 with several (seed, sample) draws, and count the
operators for which at least one draw produced a changed, parseable module; the reasons of the
others are tallied. Pure source transformation: runs on any CPU.

    python benchmarks/tritonbench_mutate.py PATH [--passed check.json] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbsim.strategies import STRATEGIES  # noqa: E402
from live.proposers.mutate import mutate_source  # noqa: E402
from live.tasks.tritonbench.format import discover, module_code  # noqa: E402

DRAWS = 4


def applicability(path: Path, ops: set[str] | None) -> dict:
    sources = [s for s in discover(path) if ops is None or s.op in ops]
    applied = collections.Counter()
    reasons: dict[str, collections.Counter] = {s: collections.Counter() for s in STRATEGIES}
    for source in sources:
        k0 = module_code(source.code, source.test_code)
        for strategy in STRATEGIES:
            ok, why = False, ""
            for draw in range(DRAWS):
                code, detail = mutate_source(k0, strategy, seed=draw, sample_index=draw)
                if code is not None:
                    ast.parse(code)  # a proposal must at least parse
                    ok = True
                    break
                why = detail.split(":", 1)[-1].strip() if ":" in detail else detail
            if ok:
                applied[strategy] += 1
            else:
                reasons[strategy][why] += 1
    return {"operators": len(sources), "draws_per_operator": DRAWS,
            "applied": {s: applied[s] for s in STRATEGIES},
            "not_applicable": {s: dict(reasons[s].most_common()) for s in STRATEGIES}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--passed", type=Path, help="a tasks check --json document")
    parser.add_argument("--json", type=Path, help="write the counts here")
    args = parser.parse_args()
    ops = None
    if args.passed:
        ops = {t.removeprefix("tritonbench/") for t in json.loads(args.passed.read_text())["tasks"]}
    result = applicability(args.path, ops)
    n = result["operators"]
    print(f"{'strategy':<14} {'applicable':>10}  most common reason otherwise")
    for strategy in STRATEGIES:
        reasons = result["not_applicable"][strategy]
        top = next(iter(reasons), "-")
        print(f"{strategy:<14} {result['applied'][strategy]:>4}/{n:<5}  {top[:90]}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
