"""`kernelband tasks list|check` and `kernelband eval`: thin wrappers over live.evaluator."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


@click.group()
def tasks() -> None:
    """List and check kernel optimization tasks.

    \b
    Example:
        kernelband tasks list
        kernelband tasks check --tasks softmax,layernorm --device cuda --out ref_timings.json
    """


@tasks.command("list")
@click.option("--tasks", "task_spec", default="builtin", show_default=True,
              help="Task spec: builtin, a comma list of names, tritonbench:PATH or module:PKG.MOD.")
def list_tasks(task_spec: str) -> None:
    """List tasks: name, category, number of performance shapes, source.

    \b
    Example:
        kernelband tasks list --tasks builtin
    """
    rows = _resolve_or_fail(task_spec)
    width = max([len(t.name) for t in rows] + [4])
    click.echo(f"{'name':<{width}}  {'category':<12}  {'perf shapes':>11}  source")
    for t in rows:
        click.echo(f"{t.name:<{width}}  {t.category:<12}  {len(t.perf_shapes):>11}  {t.source}")


def _resolve_or_fail(task_spec: str) -> list:
    """The tasks of `task_spec`, or one sentence and exit 1 (unknown name, not a folder...)."""
    from live.evaluator.task_source import resolve_tasks

    try:
        return resolve_tasks(task_spec)
    except (ValueError, KeyError, ImportError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None


@tasks.command("check")
@click.option("--tasks", "task_spec", default="builtin", show_default=True,
              help="Task spec: builtin, a comma list of names, tritonbench:PATH or module:PKG.MOD.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="cpu runs Triton's interpreter on the tiny cpu_shapes.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write the machine's reference and k0 timings here (JSON).")
@click.option("--timeout", "timeout_s", type=float, default=300.0, show_default=True,
              help="Per-candidate compile and run limit, seconds.")
@click.option("--gpu-memory", "gpu_memory_gib", type=float, default=None,
              help="GiB of GPU memory the evaluator may plan for (emulate a smaller card); "
              "shapes that cannot fit are dropped with a note [the whole card].")
def check(task_spec: str, device: str, out: str | None, timeout_s: float,
          gpu_memory_gib: float | None) -> None:
    """Gold-vs-gold: each task's k0 against its reference in the real evaluator.

    Prints one row per task and exits non-zero if any k0 fails. CPU timings are
    interpreter wall clock, flagged as such, never GPU figures.

    \b
    Example:
        kernelband tasks check --device cuda --out results/ref_h100.json
    """
    from live.evaluator.gold import check_tasks, write_reference_timings

    _resolve_or_fail(task_spec)
    click.echo(f"{'task':<20} {'status':<14} {'ref ms':>10} {'k0 ms':>10} {'speedup':>8} "
               f"{'cv %':>6}  backend")

    def show(c) -> None:  # noqa: ANN001 - GoldCheck
        r = c.result
        cv = None if r.timing_cv is None else 100 * r.timing_cv
        click.echo(f"{c.task_id:<20} {r.status:<14} {_fmt(r.ref_ms):>10} {_fmt(r.ms):>10} "
                   f"{_fmt(r.speedup, '.3f'):>8} {_fmt(cv, '.2f'):>6}  {r.timing_backend}")
        if r.error:
            click.echo(f"    {r.error}")

    from live.evaluator import Evaluator

    with Evaluator(task_spec, device=device, timeout_s=timeout_s, compile_timeout_s=timeout_s,
                   gpu_memory_gib=gpu_memory_gib) as ev:
        checks, info = check_tasks(task_spec, device=device, timeout_s=timeout_s,
                                   on_result=show, evaluator=ev)
        for task_id, notes in (ev.memory_plan.notes() if ev.memory_plan else {}).items():
            for note in notes:
                click.echo(f"note: {task_id}: {note}")
    failed = [c.task_id for c in checks if not c.passed]
    click.echo(f"{len(checks) - len(failed)}/{len(checks)} passed on {info.get('device_name')}")
    if out:
        write_reference_timings(out, task_spec, checks, info)
        click.echo(f"reference timings written to {out}")
    if failed or not checks:
        sys.exit(1)


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--task", "task_name", required=True, help="Task name, e.g. softmax.")
@click.option("--tasks", "task_spec", default="builtin", show_default=True,
              help="Task spec the task comes from.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--baseline", type=click.Choice(["reference", "k0"]), default="reference",
              show_default=True, help="Time against the PyTorch reference or the task's k0.")
@click.option("--timeout", "timeout_s", type=float, default=120.0, show_default=True)
@click.option("--profile/--no-profile", default=False, help="Also run Nsight Compute.")
def eval_candidate(file: str, task_name: str, task_spec: str, device: str, seed: int,
                   baseline: str, timeout_s: float, profile: bool) -> None:
    """Evaluate one candidate kernel file against a task and print the full record (JSON).

    Exit code 0 if the candidate is correct, 1 otherwise.

    \b
    Example:
        kernelband eval my_softmax.py --task softmax
        kernelband eval cand.py --task add --device cpu --baseline k0
    """
    from live.evaluator import Evaluator
    from live.evaluator.task_source import resolve_task

    code = Path(file).read_text()
    baseline_code = resolve_task(task_spec, task_name).k0 if baseline == "k0" else None
    with Evaluator(task_spec, device=device, timeout_s=timeout_s,
                   compile_timeout_s=timeout_s) as ev:
        result = ev.evaluate(task_name, code, seed=seed, baseline_code=baseline_code)
    record = result.to_dict()
    if profile and result.correct:
        from dataclasses import asdict

        from live.profiler import NcuProfiler

        record["profile"] = asdict(NcuProfiler(task_spec, device=ev.device).profile(task_name,
                                                                                      code))
    click.echo(json.dumps(record, indent=2, default=str))
    sys.exit(0 if result.correct else 1)
