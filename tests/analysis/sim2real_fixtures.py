"""Planted traces for the sim-to-real tests: synthetic worlds recorded with kbsim's recorder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kbsim.envs.synthetic import build_synthetic
from kbsim.replay.record import record_trace

#: the world both the exploration trace and the matching policy trace are recorded in
WORLD = "default,tasks=3,seed=0"
#: a world whose speedups are capped at 1.5x (an exploration trace of it predicts too little)
CAPPED_WORLD = "default,tasks=3,seed=0,roofline=1.5"
#: a world with a high ceiling and few failures (its v2 run finds far more than CAPPED_WORLD)
OPEN_WORLD = "default,tasks=3,seed=0,roofline=20,fail=0.05"
EXPLORE_STEPS = 150
POLICY_STEPS = 40


def record(path: Path, world: str, policy: str, steps: int) -> Path:
    """A trace of `policy` (seed 0) on every task of the synthetic `world`."""
    return record_trace(path, build_synthetic(world), policy, 0, steps)


def with_reference(src: Path, dst: Path, factor: float) -> Path:
    """A copy of trace `src` whose rows carry reference timings: ref_ms = factor x the task's
    k0 runtime, speedup_vs_ref = ref_ms / child_ms for correct children (so every speedup over
    the reference is `factor` x the speedup over k0)."""
    shutil.copytree(src, dst)
    parts = sorted((dst / "steps").glob("part-*.parquet"))
    schema = pq.read_schema(parts[0])
    frame = pd.concat([pq.read_table(p).to_pandas() for p in parts], ignore_index=True)
    first = frame.sort_values(["run_id", "step"], kind="stable").groupby("task_id")["parent_ms"]
    ref = factor * frame["task_id"].map(first.first())
    frame["ref_ms"] = ref
    ok = frame["status"] == "ok"
    frame["speedup_vs_ref"] = np.where(ok, ref / frame["child_ms"].astype(float), np.nan)
    for part in parts[1:]:
        part.unlink()
    pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), parts[0])
    return dst


def truncate_task(src: Path, dst: Path, task: str, keep: int) -> Path:
    """A copy of trace `src` keeping only the first `keep` attempts of `task`."""
    shutil.copytree(src, dst)
    parts = sorted((dst / "steps").glob("part-*.parquet"))
    schema = pq.read_schema(parts[0])
    frame = pd.concat([pq.read_table(p).to_pandas() for p in parts], ignore_index=True)
    frame = frame[(frame["task_id"] != task) | (frame["step"] < keep)]
    for part in parts[1:]:
        part.unlink()
    pq.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False), parts[0])
    return dst
