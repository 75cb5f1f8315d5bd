"""`run_sweep_ray`: the replay sweep of `kbsim.replay.sweep.run_sweep`, cut into chunks that run
as Ray tasks on a cluster (`kernelband replay --backend ray [--address ADDR]`).

Chunks are the local backend's: one policy x one environment x a contiguous range of its
(task, seed) episodes, enumerated in the same order. Each chunk is one Ray task that runs the
numba engine (`run_chunk`, one worker thread per CPU of the task) and sends back its summary
rows and its per-step RESULTS_SCHEMA table; the driver writes each part file as soon as its
chunk arrives, named by the chunk's index, so the output directory holds the same parts as the
local backend's (with the same ``chunk_episodes``) whatever order the chunks finish in.

Results equal the local backend's: an episode depends only on its own two RNG states, derived from
(seed, task) on the driver (`kbsim.rng.episode_rngs`), never on the worker, the chunking or the
thread count (see `kbsim.replay.engine`).

Failures: a chunk whose worker process or node is lost, or that raises, is run again by Ray
(`max_retries`); chunks are pure functions of their inputs, so a retried chunk gives the same rows
and, as the driver writes a chunk only once its result is back, no row is written twice. A chunk
that still fails after its retries stops the sweep with an error naming it; the parts already
written stay.

Ray is imported only here (and only when this module is), so the local backend stays Ray-free.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import ray
from tqdm import tqdm

from kbsim.envs.data import Env, EnvData
from kbsim.policies.spec import PolicySpec
from kbsim.replay.sweep import (
    SweepResult,
    sweep_arguments,
    write_sweep_manifest,
)
from kbsim.rng import episode_rngs
from kbsim.trace.layout import atomic_write_parquet


@dataclass(frozen=True)
class ChunkJob:
    """One chunk: policy `spec` on episodes ``lo:hi`` of environment number `env_index`."""

    index: int  # position in the local backend's chunk order (names the part file)
    spec: PolicySpec
    env_index: int
    lo: int
    hi: int

    def describe(self, envs: Sequence[Env]) -> str:
        return (f"chunk {self.index} ({self.spec} on {envs[self.env_index].name}, "
                f"episodes {self.lo}..{self.hi - 1})")


@dataclass(frozen=True)
class EpisodePlan:
    """The (task, seed) episodes of one environment, in the local backend's order (task-major),
    with each episode's two RNG states."""

    ep_task: np.ndarray  # (E,) int64 task index
    ep_seed: np.ndarray  # (E,) int64
    prng: np.ndarray  # (E, R) policy RNG states
    erng: np.ndarray  # (E, R) environment RNG states
    n_init: np.ndarray  # (E,) int64 initial pool size


def plan_episodes(env: Env, seed_list: Sequence[int]) -> EpisodePlan:
    """Every (task, seed) episode of `env`, enumerated exactly as `run_sweep` does."""
    seed_arr = np.asarray(list(seed_list), np.int64)
    n_tasks = len(env.task_ids)
    ep_task = np.repeat(np.arange(n_tasks, dtype=np.int64), len(seed_arr))
    ep_seed = np.tile(seed_arr, n_tasks)
    pairs = [(env.task_ids[t], int(s)) for t, s in zip(ep_task, ep_seed, strict=True)]
    prng = episode_rngs("policy", pairs)
    erng = episode_rngs("env", pairs)
    n_init = np.asarray(env.n_init, np.int64)[ep_task]
    return EpisodePlan(ep_task, ep_seed, prng, erng, n_init)


def plan_chunks(specs: Sequence[PolicySpec], plans: Sequence[EpisodePlan],
                chunk_episodes: int) -> list[ChunkJob]:
    """Chunks in the local backend's order: policy-major, then environment, then episodes."""
    if chunk_episodes < 1:
        raise ValueError(f"chunk_episodes must be >= 1, got {chunk_episodes}.")
    jobs = []
    for spec in specs:
        for env_index, plan in enumerate(plans):
            n = len(plan.ep_task)
            for lo in range(0, n, chunk_episodes):
                jobs.append(ChunkJob(len(jobs), spec, env_index, lo, min(lo + chunk_episodes, n)))
    return jobs


def _writable_env(env: Env) -> Env:
    """`env` with its arrays copied out of Ray's (read-only) object store."""
    data = EnvData(*(np.array(a, copy=True) for a in env.data))
    return env._replace(data=data)


def _chunk_task(spec_text: str, env: Env, ep_task: np.ndarray, ep_seed: np.ndarray,
                prng: np.ndarray, erng: np.ndarray, n_init: np.ndarray, steps: int,
                horizons: list[int], want_table: bool,
                threads: int) -> tuple[pd.DataFrame, pa.Table | None]:
    """Body of the Ray task: run one chunk with the numba engine on `threads` threads.

    Every array is copied first: Ray hands arrays out of its object store read-only, and numba
    types a read-only array differently (a fresh compilation of the whole engine); for the same
    reason the policy travels as its canonical text (``parse_policy(str(spec)) == spec``)."""
    import numba

    from kbsim.policies.spec import parse_policy
    from kbsim.replay.sweep import run_chunk_rows

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    return run_chunk_rows(parse_policy(spec_text), _writable_env(env), np.array(ep_task),
                          np.array(ep_seed), np.array(prng), np.array(erng), np.array(n_init),
                          steps, horizons, want_table=want_table)


def connect(address: str | None = None, **init_kwargs: Any) -> None:
    """Join the Ray cluster at `address` (``auto``: the one started on this node with
    ``ray start``), or start a local instance with None; no-op when Ray is already up."""
    if not ray.is_initialized():
        ray.init(address=address, **init_kwargs)


def _default_chunk_episodes(n_episodes: int, n_policies: int) -> int:
    """About four chunks per CPU of the cluster (enough to balance, few enough to stay cheap)."""
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    per_policy = max(1, -(-4 * cpus // max(1, n_policies)))
    return int(min(8192, max(64, -(-n_episodes // per_policy))))


def run_sweep_ray(
    policies: Sequence[str | PolicySpec],
    envs: Env | Sequence[Env],
    seeds: int | Sequence[int],
    steps: int,
    *,
    out: str | Path | None = None,
    horizons: Sequence[int] | None = None,
    write_steps: bool = True,
    keep_steps: bool = True,
    chunk_episodes: int | None = None,
    address: str | None = None,
    cpus_per_chunk: int = 1,
    max_retries: int = 3,
    max_in_flight: int | None = None,
    progress: bool = False,
) -> SweepResult:
    """`run_sweep` on Ray: same arguments and the same `SweepResult`; see the module docstring.

    `address`: the cluster to join (None: the Ray instance already initialised in this process,
    else a new local one). `chunk_episodes`: episodes per chunk (default: about four chunks per
    cluster CPU). `cpus_per_chunk`: CPUs each chunk reserves and numba threads it uses.
    `max_retries`: runs of a failed or lost chunk after its first. `max_in_flight`: chunks
    submitted at once (default: twice the cluster's CPUs), which bounds the driver's memory.
    """
    specs, env_list, seed_list, horizon_list = sweep_arguments(policies, envs, seeds, steps,
                                                                 horizons)
    if cpus_per_chunk < 1:
        raise ValueError(f"cpus_per_chunk must be >= 1, got {cpus_per_chunk}.")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}.")
    connect(address)
    plans = [plan_episodes(env, seed_list) for env in env_list]
    if chunk_episodes is None:
        chunk_episodes = _default_chunk_episodes(max(len(p.ep_task) for p in plans), len(specs))
    jobs = plan_chunks(specs, plans, chunk_episodes)
    out_dir = Path(out) if out is not None else None
    if out_dir is not None:
        write_sweep_manifest(out_dir, specs, env_list, seed_list, steps, horizon_list,
                             backend="ray")
    want_table = (out_dir is not None and write_steps) or (out_dir is None and keep_steps)
    remote = ray.remote(_chunk_task)
    # task names (Ray's dashboard, and a worker's process title while it runs the chunk) say
    # which sweep and chunk: kernelband_replay_<sweep id>_chunk<index>
    sweep_id = uuid.uuid4().hex[:8]
    env_refs = [ray.put(env) for env in env_list]
    if max_in_flight is None:
        max_in_flight = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))

    summaries: dict[int, pd.DataFrame] = {}
    tables: dict[int, pa.Table] = {}
    pending: dict[ray.ObjectRef, ChunkJob] = {}
    queue = list(reversed(jobs))
    bar = tqdm(total=len(jobs), unit="chunk", disable=not progress, desc="replay (ray)")

    def submit(job: ChunkJob) -> None:
        plan = plans[job.env_index]
        part = slice(job.lo, job.hi)
        ref = remote.options(
            num_cpus=cpus_per_chunk, max_retries=max_retries, retry_exceptions=True,
            name=f"kernelband_replay_{sweep_id}_chunk{job.index}",
        ).remote(
            str(job.spec), env_refs[job.env_index], plan.ep_task[part], plan.ep_seed[part],
            plan.prng[part], plan.erng[part], plan.n_init[part], steps, horizon_list,
            want_table, cpus_per_chunk)
        pending[ref] = job

    try:
        while queue or pending:
            while queue and len(pending) < max_in_flight:
                submit(queue.pop())
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                job = pending.pop(ref)
                try:
                    summary, table = ray.get(ref)
                except ray.exceptions.RayError as err:
                    raise RuntimeError(
                        f"{job.describe(env_list)} failed after {max_retries} retries: "
                        f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                    ) from err
                summaries[job.index] = summary
                if table is not None:
                    if out_dir is not None:
                        atomic_write_parquet(out_dir / f"part-{job.index:06d}.parquet", table)
                    else:
                        tables[job.index] = table
                bar.update(1)
    finally:
        bar.close()
        for ref in pending:
            ray.cancel(ref, force=True)
    summary = pd.concat([summaries[i] for i in sorted(summaries)], ignore_index=True)
    if out_dir is not None:
        atomic_write_parquet(out_dir / "_summary.parquet",
                             pa.Table.from_pandas(summary, preserve_index=False))
    results = pa.concat_tables([tables[i] for i in sorted(tables)]) if tables else None
    return SweepResult(summary=summary, results=results, out=out_dir)
