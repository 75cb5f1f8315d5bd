"""How far a live run recorded in pieces is from its target: evaluated attempts per task.

A run of T steps per task spends a step on every attempt the evaluator judged, not on the
proposals the mutator could not apply (``not_applicable``: they spend no step). This reads a
run folder (``benchmarks/runs/NAME/`` or an extracted ``record_runs.py`` tarball) and prints, per
task of the manifest: evaluated attempts, not-applicable rows, and whether the task is done,
still to run, or stopped because its k0 failed on its own (``evaluations.jsonl``; such a task
never runs).

    python benchmarks/live_progress.py DIR [--target 60] [--json out.json]

Exit status: 0 when every task that can run has reached the target, 3 while some have not
(so a script can pick the next run to resume). Runs on any CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from live.runner.resume import load_recorded


def progress(folder: Path, target: int) -> dict[str, Any]:
    """Per-task counts and totals of the run in `folder` toward `target` evaluated attempts."""
    manifest = json.loads((folder / "manifest.json").read_text())
    run_ids = manifest.get("run_ids") or []
    if len(run_ids) != 1:
        raise SystemExit(f"{folder}: expected one run id in the manifest, found {len(run_ids)}")
    run = load_recorded(folder, run_ids[0])
    tasks = []
    for task_id in manifest["tasks"]:
        rows = run.steps_of(task_id)
        evaluated = sum(1 for r in rows if r["status"] != "not_applicable")
        k0_error = None
        if not rows:
            failures = run.own_failures(task_id)
            k0_error = next(iter(failures.values()), None)
        state = ("k0 failed" if k0_error is not None
                 else "done" if evaluated >= target else "to run")
        tasks.append({"task": task_id, "evaluated": evaluated,
                      "not_applicable": len(rows) - evaluated, "state": state,
                      "error": k0_error})
    runnable = [t for t in tasks if t["state"] != "k0 failed"]
    done = sum(min(t["evaluated"], target) for t in runnable)
    return {"folder": str(folder), "run_id": run_ids[0], "target": target,
            "tasks": tasks, "runnable": len(runnable),
            "finished_tasks": sum(t["state"] == "done" for t in runnable),
            "evaluated_toward_target": done, "needed": target * len(runnable),
            "complete": all(t["state"] == "done" for t in runnable)}


def markdown(report: dict[str, Any]) -> str:
    lines = ["| task | evaluated | not applicable | state |", "| --- | ---: | ---: | --- |"]
    for t in report["tasks"]:
        lines.append(f"| {t['task']} | {t['evaluated']} | {t['not_applicable']} | {t['state']} |")
    share = report["evaluated_toward_target"] / max(report["needed"], 1)
    lines.append("")
    lines.append(f"{report['run_id']}: {report['finished_tasks']} of {report['runnable']} "
                 f"runnable tasks at {report['target']}; {report['evaluated_toward_target']} of "
                 f"{report['needed']} evaluated attempts ({share:.0%})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--target", type=int, default=60,
                        help="evaluated attempts per task (the run's --steps)")
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args(argv)
    if not (args.folder / "manifest.json").exists():
        parser.error(f"{args.folder} is not a run folder (no manifest.json)")
    report = progress(args.folder, args.target)
    print(markdown(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0 if report["complete"] else 3


if __name__ == "__main__":
    sys.exit(main())
