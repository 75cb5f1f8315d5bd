"""`run_live_ray`: the live loop with evaluation and profiling on a Ray cluster's GPUs.

What runs where: the driver (this process) runs `LiveRunner` unchanged — the policies, the
proposers (LLM calls or mutations), the budget and the one `TraceWriter` — so every trace row is
written by the driver, in the same order and with the same atomic part files as a local run. Only
`evaluate` and `profile` calls travel, to `RayEvaluatorPool`'s actors (one per GPU, each with
``eval_workers`` evaluator processes sharing its GPU like the local runner's). Tasks run in the
runner's threads (``in_flight`` of them), so ``in_flight`` should be at least actors x workers
to keep every worker busy.
"""

from __future__ import annotations

import logging
from pathlib import Path

import ray

from live.backends.ray_pool import RayEvaluatorPool
from live.devices import EVAL_WORKERS_CAP, worker_count
from live.proposers.base import Proposer
from live.proposers.budget import Budget
from live.runner.config import RunConfig
from live.runner.runner import LiveRunner, RunResult

log = logging.getLogger(__name__)


def actor_workers(config: RunConfig, actors: int | None, address: str | None = None, *,
                  cluster: dict[str, float] | None = None) -> int:
    """Evaluator workers per GPU actor: ``config.eval_workers`` when set; else one on CPU, and
    on GPUs enough to fill the tasks in flight (``ceil(in_flight / actors)``, at most 8, the
    local runner's cap, and at most the cluster's CPUs per actor: each worker reserves a CPU, so
    more would leave actors unscheduled). `cluster`: Ray's cluster resources (default: asked
    for, starting or joining Ray at `address`).
    """
    device, parallel, cores = config.device, 1, 1
    if not config.eval_workers and device != "cpu":
        if cluster is None:
            if not ray.is_initialized():
                ray.init(address=address)
            cluster = ray.cluster_resources()
        if actors is None:
            actors = int(cluster.get("GPU", 0))
        if actors < 1:
            device = "cpu"  # device auto on a cluster without GPUs: the pool runs one CPU actor
        else:
            device = "cuda"
            parallel = -(-config.in_flight // actors)
            cores = int(cluster.get("CPU", 0) // actors) or 1
    return worker_count(device, asked=config.eval_workers, parallel=parallel, cores=cores,
                        gpu_cap=EVAL_WORKERS_CAP)


def run_live_ray(
    config: RunConfig,
    proposer: Proposer,
    *,
    budget: Budget | None = None,
    resume: bool = False,
    show_progress: bool = True,
    address: str | None = None,
    actors: int | None = None,
    actor_cpus: float = 1.0,
) -> RunResult:
    """`run_live` with one Ray actor per GPU (`actors`: default every GPU of the cluster), each
    running `actor_workers` evaluator workers.

    `address`: the cluster to join when Ray is not initialised yet (``auto``, ``HOST:PORT``;
    None starts a local instance).
    """
    workers = actor_workers(config, actors, address)
    pool = RayEvaluatorPool(
        # each actor's GPU lock batches its timings like the local runner's (NOTE D81)
        config.evaluator_config(workers), actors=actors, profile=config.profile != "off",
        profile_cache_dir=Path(config.out).resolve() / ".profile-cache", actor_cpus=actor_cpus,
        address=address,
    )
    try:
        n_actors = pool.device_info["gpu_actors"]
        if config.in_flight < n_actors:
            log.warning("in_flight=%d < %d actors: only %d GPUs can be busy at once",
                        config.in_flight, n_actors, config.in_flight)
        elif config.in_flight < n_actors * workers:
            log.warning("in_flight=%d < %d actors x %d workers: some workers stay idle",
                        config.in_flight, n_actors, workers)
        runner = LiveRunner(
            config, proposer, budget=budget, resume=resume, show_progress=show_progress,
            evaluator=pool, profiler=pool.profiler if config.profile != "off" else None,
            device_lock=False,
        )
        result = runner.run()
    finally:
        pool.close()
    stats = pool.stats
    if stats.actors_lost:
        log.warning("ray pool: %d actor(s) lost and replaced, %d call(s) re-queued, %d given up",
                    stats.actors_lost, stats.requeued, stats.given_up)
    return result
