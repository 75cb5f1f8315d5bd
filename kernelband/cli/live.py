"""`kernelband live`: the live loop, every attempt recorded to a trace."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from live.proposers.cli_options import proposer_from_cli, proposer_options


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


@click.command()
@click.option("--tasks", default=None, help="builtin | softmax,layernorm | tritonbench:PATH | "
              "module:PKG.MOD [builtin].")
@click.option("--policy", default=None, help="Policy spec, e.g. kernelband-v2:K=5 "
              "[kernelband-v2].")
@click.option("--steps", type=int, default=None, help="Attempts per task [40].")
@click.option("--seed", type=int, default=None, help="Seeds the policy and the proposer [0].")
@click.option("--out", type=click.Path(file_okay=False), default=None, required=False,
              help="Trace dataset directory to write.")
@click.option("--run-id", default=None, help="Run id in the trace [<policy>-s<seed>].")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default=None,
              help="cuda, or cpu (Triton interpreter, tiny shapes; timings flagged) [auto].")
@click.option("--profile", "profile_mode",
              type=click.Choice(["reps", "all", "roofline", "off"]), default=None,
              help="Nsight Compute: the representatives the policy asks for, every correct "
              "kernel; roofline: signatures from runtime, bytes and FLOPs, no profiler "
              "(also the fallback when ncu is missing or refuses); or none [reps].")
@click.option("--profile-lag", type=int, default=None,
              help="With --profile reps: the fewest steps between the policy asking for a "
              "signature and seeing Nsight Compute's; the roofline one until the profile is "
              "back, never waiting (0: wait for it) [1].")
@click.option("--gpu-memory", "gpu_memory_gib", type=float, default=None,
              help="GiB of GPU memory the evaluator may plan for (emulate a smaller card) "
              "[the whole card].")
@click.option("--in-flight", type=int, default=None, help="Tasks run concurrently [4].")
@click.option("--eval-workers", type=int, default=None,
              help="Evaluator processes: they compile and check side by side, and time one at "
              "a time [GPU: one per task in flight, at most 8; CPU: 1]. With --backend ray: "
              "per GPU actor [ceil(in-flight / actors), at most 8 and the cluster's CPUs per "
              "GPU].")
@click.option("--timing-patience", "timing_patience_s", type=float, default=None,
              metavar="SECONDS",
              help="On a GPU: the longest a candidate's timing lets new checks start before "
              "the checks in flight drain for it; timings asked for meanwhile share one drain "
              "(0: time each candidate as soon as checks drain, as before) [15].")
@click.option("--step-aside/--no-step-aside", "step_aside", default=None,
              help="On a GPU: checks in flight step aside for a batch of timings at their next "
              "torch call or Triton launch (their own GPU work done first), instead of holding "
              "the device to the end of a shape or of the operator's own test code [on].")
@click.option("--max-wall", "max_wall_s", type=float, default=None,
              help="Stop starting attempts after this many seconds (attempts in flight end; "
              "representatives not profiled by then are left to `kernelband traces profile`).")
@click.option("--eval-timeout", "eval_timeout_s", type=float, default=None,
              help="Seconds per candidate for checking and timing [120].")
@click.option("--shard", default=None, metavar="K/N",
              help="Run only share K of N of the tasks (sorted by name, every N-th from the "
              "K-th; 0 <= K < N), one process per GPU on copies of one run; merge the copies "
              "with `kernelband traces merge-shards` [all tasks].")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="YAML/JSON file of the options above; flags override it.")
@click.option("--resume", is_flag=True, help="Continue the run recorded in --out.")
@click.option("--retry-k0", is_flag=True, default=None,
              help="With --resume: evaluate again the k0 of tasks whose k0 failed on its own in "
              "the recorded run (they stay stopped otherwise), e.g. after an evaluator fix.")
@click.option("--compile-timing/--no-compile-timing", "compile_timing", default=None,
              help="Time each task's reference under torch.compile once, after its k0 "
              "(KernelBench: fast_p against torch.compile); off saves seconds to tens of "
              "seconds a task [on].")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local",
              show_default=True, help="local: this machine's GPU; ray: one Ray actor per GPU "
              "of a cluster evaluates and profiles, this process writes the trace "
              "(needs kernelband[ray]).")
@click.option("--address", default=None, help="With --backend ray: the cluster to join "
              "(auto | HOST:PORT) [a local Ray instance].")
@click.option("--actors", type=int, default=None, help="With --backend ray: GPU actors "
              "[every GPU of the cluster]; keep --in-flight >= actors.")
@proposer_options
def live(**values: Any) -> None:
    """Run the live loop: policy -> proposer -> evaluator -> profiler -> update -> trace row.

    Every attempt is written to the trace in --out as it finishes; a killed run continues with
    --resume, with no lost or duplicated step and the same policy state. At the end, a summary
    with the paper's metrics and where the best kernels were written (OUT/best/).

    \b
    Example:
        kernelband live --tasks builtin --policy kernelband-v2 --proposer mutate --steps 40 --out traces/run1
        kernelband live --tasks softmax --proposer openai --model gpt-4o --max-cost 5 --out traces/llm1
        kernelband live --tasks builtin --proposer mutate --in-flight 8 --backend ray --address auto --out traces/ray1
        kernelband live --tasks builtin --proposer mutate --shard 0/2 --out traces/run1-s0   # one GPU each
    """
    from live.runner.config import RunConfig, load_config_file
    from live.runner.resume import ResumeError

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    settings: dict[str, Any] = {}
    try:
        if values["config_file"]:
            settings.update(load_config_file(values["config_file"]))
        for key in ("tasks", "policy", "steps", "seed", "out", "run_id", "device",
                    "in_flight", "eval_workers", "max_wall_s", "eval_timeout_s",
                    "profile_lag", "gpu_memory_gib", "timing_patience_s", "step_aside",
                    "shard", "retry_k0", "compile_timing"):
            if values.get(key) is not None:
                settings[key] = values[key]
        if values.get("profile_mode") is not None:
            settings["profile"] = values["profile_mode"]
        if not settings.get("out"):
            raise click.UsageError("--out DIR is required (or `out:` in --config)")
        config = RunConfig(**settings)
        if config.retry_k0 and not values["resume"]:
            raise ValueError("--retry-k0 needs --resume: a new run evaluates every k0 anyway")
        proposer, budget = proposer_from_cli(values)
        from kbsim.policies.spec import parse_policy
        from live.tasks.registry import resolve_tasks
        from live.tasks.sources import LoadOptions

        parse_policy(config.policy)
        # a benchmark's gold checks run (or come from the cache) here, with a progress bar
        from live.runner.k0_step import check_k0_sources, refuse_without_k0
        from live.tasks.registry import tasks_without_k0

        # tasks without a k0 need a proposer that writes one: said before any gold check runs
        refuse_without_k0(tasks_without_k0(config.tasks) or [], proposer)
        check_k0_sources(resolve_tasks(config.tasks, LoadOptions(progress=not values["quiet"])),
                         proposer)
        if values["backend"] != "ray" and (values["address"] or values["actors"] is not None):
            raise ValueError("--address and --actors need --backend ray")
        if values["actors"] is not None and values["actors"] < 1:
            raise ValueError(f"--actors must be >= 1, got {values['actors']}")
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from None

    from live.runner.runner import run_live

    run: Any = run_live
    if values["backend"] == "ray":
        try:
            from live.backends.ray_live import run_live_ray
        except ImportError as exc:
            click.echo(f"kernelband live: --backend ray needs Ray ({exc}); "
                       "pip install 'kernelband[ray]'", err=True)
            sys.exit(1)

        def run(*args: Any, **kwargs: Any) -> Any:
            return run_live_ray(*args, address=values["address"], actors=values["actors"],
                                **kwargs)

    try:
        result = run(config, proposer, budget=budget, resume=values["resume"],
                     show_progress=not values["quiet"])
    except (FileExistsError, ResumeError, ValueError, RuntimeError) as exc:
        click.echo(f"kernelband live: {exc}", err=True)
        sys.exit(1)
    _print_summary(result)


def _print_summary(result: Any) -> None:
    from analysis.metrics import trace_metrics
    from kbsim.trace.reader import TraceError, load_trace

    if not result.tasks:
        click.echo(f"run {result.run_id}: this share holds none of the run's tasks; "
                   f"nothing written to {result.out}")
        return
    click.echo(f"\nrun {result.run_id} -> {result.out}")
    click.echo(f"{'task':<24} {'steps':>5} {'ref ms':>10} {'k0 ms':>10} {'best ms':>10} "
               f"{'vs ref':>7}  statuses")
    for t in result.tasks:
        statuses = " ".join(f"{k}={v}" for k, v in sorted(t.status_counts.items()))
        speedup = t.best_speedup_vs_ref
        click.echo(f"{t.task_id:<24} {t.steps:>5} {_fmt(t.ref_ms, '.4f'):>10} "
                   f"{_fmt(t.k0_ms, '.4f'):>10} {_fmt(t.best_ms, '.4f'):>10} "
                   f"{_fmt(speedup, '.2f'):>7}  {statuses}"
                   + (f"  [stopped: {t.stopped}]" if t.stopped else ""))
        for note in getattr(t, "notes", ()):
            click.echo(f"    note: {note}")
    try:
        steps = load_trace(result.out).steps_df()
    except TraceError as exc:
        # the run itself finished and its rows are on disk; only the summary cannot be read
        click.echo(f"\npaper metrics unavailable: {exc}", err=True)
        click.echo(f"best kernels: {result.out / 'best'}/")
        return
    steps = steps[steps["run_id"] == result.run_id]
    if len(steps):
        for row in trace_metrics(steps).to_dict("records"):
            click.echo(f"\nCorrect {row['correct_pct']:.1f}%  Fast@1 {row['fast1_pct']:.1f}%  "
                       f"geomean speedup over correct tasks {row['geomean_speedup']:.3f}x  "
                       f"cost ${row['total_cost_usd']:.4f}")
    click.echo(f"best kernels: {result.out / 'best'}/")
