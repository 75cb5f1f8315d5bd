"""Summarise a folder of live runs (those of benchmarks/gpu/live_memory_profiling.sh): per run,
attempts, wall, attempts/s, out-of-memory failures, tasks lost, profiled kernels and what the
policy waited. Each run is a trace folder NAME/ with NAME.time.json and NAME.log beside it.

    python benchmarks/gpu/live_runs_summary.py RUNS_DIR OUT_DIR/live_runs.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def summarise(run: Path) -> dict:
    from kbsim.trace.reader import load_trace

    meta = json.loads((run.parent / f"{run.name}.time.json").read_text())
    data = load_trace(run)
    steps, kernels = data.steps_df(), data.kernels_df()
    manifest = data.manifests[0]
    tasks = manifest["tasks"]
    k0 = kernels[kernels["parent_id"].isna()]
    k0_ok = set(k0[k0["correct"]]["task_id"])
    errors = steps["error"].fillna("")
    oom_steps = int(errors.str.contains("out of memory", case=False).sum())
    log = (run.parent / f"{run.name}.log").read_text(errors="replace")
    per_task = steps.groupby("task_id").size()
    waits = steps["profile_latency_s"].dropna()
    # steady state: attempts per second between the first and the last attempt recorded (the
    # process wall also holds start-up and, with profiling, the batch in flight at the end)
    evaluated = steps[steps["status"] != "not_applicable"]
    times = steps["time"].sort_values()
    span = (times.iloc[-1] - times.iloc[0]).total_seconds() if len(times) > 1 else float("nan")
    # evaluations per second of the loop running: from the first evaluated step to the last
    # (neither the k0 start-up nor the end-of-run flush of profiles counts)
    etimes = evaluated["time"].sort_values()
    # Nsight Compute batches: the session's seconds and those it held the device alone
    batches_path = run / "profile-batches.jsonl"
    batches = ([json.loads(line) for line in batches_path.read_text().splitlines() if line]
               if batches_path.exists() else [])
    espan = (etimes.iloc[-1] - etimes.iloc[0]).total_seconds() if len(etimes) > 1 else 0.0
    return {
        "label": run.name, "wall_s": meta["wall_s"], "attempts": len(steps),
        "attempts_per_s": len(steps) / meta["wall_s"],
        "attempts_per_s_between_first_and_last": (len(steps) - 1) / span if span > 0 else None,
        "evaluations": len(evaluated),
        # not_applicable rows cost nothing (no LLM, no GPU): v2 on `add`, where every unmasked
        # strategy is not applicable, makes hundreds a second; evaluations/s is the fair rate
        "evaluations_per_s": len(evaluated) / meta["wall_s"],
        "evaluations_per_s_steady": (len(evaluated) - 1) / espan if espan > 0 else None,
        "tasks": len(tasks), "tasks_lost": sorted(set(tasks) - k0_ok),
        "min_steps_per_task": int(per_task.min()) if len(per_task) else 0,
        "oom_failures": oom_steps + log.lower().count("out of memory"),
        "oom_in_steps": oom_steps,
        "status_counts": steps["status"].value_counts().to_dict(),
        "profiled_ncu": int((kernels["profiler"] == "ncu").sum()),
        "profiled_roofline": int((kernels["profiler"] == "roofline").sum()),
        "policy_wait_s_median": float(waits.median()) if len(waits) else None,
        "policy_wait_s_max": float(waits.max()) if len(waits) else None,
        "eval_latency_s_median": float(steps["eval_latency_s"].median()),
        "profile_batches": len(batches),
        "profile_session_s": round(sum(b["seconds"] for b in batches), 2),
        "profile_held_s": round(sum(b["held_s"] for b in batches), 2),
        "memory_plan": manifest.get("memory_plan"), "signatures": manifest.get("signatures"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_dir", type=Path, help="folder holding the runs' trace folders")
    parser.add_argument("out", type=Path, help="JSON file for the per-run rows")
    args = parser.parse_args()
    runs_dir, out = args.runs_dir, args.out
    rows = []
    for run in sorted(p for p in runs_dir.iterdir() if (p / "manifest.json").exists()):
        try:
            rows.append(summarise(run))
        except Exception as exc:  # noqa: BLE001 - one broken run must not hide the others
            rows.append({"label": run.name, "error": f"{type(exc).__name__}: {exc}"})
    for row in rows:
        brief = {k: row.get(k) for k in ("label", "attempts", "evaluations", "wall_s",
                                          "attempts_per_s", "evaluations_per_s",
                                          "evaluations_per_s_steady",
                                          "attempts_per_s_between_first_and_last",
                                          "tasks_lost", "oom_failures", "min_steps_per_task",
                                          "profiled_ncu", "profile_batches",
                                          "profile_session_s", "profile_held_s",
                                          "policy_wait_s_max", "error")}
        print(json.dumps(brief))
    out.write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
