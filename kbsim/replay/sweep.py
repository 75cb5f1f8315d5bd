"""`run_sweep`: policies x environments x tasks x seeds, in compiled parallel chunks.

Episodes are (task, seed) pairs of one environment, run for one policy at a time in chunks of
`chunk_episodes`; each chunk runs in parallel (one engine worker per thread) and, when `out` is
given, is written as a RESULTS_SCHEMA part file as soon as it finishes. A tqdm bar counts chunks.

Output directory layout::

    out/part-<policy>-<env>-<chunk>.parquet   per-step rows (RESULTS_SCHEMA); `write_steps`
    out/_summary.parquet                      one row per (episode, horizon): see SUMMARY_COLUMNS
    out/_replay.json                          what was run (policies, envs, seeds, steps)

Files starting with ``_`` are skipped by pyarrow.dataset / pandas globbing of ``out``, so the
directory reads as one RESULTS_SCHEMA dataset.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pandas as pd
import pyarrow as pa
from tqdm import tqdm

from kbsim.envs.data import Env
from kbsim.policies.spec import PolicySpec, parse_policy
from kbsim.replay.chunks import (
    Workspace,
    engine_kinds,
    new_workspace,
    prepare_workers,
    run_chunk,
)
from kbsim.replay.engine import EpisodeOut, StepOut, new_outputs
from kbsim.rng import episode_rngs
from kbsim.trace.layout import atomic_write_parquet
from kbsim.trace.schema import RESULTS_SCHEMA

SUMMARY_COLUMNS: tuple[str, ...] = (
    "policy",
    "env",
    "task_id",
    "seed",
    "horizon",  # the step count this row summarises (T, or a shorter prefix asked for)
    "steps_run",  # steps actually run within the horizon (< horizon: truncated by a stop tape)
    "truncated",
    "coverage",  # fraction of steps served from data (tape: fresh tape outcomes)
    "final_best_speedup",
    "cum_regret",
    "tokens",
    "cost_usd",
)


@dataclass
class SweepResult:
    """What a sweep produced: the per-episode summary, and the step rows when kept in memory."""

    summary: pd.DataFrame
    results: pa.Table | None  # per-step RESULTS_SCHEMA rows when out is None and keep_steps
    out: Path | None


def _say_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _as_specs(policies: Sequence[str | PolicySpec]) -> list[PolicySpec]:
    return [p if isinstance(p, PolicySpec) else parse_policy(p) for p in policies]


def _seed_list(seeds: int | Sequence[int]) -> list[int]:
    if isinstance(seeds, (int, np.integer)):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {seeds}.")
        return list(range(int(seeds)))
    out = [int(s) for s in seeds]
    if not out:
        raise ValueError("no seeds given.")
    return out


def _string_column(codes: np.ndarray, values: Sequence[str]) -> pa.Array:
    dictionary = pa.array(list(values), pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), dictionary).cast(pa.string())


def _step_table(
    policy: str, env: Env, ep_task: np.ndarray, ep_seed: np.ndarray, out: StepOut,
    steps_run: np.ndarray,
) -> pa.Table:
    n_ep, steps = out.reward.shape
    step_idx = np.broadcast_to(np.arange(steps, dtype=np.int32), (n_ep, steps))
    keep = (step_idx < steps_run[:, None]).ravel()
    n = int(keep.sum())

    def col(a: np.ndarray) -> np.ndarray:
        return a.ravel()[keep]

    task_codes = np.repeat(ep_task, steps)[keep]
    columns = {
        "policy": _string_column(np.zeros(n, np.int32), [policy]),
        "env": _string_column(np.zeros(n, np.int32), [env.name]),
        "task_id": _string_column(task_codes, env.task_ids),
        "seed": pa.array(np.repeat(ep_seed, steps)[keep], pa.int64()),
        "step": pa.array(col(step_idx), pa.int32()),
    }
    for name in RESULTS_SCHEMA.names[5:]:
        columns[name] = pa.array(col(getattr(out, name)), RESULTS_SCHEMA.field(name).type)
    return pa.Table.from_arrays([columns[n] for n in RESULTS_SCHEMA.names], schema=RESULTS_SCHEMA)


def _summary_rows(
    policy: str, env: Env, ep_task: np.ndarray, ep_seed: np.ndarray, out: StepOut,
    ep_out: EpisodeOut, horizons: Sequence[int], steps: int,
) -> pd.DataFrame:
    frames = []
    for horizon in horizons:
        run = np.minimum(ep_out.steps_run, horizon)
        last = np.maximum(run - 1, 0)
        rows = np.arange(len(ep_task))
        if horizon == steps:
            speedup, regret = ep_out.final_speedup, ep_out.cum_regret
            tokens, cost = ep_out.tokens, ep_out.cost_usd
        else:
            speedup = np.where(run > 0, out.best_speedup[rows, last], 1.0)
            regret = np.where(run > 0, out.cum_regret[rows, last], 0.0)
            tokens = np.where(run > 0, out.tokens[rows, last], 0)
            cost = np.where(run > 0, out.cost_usd[rows, last], 0.0)
        served = ep_out.served if horizon == steps else np.full(len(ep_task), np.nan)
        frames.append(
            pd.DataFrame(
                {
                    "policy": policy,
                    "env": env.name,
                    "task_id": np.asarray(env.task_ids, dtype=object)[ep_task],
                    "seed": ep_seed,
                    "horizon": horizon,
                    "steps_run": run,
                    "truncated": run < horizon,
                    "coverage": served / np.maximum(ep_out.steps_run, 1),
                    "final_best_speedup": speedup,
                    "cum_regret": regret,
                    "tokens": tokens,
                    "cost_usd": cost,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def run_chunk_rows(
    spec: PolicySpec, env: Env, ep_task: np.ndarray, ep_seed: np.ndarray, prng: np.ndarray,
    erng: np.ndarray, n_init: np.ndarray, steps: int, horizons: Sequence[int], *,
    want_table: bool = True, workspace: Workspace | None = None,
) -> tuple[pd.DataFrame, pa.Table | None]:
    """Run one chunk of episodes (row e: task ep_task[e], seed ep_seed[e], RNG states prng[e]
    and erng[e]) with the compiled engine; its summary rows and, with want_table, its
    per-step RESULTS_SCHEMA rows. Pure: the same inputs give the same rows on any machine
    (the Ray backend, kbsim.replay.ray_backend, runs chunks through this too)."""
    if workspace is None:
        workspace = new_workspace(spec, env, steps, numba.get_num_threads())
    policy = str(spec)
    step_out, ep_out = new_outputs(len(ep_task), steps)
    run_chunk(spec, env, workspace, ep_task, n_init, prng, erng, steps, step_out, ep_out)
    summary = _summary_rows(policy, env, ep_task, ep_seed, step_out, ep_out, horizons, steps)
    table = (_step_table(policy, env, ep_task, ep_seed, step_out, ep_out.steps_run)
             if want_table else None)
    return summary, table


def sweep_arguments(
    policies: Sequence[str | PolicySpec],
    envs: Env | Sequence[Env],
    seeds: int | Sequence[int],
    steps: int,
    horizons: Sequence[int] | None,
) -> tuple[list[PolicySpec], list[Env], list[int], list[int]]:
    """Checked (specs, envs, seeds, horizons) of a sweep; one clear sentence on bad input."""
    specs = _as_specs(policies)
    env_list = [envs] if isinstance(envs, Env) else list(envs)
    seed_list = _seed_list(seeds)
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}.")
    horizon_list = sorted(set(horizons or [steps]))
    if horizon_list[0] < 1 or horizon_list[-1] > steps:
        raise ValueError(f"horizons must lie in 1..{steps}, got {horizon_list}.")
    if not specs:
        raise ValueError("no policy given.")
    return specs, env_list, seed_list, horizon_list


def write_sweep_manifest(out_dir: Path, specs: Sequence[PolicySpec], env_list: Sequence[Env],
                         seed_list: Sequence[int], steps: int, horizons: Sequence[int],
                         **extra: Any) -> None:
    """Create `out_dir` and write `_replay.json`: what the sweep runs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "_replay.json").write_text(json.dumps({
        "policies": [str(s) for s in specs],
        "envs": [{"env": e.name, "source": e.description, "tasks": list(e.task_ids),
                  "signature_timing": e.reveal} for e in env_list],
        "seeds": list(seed_list),
        "steps": steps,
        "horizons": list(horizons),
        **extra,
    }, indent=2))


def run_sweep(
    policies: Sequence[str | PolicySpec],
    envs: Env | Sequence[Env],
    seeds: int | Sequence[int],
    steps: int,
    *,
    out: str | Path | None = None,
    horizons: Sequence[int] | None = None,
    write_steps: bool = True,
    keep_steps: bool = True,
    chunk_episodes: int = 8192,
    threads: int | None = None,
    progress: bool = False,
    say: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run every policy on every task of every env for every seed, `steps` steps each.

    `seeds`: a count N (seeds 0..N-1) or explicit seeds. `horizons`: step counts to summarise
    (default [steps]; e.g. [20, 40] with steps=40 — policies are anytime, so the first 20
    steps of a 40-step episode are exactly a 20-step episode). With `out`, per-step rows are
    written as Parquet part files (unless write_steps=False) plus `_summary.parquet`; without
    it they are returned in memory (keep_steps). `threads` sets numba's thread count (the
    engine's worker threads). The compiled workers the sweep needs are loaded or compiled
    first; a compile is announced through `say` (default with `progress`: one line on stderr).
    """
    specs, env_list, seed_list, horizons = sweep_arguments(policies, envs, seeds, steps,
                                                             horizons)
    if threads is not None:
        numba.set_num_threads(threads)
    n_workers = numba.get_num_threads()
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        write_sweep_manifest(out_dir, specs, env_list, seed_list, steps, horizons)
    seed_arr = np.asarray(seed_list, np.int64)
    plans = []
    for env in env_list:
        n_tasks = len(env.task_ids)
        ep_task = np.repeat(np.arange(n_tasks, dtype=np.int64), len(seed_list))
        ep_seed = np.tile(seed_arr, n_tasks)
        pairs = [(env.task_ids[t], int(s)) for t, s in zip(ep_task, ep_seed, strict=True)]
        prng = episode_rngs("policy", pairs)
        erng = episode_rngs("env", pairs)
        n_init = np.asarray(env.n_init, np.int64)[ep_task]
        plans.append((env, ep_task, ep_seed, prng, erng, n_init))
    total_chunks = sum(
        -(-len(p[1]) // chunk_episodes) for p in plans
    ) * len(specs)
    summaries: list[pd.DataFrame] = []
    tables: list[pa.Table] = []
    if say is None and progress:
        say = _say_stderr
    # compile (or load) every worker first: a cold first run says so instead of a bar at 0 %
    prepare_workers([(spec, env) for spec in specs for env in env_list], steps, say)
    bar = tqdm(total=total_chunks, unit="chunk", disable=not progress, desc="replay")
    part = 0
    want_table = (out_dir is not None and write_steps) or (out_dir is None and keep_steps)
    kinds = engine_kinds({env.kind for env in env_list})
    for spec in specs:
        for env, ep_task, ep_seed, prng, erng, n_init in plans:
            workspace = new_workspace(spec, env, steps, n_workers, engine_kind=kinds[env.kind])
            for lo in range(0, len(ep_task), chunk_episodes):
                hi = min(lo + chunk_episodes, len(ep_task))
                chunk_summary, table = run_chunk_rows(
                    spec, env, ep_task[lo:hi], ep_seed[lo:hi], prng[lo:hi], erng[lo:hi],
                    n_init[lo:hi], steps, horizons, want_table=want_table, workspace=workspace,
                )
                summaries.append(chunk_summary)
                if table is not None:
                    if out_dir is not None:
                        atomic_write_parquet(out_dir / f"part-{part:06d}.parquet", table)
                    else:
                        tables.append(table)
                part += 1
                bar.update(1)
    bar.close()
    summary = pd.concat(summaries, ignore_index=True)
    if out_dir is not None:
        atomic_write_parquet(out_dir / "_summary.parquet",
                             pa.Table.from_pandas(summary, preserve_index=False))
    results = pa.concat_tables(tables) if tables else None
    return SweepResult(summary=summary, results=results, out=out_dir)
