"""Schema v1 of kernelband trace datasets: the single source of truth for every column.

A trace is a directory::

    manifest.json          schema version, hardware, proposer, policy, tasks, run ids, times
    steps/part-*.parquet   one row per attempt (STEPS_SCHEMA)
    kernels/part-*.parquet one row per distinct kernel (content hash) per task (KERNELS_SCHEMA)

Replay results (``kernelband replay --out DIR``) are a directory of RESULTS_SCHEMA part files.
Nulls are explicit; nothing is rounded before storage. Units are in the names.
"""

from __future__ import annotations

import pyarrow as pa

from kbsim.strategies import PHI_DIMS, PROFILE_DIMS, RUNTIME_DIMS

SCHEMA_VERSION = 1

#: every status an attempt can end with (DESIGN.md, plus `rejected` for static checks)
STATUSES: tuple[str, ...] = (
    "ok",
    "compile_error",
    "runtime_error",
    "incorrect",
    "timeout",
    "llm_error",
    "no_code",
    "not_applicable",
    "rejected",
)

#: the `strategy` of a k0 step: step 0 of a task whose first kernel the LLM proposer wrote from
#: the reference (KernelBench without a k0 file); its `parent_id` is `K0_PARENT` (no kernel) and
#: the policy's attempts follow from step 1. Readers of the policy's attempts leave it out.
#: NOTE (D100): a value outside kbsim.strategies.STRATEGIES, in the existing columns
K0_STRATEGY = "k0"
K0_PARENT = "reference"

_ts = pa.timestamp("us", tz="UTC")

STEPS_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("step", pa.int32(), nullable=False),
        pa.field("time", _ts, nullable=False),
        pa.field("policy", pa.string(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
        # probability the logging policy gave this (parent, strategy); null if unknown
        pa.field("logging_propensity", pa.float64()),
        # cluster index the policy chose; -1 for policies without clusters
        pa.field("cluster", pa.int16(), nullable=False),
        pa.field("parent_id", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("child_id", pa.string()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("parent_ms", pa.float64()),
        pa.field("child_ms", pa.float64()),
        pa.field("ref_ms", pa.float64()),
        pa.field("speedup_vs_ref", pa.float64()),
        pa.field("reward", pa.float64(), nullable=False),
        pa.field("llm_model", pa.string()),
        pa.field("prompt_tokens", pa.int64()),
        pa.field("completion_tokens", pa.int64()),
        pa.field("llm_latency_s", pa.float64()),
        pa.field("cost_usd", pa.float64()),
        pa.field("eval_latency_s", pa.float64()),
        pa.field("profile_latency_s", pa.float64()),
    ],
    metadata={"kernelband.table": "steps", "kernelband.schema_version": str(SCHEMA_VERSION)},
)

KERNELS_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("task_id", pa.string(), nullable=False),
        # content hash of the normalised source (sha256 hex, first 16 chars)
        pa.field("kernel_id", pa.string(), nullable=False),
        pa.field("code", pa.string(), nullable=False),
        pa.field("parent_id", pa.string()),
        pa.field("strategy_chain", pa.list_(pa.string()), nullable=False),
        pa.field("correct", pa.bool_(), nullable=False),
        # aggregate over performance shapes (sum of per-shape medians), null unless correct
        pa.field("ms", pa.float64()),
        pa.field("shape_ms", pa.list_(pa.float64())),
        pa.field("timing_cv", pa.float64()),
        # "cuda" (CUDA events on a GPU) or "cpu-interpreter" (TRITON_INTERPRET=1: not a GPU figure)
        pa.field("timing_backend", pa.string(), nullable=False),
        pa.field("registers", pa.int32()),
        pa.field("shared_bytes", pa.int64()),
        pa.field("num_warps", pa.int32()),
        pa.field("num_stages", pa.int32()),
        pa.field("phi", pa.list_(pa.float64(), len(PHI_DIMS))),
        pa.field("runtime_vec", pa.list_(pa.float64(), len(RUNTIME_DIMS))),
        # (SM, DRAM, L2) throughput, % of peak
        pa.field("hw_sig", pa.list_(pa.float64(), 3)),
        pa.field("profile9", pa.list_(pa.float64(), len(PROFILE_DIMS))),
        pa.field("profiled", pa.bool_(), nullable=False),
        pa.field("profiler", pa.string()),
        # (SM, DRAM, L2) % of peak from the measured runtime and the task's bytes and FLOPs
        # (live.hardware.kernel_roofline_signature): what v2 sees before Nsight Compute's
        # signature (docs/profiling-and-memory.md); null without GPU peaks. Optional: part
        # files written before it lack the column and read as null (OPTIONAL_COLUMNS)
        pa.field("roofline_sig", pa.list_(pa.float64(), 3)),
    ],
    metadata={"kernelband.table": "kernels", "kernelband.schema_version": str(SCHEMA_VERSION)},
)

#: columns added to schema v1 after traces were shipped: a part file without them is still
#: valid, and the reader fills them with nulls. NOTE (D75): optional columns instead of a
#: schema version 2 (older kernelband refuses a part file that has them)
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {"steps": (), "kernels": ("roofline_sig",)}

#: one row per (policy, env, task, seed, step) of a replay
RESULTS_SCHEMA = pa.schema(
    [
        pa.field("policy", pa.string(), nullable=False),  # full spec, e.g. "kernelband-v2:K=5"
        pa.field("env", pa.string(), nullable=False),  # tape | fitted | synthetic
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
        pa.field("step", pa.int32(), nullable=False),
        pa.field("cluster", pa.int16(), nullable=False),
        pa.field("strategy", pa.int8(), nullable=False),  # index into kbsim.strategies.STRATEGIES
        pa.field("parent", pa.int32(), nullable=False),  # pool index of the parent
        pa.field("success", pa.bool_(), nullable=False),
        pa.field("reward", pa.float64(), nullable=False),
        # mean reward of the chosen arm and of the best arm at this step (NaN where unknown)
        pa.field("arm_mean", pa.float64()),
        pa.field("best_mean", pa.float64()),
        pa.field("regret", pa.float64()),  # instantaneous pseudo-regret
        pa.field("cum_regret", pa.float64()),
        pa.field("best_speedup", pa.float64(), nullable=False),  # vs the task's k0, so far
        pa.field("pool_size", pa.int32(), nullable=False),
        pa.field("tokens", pa.int64(), nullable=False),  # cumulative
        pa.field("cost_usd", pa.float64(), nullable=False),  # cumulative
    ],
    metadata={"kernelband.table": "results", "kernelband.schema_version": str(SCHEMA_VERSION)},
)

#: keys every manifest.json holds
MANIFEST_KEYS: tuple[str, ...] = (
    "schema_version",
    "hardware",
    "proposer",
    "policy",
    "tasks",
    "run_ids",
    "start_time",
    "end_time",
)
