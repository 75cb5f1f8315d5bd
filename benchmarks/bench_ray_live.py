"""Live collection throughput on Ray: the same run with 1, then 2 (or more) GPU actors.

Each configuration runs `LiveRunner` with a `RayEvaluatorPool` of N actors (one per GPU) on the
same tasks, policy, proposer and seed. With the `explore` policy (default) the decisions do not
depend on measured times, so every configuration evaluates exactly the same candidates and
attempts/s compare equal work. Timing starts once the actors are warm (their workers have
imported torch and triton; the driver's numba policy kernels are compiled before the first
configuration) and covers the whole run: k0 evaluations, proposals, candidate
compile + check + timing, trace writes. Each configuration gets a fresh Triton cache
(TRITON_CACHE_DIR, through the actors' runtime_env), so a later run does not reuse the earlier
one's compiled kernels.

Usage (on a machine with 2 GPUs)::

    python benchmarks/bench_ray_live.py --actors 1,2 --steps 8 --in-flight 8 \
        --json OUT_DIR/ray_live.json

Prints one line per configuration (attempts, evaluations, wall s, attempts/s) and the ratio of
each configuration's attempts/s to the first's (target for 2 GPUs vs 1: >= 1.8x).

Two ways to bound a run. ``--steps N``: every task makes N attempts; the run ends with a tail in
which only the slowest tasks are left, each with one candidate in flight (a task's attempts are
sequential), so more GPUs cannot shorten it, and short runs understate scaling. ``--max-wall S
--steps <large>``: a fixed window of S seconds in which every task stays busy (what a long
collection, cut into pieces by ``--max-wall``, sees); the wall time includes the drain of the
attempts in flight at the end. ``--workers W`` gives each GPU actor W evaluator workers sharing
its GPU (compile side by side, time alone), as the local runner does.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
#: Ray workers get the driver script's folder on sys.path, not the repository: name it for them
#: (kernelband need not be installed on the GPU host)
PYTHONPATH = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def _portable(value: object, out_dir: str) -> object:
    """`value` with the results' output folder written as ``OUT_DIR`` (no machine paths in
    recorded results)."""
    if isinstance(value, str) and out_dir not in ("", "."):
        return value.replace(out_dir.rstrip("/"), "OUT_DIR")
    return value


def warm_up_policy(policy: str) -> float:
    """Compile the driver's policy kernels (select / update / prepare, numba) before any timing,
    so the first configuration does not pay for it; returns the seconds it took."""
    import numpy as np

    from kbsim.policies.episode import Attempt, Episode
    from kbsim.policies.spec import parse_policy

    started = time.perf_counter()
    episode = Episode(parse_policy(policy), "warm-up", 0, 9)
    episode.add_member("k0", ms=1.0, phi=np.full(5, 1.0), rt6=np.zeros(6))
    for step in range(8):
        for idx in episode.wanted_signatures():
            episode.reveal(idx, [50.0, 50.0, 50.0], None)
        choice = episode.select()
        ms = 1.0 / (step + 2)
        attempt = (Attempt("ok", ms=ms, phi=np.full(5, ms), rt6=np.zeros(6), member=f"k{ms}")
                   if step % 2 else Attempt("compile_error"))
        episode.update(choice, attempt)
    return time.perf_counter() - started


PHASES = ("eval_latency_s", "compile_s", "check_s", "timing_s", "worker_overhead_s")


def phase_summary(results: list) -> dict[str, dict[str, float]]:
    """Median, 90th percentile and sum of each evaluation phase (seconds, inside the actors),
    so that where the time goes can be read from the results file."""
    import numpy as np

    summary = {}
    for name in PHASES:
        values = np.array([getattr(r, name) for r in results if getattr(r, name) is not None],
                          dtype=float)
        if values.size:
            summary[name] = {"median": float(np.median(values)),
                             "p90": float(np.percentile(values, 90)),
                             "sum": float(values.sum()), "n": int(values.size)}
    return summary


def run_one(n_actors: int, args: argparse.Namespace, work: Path, label: str) -> dict:
    from kbsim.trace.reader import load_trace
    from live.backends.ray_pool import RayEvaluatorPool
    from live.evaluator import EvaluatorConfig
    from live.proposers import make_proposer
    from live.runner import RunConfig
    from live.runner.runner import LiveRunner

    cache = work / f"triton-cache-{label}"
    cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    pool = RayEvaluatorPool(EvaluatorConfig(args.tasks, device=args.device, workers=args.workers,
                                            timeout_s=args.eval_timeout, static_check=True),
                            actors=n_actors, profile=False,
                            runtime_env={"env_vars": {"TRITON_CACHE_DIR": str(cache),
                                                      "PYTHONPATH": PYTHONPATH}})
    warm_s = time.perf_counter() - started
    out = work / f"trace-{label}"
    config = RunConfig(out=str(out), tasks=args.tasks, policy=args.policy, steps=args.steps,
                       seed=args.seed, device=args.device, profile="off",
                       in_flight=args.in_flight, eval_timeout_s=args.eval_timeout,
                       max_wall_s=args.max_wall)
    results: list = []
    evaluate = pool.evaluate

    def recording_evaluate(*a, **kw):  # keeps every EvalResult for the phase summary
        result = evaluate(*a, **kw)
        results.append(result)
        return result

    pool.evaluate = recording_evaluate  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        LiveRunner(config, make_proposer("mutate"), show_progress=False, evaluator=pool,
                   device_lock=False).run()
        wall_s = time.perf_counter() - started
        info = pool.device_info
        stats = dict(vars(pool.stats))
    finally:
        pool.close()
    steps = load_trace(out).steps_df()
    row = {
        "actors": n_actors,
        "workers_per_actor": args.workers,
        "devices": info.get("actor_devices"),
        "attempts": int(len(steps)),
        "evaluations": int(stats["calls"]),
        "statuses": {str(k): int(v) for k, v in steps["status"].value_counts().items()},
        "warm_up_s": warm_s,
        "wall_s": wall_s,
        "attempts_per_s": len(steps) / wall_s,
        "evaluations_per_s": stats["calls"] / wall_s,
        "pool_stats": stats,
        "phases_s": phase_summary(results),
    }
    print(f"actors={n_actors} x {args.workers} workers  attempts={row['attempts']}  "
          f"evaluations={row['evaluations']}  "
          f"wall={wall_s:.1f} s  attempts/s={row['attempts_per_s']:.3f}  "
          f"evaluations/s={row['evaluations_per_s']:.3f}  (actors warm in {warm_s:.1f} s)",
          flush=True)
    print("  median s per evaluation: " + "  ".join(
        f"{k.removesuffix('_s')}={v['median']:.2f}" for k, v in row["phases_s"].items()),
        flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", default="1,2",
                        help="actor counts to run, in order; repeat to check noise, e.g. "
                             "1,2,1,2 [1,2]")
    parser.add_argument("--workers", type=int, default=1,
                        help="evaluator workers per actor (share its GPU: compile side by "
                             "side, time alone) [1]")
    parser.add_argument("--tasks", default="builtin")
    parser.add_argument("--policy", default="explore")
    parser.add_argument("--steps", type=int, default=8, help="attempts per task [8]")
    parser.add_argument("--max-wall", type=float, default=None,
                        help="a fixed window instead: start no attempt after this many seconds "
                             "(with --steps large enough that no task finishes first, every "
                             "task stays busy and the run's tail does not weigh in)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--in-flight", type=int, default=8, help="tasks run concurrently [8]")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--eval-timeout", type=float, default=120.0)
    parser.add_argument("--address", default=None, help="Ray cluster [a local instance]")
    parser.add_argument("--work", default=None, help="directory for traces [a temp dir]")
    parser.add_argument("--json", default=None, help="write the results here")
    args = parser.parse_args(argv)

    import ray

    counts = [int(x) for x in args.actors.split(",") if x.strip()]
    job_env = {"env_vars": {"PYTHONPATH": PYTHONPATH}}
    if args.address:
        ray.init(address=args.address, runtime_env=job_env)
    else:
        ray.init(include_dashboard=False, log_to_driver=False, runtime_env=job_env)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    print(f"ray {ray.__version__}: {gpus} GPU(s), "
          f"{int(ray.cluster_resources().get('CPU', 0))} CPU(s) in the cluster", flush=True)
    if args.device == "cuda" and max(counts) > gpus:
        print(f"need {max(counts)} GPUs, the cluster has {gpus}", file=sys.stderr)
        return 2
    print(f"driver's policy kernels compiled in {warm_up_policy(args.policy):.1f} s", flush=True)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench_ray_live_"))
    rows = [run_one(n, args, work, f"{i}-actors{n}") for i, n in enumerate(counts)]
    base = rows[0]["attempts_per_s"]
    for row in rows:
        row["ratio_vs_first"] = row["attempts_per_s"] / base
        print(f"actors={row['actors']}: {row['ratio_vs_first']:.2f}x the attempts/s of "
              f"actors={rows[0]['actors']}")
    if args.max_wall is None and len({(r["attempts"], r["evaluations"]) for r in rows}) > 1:
        print("note: the configurations did different work (a policy whose decisions depend on "
              "timings?); compare evaluations/s", flush=True)
    if args.json:
        out_dir = str(Path(args.json).parent)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(),
            "command": " ".join([os.path.basename(sys.executable),
                                 *(_portable(arg, out_dir) for arg in sys.argv)]),
            "config": {k: _portable(v, out_dir) for k, v in vars(args).items()},
            "runs": rows,
        }, indent=2))
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
