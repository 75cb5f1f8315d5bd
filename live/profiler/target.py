"""The program Nsight Compute runs: one candidate on one shape, a few launches.

``python -m live.profiler.target --task-spec S --task T --code FILE [--code FILE2 ...]
[--shape-index I] [--calls N]``: every candidate in turn on the same inputs, N calls each (a batch
of candidates whose kernels were renamed apart, see live.profiler.batch). A candidate that raises
is reported on stderr and skipped. Writes nothing to stdout (ncu's CSV goes there).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def representative_shape_index(n_shapes: int) -> int:
    """The middle performance shape (sizes are listed in increasing order by convention)."""
    return max(0, (n_shapes - 1) // 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task-spec", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--code", required=True, action="append")
    parser.add_argument("--shape-index", type=int, default=None)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args(argv)
    sys.stdout = sys.stderr  # keep ncu's stdout clean

    import torch

    from live.evaluator.checks import as_tuple, poisoned_like
    from live.evaluator.loader import load_candidate
    from live.evaluator.task_source import resolve_task

    task = resolve_task(args.task_spec, args.task)
    dps = getattr(task, "call_style", "dps") == "dps"
    shapes = list(task.perf_shapes)
    index = args.shape_index if args.shape_index is not None else representative_shape_index(
        len(shapes))
    inputs = task.make_inputs(dict(shapes[index]), 0, "cuda")
    outputs = tuple(poisoned_like(r) for r in as_tuple(task.reference(*inputs))) if dps else None
    failed = 0
    for number, code in enumerate(args.code):
        code_path = Path(code)
        try:
            module = load_candidate(code_path.read_text(), f"kb_profiled_{number}",
                                    code_path.parent, task.entry if dps else None)
            for _ in range(args.calls):
                task.call(module, inputs, outputs)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - one candidate's fault ends only its turn
            failed += 1
            print(f"kb-profile: candidate {number} failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
    return 1 if failed == len(args.code) else 0


if __name__ == "__main__":
    sys.exit(main())
