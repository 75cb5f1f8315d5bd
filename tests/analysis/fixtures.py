"""Small, valid schema-v1 inputs written from numpy (no engine, no GPU): a trace and results."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kbsim.strategies import N_STRATEGIES, STRATEGIES
from kbsim.trace.schema import KERNELS_SCHEMA, RESULTS_SCHEMA, SCHEMA_VERSION, STEPS_SCHEMA

CENTRES = np.array([[0.5, 32, 0, 7, 50], [1.5, 64, 16, 8, 25], [2.5, 128, 48, 9, 12.5]])
#: planted mean improvement per (cluster, strategy)
BASE = np.array([[0.30, 0.05, 0.05, 0.10, 0.02, 0.05],
                 [0.05, 0.25, 0.05, 0.02, 0.10, 0.05],
                 [0.02, 0.05, 0.05, 0.30, 0.05, 0.15]])


def _kernel_row(run_id: str, task: str, kid: str, parent: str | None, chain: list[str],
                ms: float, phi: np.ndarray) -> dict:
    return {
        "run_id": run_id, "task_id": task, "kernel_id": kid, "code": f"# kernel {kid}\n",
        "parent_id": parent, "strategy_chain": chain, "correct": True, "ms": ms,
        "shape_ms": [ms], "timing_cv": 0.01, "timing_backend": "cuda", "registers": 32,
        "shared_bytes": 0, "num_warps": 4, "num_stages": 2, "phi": phi.tolist(),
        "runtime_vec": [0.0] * 6, "hw_sig": [50.0, 50.0, 50.0], "profile9": [0.0] * 9,
        "profiled": True, "profiler": "ncu",
    }


def write_trace(root: Path, *, seed: int = 0, n_steps: int = 60,
                tasks: tuple[str, ...] = ("softmax", "matmul")) -> Path:
    """A trace of two policies (explore and greedy-ish labels) over ``tasks``; returns ``root``."""
    rng = np.random.default_rng(seed)
    steps, kernels = [], []
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    run_ids = []
    for policy in ("explore", "kernelband-v2"):
        run_id = f"run-{policy}"
        run_ids.append(run_id)
        for task in tasks:
            ref_ms = 1.0
            pool = [(f"{run_id}-k0", 2.0, CENTRES[0].copy(), 0)]
            kernels.append(_kernel_row(run_id, task, f"{run_id}-k0", None, [], 2.0, CENTRES[0]))
            for step in range(n_steps):
                pid, pms, pphi, pclu = pool[rng.integers(len(pool))]
                s = int(rng.integers(N_STRATEGIES))
                ok = rng.random() < 0.7
                gain = float(np.clip(BASE[pclu, s] + rng.normal(0, 0.05), 0.0, 0.9))
                child_id = cms = speed = None
                status, reward = ("ok", gain) if ok else ("compile_error", 0.0)
                if ok:
                    cms = pms * (1 - gain)
                    clu = int(rng.integers(3))
                    cphi = CENTRES[clu] * (1 + rng.normal(0, 0.05, 5))
                    child_id = f"{run_id}-{task}-c{step}"
                    pool.append((child_id, cms, cphi, clu))
                    kernels.append(_kernel_row(run_id, task, child_id, pid,
                                               [STRATEGIES[s]], cms, cphi))
                    speed = ref_ms / cms
                steps.append({
                    "run_id": run_id, "task_id": task, "step": step,
                    "time": start + timedelta(seconds=step), "policy": policy, "seed": 0,
                    "logging_propensity": 1.0 / (len(pool) * N_STRATEGIES), "cluster": pclu,
                    "parent_id": pid,
                    "strategy": STRATEGIES[s], "child_id": child_id, "status": status,
                    "error": None if ok else "boom", "parent_ms": pms, "child_ms": cms,
                    "ref_ms": ref_ms, "speedup_vs_ref": speed, "reward": reward,
                    "llm_model": "gpt-test", "prompt_tokens": 1000, "completion_tokens": 500,
                    "llm_latency_s": 2.0, "cost_usd": 0.002 if policy == "explore" else 0.003,
                    "eval_latency_s": 1.0, "profile_latency_s": 0.5,
                })
    for name, rows, schema in (("steps", steps, STEPS_SCHEMA), ("kernels", kernels,
                                                                 KERNELS_SCHEMA)):
        (root / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema),
                       root / name / "part-00000001.parquet")
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "hardware": {"gpu": "NVIDIA H100 80GB HBM3", "sm_count": 132, "cc": "9.0",
                     "driver": "550.54", "cuda": "12.4", "torch": "2.4", "triton": "3.1"},
        "proposer": {"kind": "openai", "model": "gpt-test", "temperature": 0.7},
        "policy": {"name": "explore", "params": {}},
        "tasks": list(tasks), "run_ids": run_ids,
        "start_time": start.isoformat(), "end_time": (start + timedelta(hours=1)).isoformat(),
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return root


def results_frame(*, seed: int = 0, n_seeds: int = 8, n_steps: int = 300) -> pa.Table:
    """Replay-like results: a logarithmic-regret policy and a linear-regret one."""
    rng = np.random.default_rng(seed)
    tables = []
    gap = 0.2
    for policy, kind in (("kernelband-v2:K=3", "log"), ("random", "linear")):
        for s in range(n_seeds):
            t = np.arange(1, n_steps + 1)
            p_bad = np.minimum(1.0, 3.0 / t) if kind == "log" else np.full(n_steps, 0.8)
            bad = rng.random(n_steps) < p_bad
            regret = np.where(bad, gap, 0.0)
            success = rng.random(n_steps) < 0.7
            gains = np.where(success, rng.uniform(0, 0.2, n_steps), 0.0)
            speed = np.maximum.accumulate(np.cumprod(1 + gains * (~bad)) ** 0.3)
            tables.append(pa.table({
                "policy": [policy] * n_steps, "env": ["synthetic"] * n_steps,
                "task_id": ["syn-000"] * n_steps, "seed": np.full(n_steps, s),
                "step": np.arange(n_steps, dtype=np.int32),
                "cluster": rng.integers(0, 3, n_steps).astype(np.int16),
                "strategy": rng.integers(0, N_STRATEGIES, n_steps).astype(np.int8),
                "parent": rng.integers(0, 5, n_steps).astype(np.int32),
                "success": success, "reward": gains,
                "arm_mean": np.full(n_steps, 0.5) - regret, "best_mean": np.full(n_steps, 0.5),
                "regret": regret, "cum_regret": np.cumsum(regret), "best_speedup": speed,
                "pool_size": np.arange(1, n_steps + 1, dtype=np.int32),
                "tokens": np.cumsum(np.full(n_steps, 1500)).astype(np.int64),
                "cost_usd": np.cumsum(np.full(n_steps, 0.002)),
            }, schema=RESULTS_SCHEMA))
    return pa.concat_tables(tables)


def write_results(root: Path, **kwargs: int) -> Path:
    """Write ``results_frame`` as one part file under ``root``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    pq.write_table(results_frame(**kwargs), root / "part-00000.parquet")
    (root / "params.json").write_text(json.dumps({"steps": 300, "policies": ["a", "b"]}))
    return root


def planted_results(effects: dict[str, float], *, envs: tuple[str, ...] = ("tape",),
                    n_tasks: int = 6, n_seeds: int = 20, n_steps: int = 40,
                    task_sd: float = 0.4, noise_sd: float = 0.05,
                    seed: int = 0) -> pd.DataFrame:
    """Replay-like results with a planted ranking: a run's final log best speedup over k0 is
    task effect (spread ``task_sd``, shared by every policy) + ``effects[policy]`` + noise; its
    best speedup rises to that value step by step. Regret grows linearly (constant comparator)."""
    rng = np.random.default_rng(seed)
    task_effect = 1.0 + rng.normal(0.0, task_sd, n_tasks)
    frames = []
    t = np.arange(n_steps)
    for env in envs:
        for policy, effect in effects.items():
            for task in range(n_tasks):
                for s in range(n_seeds):
                    final = task_effect[task] + effect + rng.normal(0.0, noise_sd)
                    regret = np.full(n_steps, 0.1)
                    frames.append(pd.DataFrame({
                        "policy": policy, "env": env, "task_id": f"task-{task:02d}",
                        "seed": s, "step": t.astype(np.int32),
                        "cluster": np.zeros(n_steps, np.int16),
                        "strategy": (t % N_STRATEGIES).astype(np.int8),
                        "parent": np.zeros(n_steps, np.int32),
                        "success": rng.random(n_steps) < 0.7, "reward": np.full(n_steps, 0.1),
                        "arm_mean": np.full(n_steps, 0.4), "best_mean": np.full(n_steps, 0.5),
                        "regret": regret, "cum_regret": np.cumsum(regret),
                        "best_speedup": np.exp(max(final, 0.0) * (t + 1) / n_steps),
                        "pool_size": (t + 1).astype(np.int32),
                        "tokens": np.zeros(n_steps, np.int64),
                        "cost_usd": np.zeros(n_steps),
                    }))
    return pd.concat(frames, ignore_index=True)


def write_planted_results(root: Path, effects: dict[str, float], *, source: str = "planted",
                          **kwargs) -> Path:
    """``planted_results`` as a results directory (one part file and a `_replay.json` naming
    ``source`` as the replayed trace)."""
    root.mkdir(parents=True, exist_ok=True)
    frame = planted_results(effects, **kwargs)
    pq.write_table(pa.Table.from_pandas(frame, schema=RESULTS_SCHEMA, preserve_index=False),
                   root / "part-00000.parquet")
    (root / "_replay.json").write_text(json.dumps({
        "policies": list(effects), "envs": [{"env": e, "source": source, "tasks": []}
                                            for e in sorted(set(frame["env"]))],
        "seeds": sorted(int(s) for s in frame["seed"].unique()),
        "steps": int(frame["step"].max() + 1),
    }))
    return root
