"""`kernelband replay`: policies x tasks x seeds against a trace (tape, fitted) or a synthetic env.

Thin: parses options, builds the environment(s) with `kbsim.envs`, runs `kbsim.replay.run_sweep`
and prints `kbsim.replay.summary.format_table`. Bad input is one sentence on stderr and exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kbsim.envs.registry import ENVIRONMENTS, build_env


def _fail(message: str) -> None:
    click.echo(f"kernelband replay: {message}", err=True)
    sys.exit(1)


@click.command()
@click.option("--trace", "traces", multiple=True, type=click.Path(path_type=Path),
              help="Trace dataset directory (repeatable: several are replayed together).")
@click.option("--synthetic", "synthetic_spec", default=None,
              help="Synthetic instance spec, e.g. `default`, `fixed-pool,pool=1000`, "
                   "`minimax,horizon=200` or `K=3,n0=1,L=1.0,noise=0.1,fail=0.2,dim=5`.")
@click.option("--policy", "policies", multiple=True,
              help="Policy spec NAME[:k=v,...] (repeatable), e.g. kernelband-v2:K=5,c=1.0.")
@click.option("--preset", default=None,
              help="Named policy grid: paper-ablation, baselines, k-sweep, components (adds to "
                   "--policy; components also prints each part's effect against full v2).")
@click.option("--seeds", default=10, show_default=True, type=int, help="Seeds 0..N-1 per task.")
@click.option("--steps", default=None, type=int,
              help="Steps per episode (default: the preset's, else 40).")
@click.option("--env", "env_name", type=click.Choice(list(ENVIRONMENTS)),
              default=None, help="Environment (default: synthetic with --synthetic, else tape).")
@click.option("--on-exhaust", type=click.Choice(["resample", "nearest", "stop"]),
              default="resample", show_default=True, help="Tape env: when a tape runs out.")
@click.option("--knn", default=5, show_default=True, type=int,
              help="Fitted env: recorded neighbours per prediction.")
@click.option("--reveal", default=None,
              help="Trace envs: when v2 sees Nsight Compute signatures (issue 15): `recorded` "
                   "(the trace's signature-reveals.jsonl; default when it has one), `delays` "
                   "(drawn from its recorded delays), `lag:N`, or `at-once` (default "
                   "otherwise); before that, the kernel's roofline_sig.")
@click.option("--tasks", default=None, help="Comma-separated task ids to keep (trace envs).")
@click.option("--threads", default=None, type=int, help="numba threads (default: all cores).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Write per-step results (RESULTS_SCHEMA part files) and _summary.parquet.")
@click.option("--summary-only", is_flag=True,
              help="With --out: write only _summary.parquet, not the per-step rows.")
@click.option("--progress/--no-progress", default=True, show_default=True,
              help="Progress bar over chunks (stderr).")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local",
              show_default=True,
              help="local: numba threads on this machine; ray: chunks as Ray tasks on a cluster "
                   "(needs kernelband[ray]).")
@click.option("--address", default=None,
              help="With --backend ray: the cluster to join (`auto` or HOST:PORT; default: a "
                   "local Ray instance).")
def replay(
    traces: tuple[Path, ...],
    synthetic_spec: str | None,
    policies: tuple[str, ...],
    preset: str | None,
    seeds: int,
    steps: int | None,
    env_name: str | None,
    on_exhaust: str,
    knn: int,
    reveal: str | None,
    tasks: str | None,
    threads: int | None,
    out: Path | None,
    summary_only: bool,
    progress: bool,
    backend: str,
    address: str | None,
) -> None:
    """Replay bandit policies against a trace (tape, fitted) or a synthetic instance.

    Prints, per policy x env x horizon, the mean final best speedup and the mean cumulative
    pseudo-regret with 95% intervals over episodes (tasks x seeds), tape coverage and the share
    of episodes a `stop` tape truncated.

    \b
    Example:
        kernelband replay --trace traces/explore --policy kernelband-v2 --policy greedy --seeds 100 --steps 40 --env tape --out out/
        kernelband replay --synthetic default,tasks=5 --preset paper-ablation --seeds 100 --out ablation/
        kernelband replay --synthetic fixed-pool,pool=1000 --policy kernelband-v2 --policy ucb-flat --steps 200
        kernelband replay --trace traces/explore-h200 --preset components --seeds 100
        kernelband replay --synthetic default,tasks=183 --preset paper-ablation --seeds 1000 --backend ray --address auto --out ablation/
    """
    if address is not None and backend != "ray":
        _fail("--address needs --backend ray.")
    try:
        _replay(traces, synthetic_spec, policies, preset, seeds, steps, env_name, on_exhaust, knn,
                tasks, threads, out, summary_only, progress, backend, address, reveal)
    except (ValueError, FileNotFoundError, NotADirectoryError) as err:
        _fail(str(err).rstrip(".") + ".")


def _replay(traces, synthetic_spec, policies, preset, seeds, steps, env_name, on_exhaust, knn,
            tasks, threads, out, summary_only, progress, backend="local", address=None,
            reveal=None) -> None:
    from kbsim.policies.spec import parse_policy
    from kbsim.replay.presets import get_preset

    specs = [parse_policy(p) for p in policies]
    horizons = None
    if preset is not None:
        grid = get_preset(preset)
        specs += [parse_policy(p) for p in grid.policies]
        steps = steps or grid.steps
        horizons = [h for h in grid.horizons if h <= steps] or None
    if not specs:
        raise ValueError("give at least one --policy or a --preset")
    specs = list({str(spec): spec for spec in specs}.values())  # once each, first order kept
    steps = steps or 40
    if horizons is not None and steps not in horizons:
        horizons.append(steps)
    if traces and synthetic_spec:
        raise ValueError("give either --trace or --synthetic, not both")
    if not traces and not synthetic_spec:
        raise ValueError("give a trace dataset (--trace DIR) or a synthetic spec (--synthetic)")
    env_name = env_name or ("synthetic" if synthetic_spec else "tape")
    from_trace = ENVIRONMENTS[env_name].source == "trace"
    if synthetic_spec is not None:
        if from_trace:
            raise ValueError(f"--env {env_name} needs --trace; --synthetic implies --env synthetic")
        env = build_env(env_name, synthetic_spec)
    else:
        if not from_trace:
            raise ValueError(f"--env {env_name} needs --synthetic SPEC, not --trace")
        for path in traces:
            if not path.is_dir():
                raise ValueError(f"trace directory {path} does not exist")
        from kbsim.envs.recorded import load_tables
        from kbsim.trace.reveals import load_reveals

        tables = load_tables([str(p) for p in traces])
        task_list = [t.strip() for t in tasks.split(",") if t.strip()] if tasks else None
        env = build_env(env_name, tables, tasks=task_list,
                        description=",".join(str(p) for p in traces), on_exhaust=on_exhaust,
                        knn=knn, reveals=load_reveals([str(p) for p in traces]), reveal=reveal)
        if env.reveal != "at-once":
            click.echo(f"signature timing: {env.reveal}")
    if threads is not None and threads < 1:
        raise ValueError(f"--threads must be >= 1, got {threads}")
    if threads is not None:
        import numba

        if threads > numba.config.NUMBA_NUM_THREADS:
            raise ValueError(
                f"--threads {threads} exceeds the {numba.config.NUMBA_NUM_THREADS} numba can use"
            )
    from kbsim.replay.summary import format_table, summarize
    from kbsim.replay.sweep import run_sweep

    if backend == "ray":
        if threads is not None:
            raise ValueError("--threads is for --backend local; Ray chunks use one CPU each")
        try:
            from kbsim.replay.ray_backend import run_sweep_ray
        except ImportError as err:
            raise ValueError(
                f"--backend ray needs Ray ({err}); pip install 'kernelband[ray]'"
            ) from None

        try:
            result = run_sweep_ray(specs, env, seeds, steps, out=out, horizons=horizons,
                                   write_steps=not summary_only, keep_steps=False,
                                   address=address, progress=progress)
        except RuntimeError as err:  # a chunk failed after its retries: one sentence
            raise ValueError(str(err)) from None
    else:
        result = run_sweep(specs, env, seeds, steps, out=out, horizons=horizons,
                           write_steps=not summary_only, keep_steps=False, threads=threads,
                           progress=progress)
    click.echo(format_table(summarize(result.summary)))
    from analysis.verdict import ranking_from_summary

    ranking = ranking_from_summary(result.summary)
    if ranking:
        click.echo(f"\n{ranking}")
    if preset == "components":
        from analysis.components import component_table_from_summary, component_text

        components = component_table_from_summary(result.summary)
        if not components.empty:
            click.echo(f"\n{component_text(components)}")
    if out is not None:
        click.echo(f"results written to {out}")
