"""Plausible, schema-valid synthetic trace datasets, built vectorised (a million steps in seconds).

For tests and benchmarks until real traces exist, and for checking tools on large inputs. The
numbers are made up: `timing_backend` is "synthetic" and the manifest says so. Each task starts
from one initial kernel k0; every attempt picks a parent uniformly from the task's pool so far
(k0 plus every earlier correct child, so `logging_propensity` = 1 / (pool size x strategies)), a
strategy uniformly, and ends `ok` with a runtime drawn around k0's, or with a failure status.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kbsim.strategies import N_STRATEGIES, STRATEGIES
from kbsim.trace.schema import KERNELS_SCHEMA, STEPS_SCHEMA
from kbsim.trace.writer import TraceWriter

#: outcome of a synthetic attempt and its probability
OUTCOME_P: dict[str, float] = {
    "ok": 0.55,
    "compile_error": 0.15,
    "runtime_error": 0.08,
    "incorrect": 0.14,
    "timeout": 0.03,
    "llm_error": 0.02,
    "no_code": 0.03,
}
_ERRORS = {
    "compile_error": "CompilationError: synthetic",
    "runtime_error": "RuntimeError: synthetic illegal memory access",
    "incorrect": "max abs error 3.1e-01 above tolerance",
    "timeout": "timed out after 60 s",
    "llm_error": "synthetic LLM API error",
    "no_code": "no code block in the completion",
}
_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _kernel_ids(seed: int, serials: np.ndarray) -> list[str]:
    """16-hex-digit ids, distinct per serial (a splitmix64 bijection of seed and serial)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed & 0xFFFF) << np.uint64(48)) ^ serials.astype(np.uint64)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return [f"{value:016x}" for value in z.tolist()]


def _fixed_list(values: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), values.shape[1])


def synthetic_tables(
    n_steps: int, n_tasks: int, seed: int, run_id: str | None = None
) -> tuple[pa.Table, pa.Table]:
    """(steps, kernels) tables of a synthetic dataset with `n_steps` attempts over `n_tasks`."""
    if n_tasks < 1 or n_steps < n_tasks:
        raise ValueError("need n_tasks >= 1 and n_steps >= n_tasks")
    rng = np.random.default_rng(seed)
    run_id = run_id or f"synth-s{seed}"
    task_names = [f"task{t:03d}" for t in range(n_tasks)]
    steps_per_task = np.full(n_tasks, n_steps // n_tasks)
    steps_per_task[: n_steps % n_tasks] += 1
    task = np.repeat(np.arange(n_tasks), steps_per_task)
    task_start = np.concatenate([[0], np.cumsum(steps_per_task)[:-1]])
    step = np.arange(n_steps) - task_start[task]

    outcome_names = list(OUTCOME_P)
    outcome = rng.choice(len(outcome_names), size=n_steps, p=list(OUTCOME_P.values()))
    ok = outcome == 0
    strategy = rng.integers(0, N_STRATEGIES, size=n_steps)

    # pool before each step: k0 plus the task's earlier ok children
    ok_cum = np.cumsum(ok)
    ok_before_task = np.concatenate([[0], ok_cum])[task_start][task]
    ok_before = ok_cum - ok - ok_before_task
    pool_size = ok_before + 1
    kernel_offset = np.arange(n_tasks) + np.concatenate([[0], ok_cum[task_start[1:] - 1]])
    pick = np.minimum((rng.random(n_steps) * pool_size).astype(np.int64), pool_size - 1)
    parent_kernel = kernel_offset[task] + pick

    n_kernels = n_tasks + int(ok.sum())
    kernel_task = np.repeat(np.arange(n_tasks), np.bincount(task[ok], minlength=n_tasks) + 1)
    is_k0 = np.zeros(n_kernels, dtype=bool)
    is_k0[kernel_offset] = True
    child_kernel = np.full(n_steps, -1)
    child_kernel[ok] = np.flatnonzero(~is_k0)

    ref_ms = rng.uniform(0.05, 5.0, size=n_tasks)
    k0_ms = ref_ms * rng.uniform(1.0, 3.0, size=n_tasks)
    strategy_gain = rng.normal(0.1, 0.15, size=(n_tasks, N_STRATEGIES))
    kernel_ms = np.empty(n_kernels)
    kernel_ms[kernel_offset] = k0_ms
    gain = strategy_gain[task[ok], strategy[ok]]
    kernel_ms[~is_k0] = k0_ms[task[ok]] * np.exp(rng.normal(-gain, 0.3))
    parent_ms = kernel_ms[parent_kernel]
    child_ms = np.where(ok, kernel_ms[np.maximum(child_kernel, 0)], np.nan)
    reward = np.where(ok, np.maximum(0.0, (parent_ms - child_ms) / parent_ms), 0.0)

    ids = np.array(_kernel_ids(seed, np.arange(n_kernels)), dtype=object)
    times = np.datetime64(_START.replace(tzinfo=None), "us") + (
        step * 2_000_000 + task * 1000
    ).astype("timedelta64[us]")
    strategy_names = np.array(STRATEGIES, dtype=object)
    status = np.array(outcome_names, dtype=object)[outcome]
    error = np.array([None, *(_ERRORS[name] for name in outcome_names[1:])], dtype=object)
    prompt_tokens = rng.integers(1200, 3500, size=n_steps)
    steps = pa.table(
        {
            "run_id": pa.array([run_id] * n_steps, pa.string()),
            "task_id": pa.array(np.array(task_names, dtype=object)[task], pa.string()),
            "step": pa.array(step, pa.int32()),
            "time": pa.array(times, STEPS_SCHEMA.field("time").type),
            "policy": pa.array(["explore"] * n_steps, pa.string()),
            "seed": pa.array(np.full(n_steps, seed), pa.int64()),
            "logging_propensity": pa.array(1.0 / (pool_size * N_STRATEGIES)),
            "cluster": pa.array(np.full(n_steps, -1), pa.int16()),
            "parent_id": pa.array(ids[parent_kernel], pa.string()),
            "strategy": pa.array(strategy_names[strategy], pa.string()),
            "child_id": pa.array(np.where(ok, ids[np.maximum(child_kernel, 0)], None), pa.string()),
            "status": pa.array(status, pa.string()),
            "error": pa.array(error[outcome], pa.string()),
            "parent_ms": pa.array(parent_ms),
            "child_ms": pa.array(child_ms, from_pandas=True),
            "ref_ms": pa.array(ref_ms[task]),
            "speedup_vs_ref": pa.array(
                np.where(ok, ref_ms[task] / child_ms, np.nan), from_pandas=True
            ),
            "reward": pa.array(reward),
            "llm_model": pa.array(["synthetic-llm"] * n_steps, pa.string()),
            "prompt_tokens": pa.array(prompt_tokens, pa.int64()),
            "completion_tokens": pa.array(rng.integers(200, 1200, size=n_steps), pa.int64()),
            "llm_latency_s": pa.array(rng.gamma(4.0, 2.0, size=n_steps)),
            "cost_usd": pa.array(prompt_tokens * 3e-6),
            "eval_latency_s": pa.array(rng.gamma(3.0, 1.0, size=n_steps)),
            "profile_latency_s": pa.array(
                np.where(ok, rng.gamma(2.0, 2.0, n_steps), np.nan), from_pandas=True
            ),
        },
        schema=STEPS_SCHEMA,
    )
    kernels = _synthetic_kernels(
        rng,
        run_id,
        task_names,
        kernel_task,
        ids,
        is_k0,
        kernel_ms,
        parent_kernel[ok],
        strategy_names[strategy[ok]],
    )
    return steps, kernels


def _synthetic_kernels(
    rng: np.random.Generator,
    run_id: str,
    task_names: list[str],
    kernel_task: np.ndarray,
    ids: np.ndarray,
    is_k0: np.ndarray,
    kernel_ms: np.ndarray,
    child_parent: np.ndarray,
    child_strategy: np.ndarray,
) -> pa.Table:
    n_kernels = len(ids)
    parent_id = np.full(n_kernels, None, dtype=object)
    parent_id[~is_k0] = ids[child_parent]
    chain_lengths = (~is_k0).astype(np.int32)
    chain_values = pa.array(child_strategy, pa.string())
    strategy_chain = pa.ListArray.from_arrays(
        pa.array(np.concatenate([[0], np.cumsum(chain_lengths)]), pa.int32()), chain_values
    )
    registers = rng.integers(24, 200, size=n_kernels)
    shared_bytes = rng.integers(0, 96, size=n_kernels) * 1024
    num_warps = 2 ** rng.integers(1, 4, size=n_kernels)
    num_stages = rng.integers(1, 5, size=n_kernels)
    occupancy_pct = rng.uniform(10.0, 100.0, size=n_kernels)
    phi = np.column_stack(
        [
            np.log1p(kernel_ms),
            registers,
            shared_bytes / 1024,
            np.log2(num_warps * 32),
            occupancy_pct,
        ]
    )
    runtime_vec = np.column_stack(
        [
            np.log(kernel_ms),
            rng.uniform(18.0, 26.0, size=n_kernels),
            rng.lognormal(1.0, 1.0, size=n_kernels),
            num_warps * 32,
            np.ones(n_kernels),
            occupancy_pct * rng.uniform(0.6, 1.0, size=n_kernels),
        ]
    )
    hw_sig = rng.uniform(5.0, 95.0, size=(n_kernels, 3))
    profile9 = rng.uniform(0.0, 100.0, size=(n_kernels, 9))
    return pa.table(
        {
            "run_id": pa.array([run_id] * n_kernels, pa.string()),
            "task_id": pa.array(np.array(task_names, dtype=object)[kernel_task], pa.string()),
            "kernel_id": pa.array(ids, pa.string()),
            "code": pa.array([f"# synthetic kernel {kernel_id}\n" for kernel_id in ids]),
            "parent_id": pa.array(parent_id, pa.string()),
            "strategy_chain": strategy_chain,
            "correct": pa.array(np.ones(n_kernels, dtype=bool)),
            "ms": pa.array(kernel_ms),
            "shape_ms": pa.nulls(n_kernels, pa.list_(pa.float64())),
            "timing_cv": pa.array(rng.uniform(0.001, 0.05, size=n_kernels)),
            "timing_backend": pa.array(["synthetic"] * n_kernels, pa.string()),
            "registers": pa.array(registers, pa.int32()),
            "shared_bytes": pa.array(shared_bytes, pa.int64()),
            "num_warps": pa.array(num_warps, pa.int32()),
            "num_stages": pa.array(num_stages, pa.int32()),
            "phi": _fixed_list(phi),
            "runtime_vec": _fixed_list(runtime_vec),
            "hw_sig": _fixed_list(hw_sig),
            "profile9": _fixed_list(profile9),
            "profiled": pa.array(np.ones(n_kernels, dtype=bool)),
            "profiler": pa.array(["synthetic"] * n_kernels, pa.string()),
            "roofline_sig": pa.nulls(n_kernels, pa.list_(pa.float64(), 3)),
        },
        schema=KERNELS_SCHEMA,
    )


def write_synthetic_trace(
    path: str | Path,
    n_steps: int,
    n_tasks: int,
    seed: int,
    *,
    rows_per_part: int = 250_000,
    hardware: dict[str, Any] | None = None,
) -> Path:
    """Write a synthetic dataset to `path` (which must not hold one yet); returns `path`."""
    steps, kernels = synthetic_tables(n_steps, n_tasks, seed)
    manifest = {
        "hardware": hardware or {"gpu_name": "synthetic", "note": "made-up numbers"},
        "proposer": {"kind": "synthetic"},
        "policy": {"name": "explore", "params": {}},
        "tasks": [f"task{t:03d}" for t in range(n_tasks)],
        "run_ids": [steps.column("run_id")[0].as_py()],
        "start_time": _START.isoformat(),
        "synthetic": {"n_steps": n_steps, "n_tasks": n_tasks, "seed": seed},
    }
    with TraceWriter(path, manifest, flush_every=2**62) as writer:
        for offset in range(0, kernels.num_rows, rows_per_part):
            writer.append_kernels(kernels.slice(offset, rows_per_part))
            writer.flush()
        for offset in range(0, steps.num_rows, rows_per_part):
            writer.append_steps(steps.slice(offset, rows_per_part))
            writer.flush()
    return Path(path)
