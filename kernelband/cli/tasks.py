"""`kernelband tasks list|check` and `kernelband eval`: thin wrappers over live.evaluator."""

from __future__ import annotations

import dataclasses
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
        kernelband tasks k0 --tasks kernelbench:KernelBench@level1 --device cuda --out k0-out
    """


def _load_options(f):  # noqa: ANN001, ANN202 - a click decorator
    """The options every command that loads a task spec shares."""
    f = click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON document (tasks, skipped with reasons, stats).")(f)
    f = click.option("--check-workers", type=int, default=None,
                     help="Parallel gold-check workers [one per CPU core, at most 16 on a "
                     "GPU].")(f)
    f = click.option("--no-cache", is_flag=True,
                     help="Re-run every load-time gold check instead of reusing cached "
                     "results (kept in ~/.cache/kernelband or $KERNELBAND_CACHE_DIR).")(f)
    return f


def _load_or_fail(task_spec: str, device: str, no_cache: bool, workers: int | None,
                  progress: bool, timeout_s: float = 180.0):  # noqa: ANN202 - Loaded
    """The tasks of `task_spec` and what its source skipped, or one sentence and exit 1."""
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions

    options = LoadOptions(device=device, use_cache=not no_cache, progress=progress,
                          workers=workers, timeout_s=timeout_s)
    try:
        return load_tasks(task_spec, options)
    except (ValueError, KeyError, ImportError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None


def _report_skipped(loaded) -> None:  # noqa: ANN001 - live.tasks.skips.Loaded
    """The table of skipped tasks and the load's one-line summary (to stderr: stdout keeps the
    task rows)."""
    from live.tasks.skips import skip_table

    if loaded.skipped:
        click.echo(f"\nskipped {len(loaded.skipped)} (one reason each; 'plain script': does the "
                   "operator also fail when run as `python <op>.py` here?):", err=True)
        for line in skip_table(loaded.skipped):
            click.echo("  " + line, err=True)
        hollow = [s for s in loaded.skipped if s.hollow]
        if hollow:
            click.echo("why a passing plain script is hollow:", err=True)
            for s in hollow:
                click.echo(f"  {s.op}: {s.hollow}", err=True)
    stats = loaded.stats
    if stats:
        click.echo(f"{stats['passed']}/{stats['operators']} operators passed gold-vs-gold on "
                   f"{stats['device_name']} ({stats['checked']} checked, {stats['cached']} "
                   f"from the cache, {stats['seconds']:.1f} s)", err=True)
    if not loaded.tasks:
        why = (f"all {len(loaded.skipped)} were skipped (reasons above)" if loaded.skipped
               else "the spec names no task")
        click.echo(f"no task loaded: {why}.", err=True)


def _sanitizer_setup(task_spec: str, option: str) -> tuple[Path, str]:
    """The TritonBench-G folder of `task_spec` and compute-sanitizer's path, for `option`; one
    sentence and exit 1 where it cannot run (another spec, no GPU, no sanitizer)."""
    import torch

    from live.tasks.sources.tritonbench import folder
    from live.tasks.tritonbench.sanitize import find_sanitizer

    if not task_spec.startswith("tritonbench:"):
        raise click.ClickException(f"{option} needs a TritonBench-G spec (tritonbench:PATH).")
    sanitizer = find_sanitizer()
    if not torch.cuda.is_available() or sanitizer is None:
        raise click.ClickException(f"{option} needs a CUDA GPU and compute-sanitizer "
                                   "(on PATH or in CUDA_HOME/bin).")
    return folder(task_spec.split(":", 1)[1]), sanitizer


def _explain_skips(task_spec: str, loaded) -> None:  # noqa: ANN001 - Loaded
    """Set each skipped operator's ``hollow`` (its plain script passes) from compute-sanitizer,
    with a progress line per operator on stderr; one sentence and exit 1 where it cannot run."""
    from live.tasks.tritonbench import remember_hollow
    from live.tasks.tritonbench.sanitize import explain_operator

    data, sanitizer = _sanitizer_setup(task_spec, "--explain-skips")
    explained = []
    for skipped in loaded.skipped:
        if skipped.plain_script == "passes":
            click.echo(f"compute-sanitizer: {skipped.op} ...", err=True)
            sentence, _ = explain_operator(data, skipped.op, sanitizer=sanitizer)
            hollow = sentence or "compute-sanitizer found nothing"
            remember_hollow(data, skipped.op, "cuda", hollow)  # later loads show it too
            skipped = dataclasses.replace(skipped, hollow=hollow)
        explained.append(skipped)
    loaded.skipped = explained


def _sanitize_passing(task_spec: str, loaded, ops: tuple[str, ...],  # noqa: ANN001 - Loaded
                      indices: str | None) -> None:
    """Run the passing operators `ops` under compute-sanitizer; one whose gold code it finds
    errors in leaves the loaded tasks for the skipped ones (and its cached record keeps that),
    with a line per operator on stderr; one sentence and exit 1 where it cannot run."""
    from live.tasks.tritonbench.sanitize import sanitize_passing

    data, sanitizer = _sanitizer_setup(task_spec, "--sanitize")
    try:
        chosen = [int(i) for i in indices.split(",")] if indices else None
    except ValueError:
        raise click.ClickException(f"--sanitize-inputs takes input numbers separated by "
                                   f"commas (e.g. 12,15), got {indices!r}.") from None
    try:
        found = sanitize_passing(
            data, loaded, ops, indices=chosen, sanitizer=sanitizer,
            progress=lambda op: click.echo(f"compute-sanitizer: {op} ...", err=True))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for op, sentence in found:
        click.echo(f"compute-sanitizer: {op}: "
                   + (f"skipped, its pass is hollow: {sentence}" if sentence
                      else "found nothing, it stays loaded"), err=True)


def _verdict_summary(task, loaded) -> str:  # noqa: ANN001 - a Task, its Loaded
    """``""``, or e.g. ``"; 2 of 13 perf shapes timed unchecked, 3 dropped"`` (D73)."""
    findings = loaded.findings_of(task.name)
    unchecked, dropped = findings.shapes_with("unchecked"), findings.shapes_with("dropped")
    if not unchecked and not dropped:
        return ""
    parts = [f"{len(unchecked)} timed unchecked"] if unchecked else []
    parts += [f"{len(dropped)} dropped"] if dropped else []
    return f"; of {len(task.perf_shapes)} perf shapes {', '.join(parts)}"


def _report_verdicts(loaded) -> None:  # noqa: ANN001
    """Per operator that passed with shape verdicts, one line per verdict kind (to stderr)."""
    marked = [t for t in loaded.tasks if loaded.findings_of(t.name).shape_verdicts]
    if not marked:
        return
    click.echo(f"\n{len(marked)} passed with some performance inputs set aside (dropped: "
               "neither checked nor timed; unchecked: timed, not compared):", err=True)
    for task in marked:
        findings = loaded.findings_of(task.name)
        for kind in ("dropped", "unchecked"):
            shapes = findings.shapes_with(kind)
            if shapes:
                first = " ".join(findings.shape_verdicts[shapes[0]].reason.split())
                click.echo(f"  {task.name.removeprefix('tritonbench/')}: {kind} {shapes}: "
                           f"{first[:110]}", err=True)


def _report_set_aside(loaded) -> None:  # noqa: ANN001
    """Operators whose own test code is compared only where the gold code agrees with itself
    (D76), one line each (to stderr)."""
    notes = (loaded.stats or {}).get("passed_with_results_set_aside") or {}
    if not notes:
        return
    click.echo(f"\n{len(notes)} passed with result_gold compared where the gold code agrees "
               "with itself (racing writes or reads of memory it does not own elsewhere):",
               err=True)
    for name, note in sorted(notes.items()):
        click.echo(f"  {name}: {note.split(': ', 1)[-1]}", err=True)


def _report_second_check(loaded) -> None:  # noqa: ANN001
    """Operators that passed only on a second check in a fresh worker (D87), with the first
    check's failure, one line each (to stderr)."""
    firsts = (loaded.stats or {}).get("passed_on_second_check") or {}
    if not firsts:
        return
    click.echo(f"\n{len(firsts)} passed on a second check in a fresh worker after a first one "
               "failed (flaky gold code: expect the same of its candidates):", err=True)
    for name, first in sorted(firsts.items()):
        click.echo(f"  {name}: {' '.join(first.split())[:140]}", err=True)


def _loaded_json(loaded, checks: list | None = None) -> str:  # noqa: ANN001
    record = {"stats": loaded.stats, "tasks": [t.name for t in loaded.tasks],
              "shape_verdicts": {t.name: {str(i): v.to_dict() for i, v in
                                          sorted(loaded.findings_of(t.name)
                                                 .shape_verdicts.items())}
                                 for t in loaded.tasks
                                 if loaded.findings_of(t.name).shape_verdicts},
              "skipped": [s.to_dict() for s in loaded.skipped]}
    if checks is not None:
        record["checks"] = [{**c.result.to_dict(), **({} if c.compiled is None else {
            "compile_ms": c.compile_ms, "compile_status": c.compiled.status})}
            for c in checks]
    return json.dumps(record, indent=2, default=str)


@tasks.command("list")
@click.option("--tasks", "task_spec", default="builtin", show_default=True,
              help="Task spec: builtin, a comma list of names, tritonbench:PATH or module:PKG.MOD.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where a benchmark's load-time gold checks run.")
@_load_options
def list_tasks(task_spec: str, device: str, no_cache: bool, check_workers: int | None,
               as_json: bool) -> None:
    """List tasks: name, category, number of performance shapes, source.

    A benchmark spec (tritonbench:PATH) lists the operators that pass their gold-vs-gold check
    on this machine, then a table of the skipped ones with one reason each.

    \b
    Example:
        kernelband tasks list --tasks builtin
        kernelband tasks list --tasks tritonbench:~/TritonBench-G --device cuda
    """
    loaded = _load_or_fail(task_spec, device, no_cache, check_workers, progress=True)
    if as_json:
        click.echo(_loaded_json(loaded))
        return
    rows = loaded.tasks
    width = max([len(t.name) for t in rows] + [4])
    click.echo(f"{'name':<{width}}  {'category':<12}  {'perf shapes':>11}  source")
    for t in rows:
        click.echo(f"{t.name:<{width}}  {t.category:<12}  {len(t.perf_shapes):>11}  {t.source}"
                   f"{_verdict_summary(t, loaded)}")
    _report_verdicts(loaded)
    _report_set_aside(loaded)
    _report_second_check(loaded)
    _report_skipped(loaded)


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
@click.option("--timeout", "timeout_s", type=float, default=180.0, show_default=True,
              help="Per-candidate (and per load-time check) compile and run limit, seconds.")
@click.option("--gpu-memory", "gpu_memory_gib", type=float, default=None,
              help="GiB of GPU memory the evaluator may plan for (emulate a smaller card); "
              "shapes that cannot fit are dropped with a note [the whole card].")
@click.option("--compile-timing", is_flag=True, default=False,
              help="With --out: also time each task's reference under torch.compile (tasks "
              "that have one: KernelBench), as k0's baseline by the same protocol "
              "(compile_ms); each compiles in its check, tens of seconds a problem.")
@click.option("--resume", is_flag=True, default=False,
              help="With --out: keep the tasks an earlier --out FILE of this spec holds and "
              "check only the others (the file is rewritten after every task, so a stopped "
              "check loses nothing).")
@click.option("--parallel", type=click.IntRange(1, 64), default=1, show_default=True,
              help="With --out: tasks evaluated at once (the evaluator's workers compile and "
              "check side by side; on a GPU every timing holds the GPU lock, so it runs "
              "alone: KernelBench level-1 timings with 8 at once within 1 % of one at a "
              "time on an H100).")
@click.option("--explain-skips", is_flag=True, default=False,
              help="On a GPU, for a TritonBench-G spec: run each skipped operator whose plain "
              "script passes under compute-sanitizer (memcheck, initcheck; its plain script and "
              "its smallest performance inputs) and show what it finds, why that pass is hollow "
              "(a minute or two an operator).")
@click.option("--sanitize", "sanitize_ops", multiple=True, metavar="OP",
              help="On a GPU, for a TritonBench-G spec: run operator OP, which passed the load, "
              "under compute-sanitizer like --explain-skips; if it finds errors in the gold "
              "code, OP is skipped as a hollow pass, in this load and every later one on this "
              "machine (its cached check keeps the finding; --no-cache forgets it). Repeatable.")
@click.option("--sanitize-inputs", "sanitize_inputs", default=None, metavar="I,J",
              help="With --sanitize: the performance inputs to run, by number (e.g. 12,15) "
              "[the two smallest].")
@_load_options
def check(task_spec: str, device: str, out: str | None, timeout_s: float,
          gpu_memory_gib: float | None, compile_timing: bool, resume: bool, parallel: int,
          explain_skips: bool, sanitize_ops: tuple[str, ...], sanitize_inputs: str | None,
          no_cache: bool, check_workers: int | None, as_json: bool) -> None:
    """Gold-vs-gold: each task's k0 against its reference in the real evaluator.

    Prints one row per task and exits non-zero if any k0 fails. CPU timings are
    interpreter wall clock, flagged as such, never GPU figures. A benchmark spec
    (tritonbench:PATH) is checked while it loads (in parallel sandboxed workers, results
    cached on disk; --no-cache re-checks) and ends with a table of the skipped operators;
    --out then also times every passing k0 against its reference (and with
    --compile-timing against the reference under torch.compile).

    \b
    Example:
        kernelband tasks check --device cuda --out results/ref_h100.json
        kernelband tasks check --tasks tritonbench:~/TritonBench-G --device cuda --json
    """
    from live.gold.suite import (
        check_tasks,
        read_reference_timings,
        suite_evaluator,
        write_reference_timings,
    )

    if resume and not out:
        raise click.ClickException("--resume needs --out FILE (the file to continue).")
    try:
        earlier = read_reference_timings(out, task_spec) if out and resume else {}
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    loaded = _load_or_fail(task_spec, device, no_cache, check_workers, progress=True,
                           timeout_s=timeout_s)
    if explain_skips:
        _explain_skips(task_spec, loaded)
    if sanitize_ops:
        _sanitize_passing(task_spec, loaded, sanitize_ops, sanitize_inputs)
    checked_at_load = bool(loaded.stats)
    if checked_at_load and not out:
        if as_json:
            click.echo(_loaded_json(loaded))
        else:
            for t in loaded.tasks:
                click.echo(f"{t.name:<40} ok (gold vs gold, in a sandboxed worker"
                           f"{_verdict_summary(t, loaded)})")
            _report_verdicts(loaded)
            _report_set_aside(loaded)
            _report_second_check(loaded)
            _report_skipped(loaded)
        sys.exit(0 if loaded.tasks and not loaded.skipped else 1)
    if not as_json:
        click.echo(f"{'task':<20} {'status':<14} {'ref ms':>10} {'k0 ms':>10} {'speedup':>8} "
                   f"{'cv %':>6}  backend")

    ended: list = []  # the checks so far, rewritten to --out after each
    # read once before the checks start: asking the evaluator from `show` would wait for an
    # idle worker while the others are busy
    device_info: dict = {}

    def show(c) -> None:  # noqa: ANN001 - GoldCheck
        ended.append(c)
        if out:
            write_reference_timings(out, task_spec, ended, device_info, earlier)
        if as_json:
            return
        r = c.result
        cv = None if r.timing_cv is None else 100 * r.timing_cv
        click.echo(f"{c.task_id:<20} {r.status:<14} {_fmt(r.ref_ms):>10} {_fmt(r.ms):>10} "
                   f"{_fmt(r.speedup, '.3f'):>8} {_fmt(cv, '.2f'):>6}  {r.timing_backend}")
        if r.error:
            click.echo(f"    {r.error}")
        if c.compiled is not None:
            click.echo(f"    torch.compile {_fmt(c.compile_ms)} ms ({c.compiled.status})")

    if earlier and not as_json:
        click.echo(f"resuming {out}: {len(earlier)} task(s) checked before, kept")
    # with --parallel on a GPU, a GpuLock: every timing alone
    with suite_evaluator(task_spec, device=device, timeout_s=timeout_s, workers=parallel,
                         gpu_memory_gib=gpu_memory_gib) as ev:
        device_info.update(ev.device_info)
        checks, info = check_tasks(task_spec, device=device, timeout_s=timeout_s,
                                   on_result=show, evaluator=ev, tasks=loaded.tasks,
                                   compile_timing=compile_timing, parallel=parallel,
                                   skip=earlier)
        for task_id, notes in (ev.memory_plan.notes() if ev.memory_plan else {}).items():
            if not as_json:
                for note in notes:
                    click.echo(f"note: {task_id}: {note}")
    failed = [c.task_id for c in checks if not c.passed]
    if as_json:
        click.echo(_loaded_json(loaded, checks))
    else:
        click.echo(f"{len(checks) - len(failed)}/{len(checks)} passed on "
                   f"{info.get('device_name')}")
        _report_skipped(loaded)
    if out:
        write_reference_timings(out, task_spec, checks, info, earlier)
        if not as_json:
            click.echo(f"reference timings written to {out}")
    failed_before = [name for name, entry in earlier.items() if not entry.get("passed")]
    if failed or failed_before or not (checks or earlier) or loaded.skipped:
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
@click.option("--static-check/--no-static-check", default=True, show_default=True,
              help="Refuse suspicious source before it runs, as the live loop does (status "
              "rejected; KernelBench tasks add their shortcut rules).")
def eval_candidate(file: str, task_name: str, task_spec: str, device: str, seed: int,
                   baseline: str, timeout_s: float, profile: bool, static_check: bool) -> None:
    """Evaluate one candidate kernel file against a task and print the full record (JSON).

    Exit code 0 if the candidate is correct, 1 otherwise.

    \b
    Example:
        kernelband eval my_softmax.py --task softmax
        kernelband eval cand.py --task add --device cpu --baseline k0
        kernelband eval sol.py --tasks kernelbench:KernelBench --task kernelbench/level1/19_ReLU
    """
    from live.evaluator import Evaluator, EvaluatorConfig
    from live.evaluator.task_source import resolve_task

    code = Path(file).read_text()
    baseline_code = resolve_task(task_spec, task_name).k0 if baseline == "k0" else None
    with Evaluator(EvaluatorConfig(task_spec, device=device, timeout_s=timeout_s,
                                   compile_timeout_s=timeout_s,
                                   static_check=static_check)) as ev:
        result = ev.evaluate(task_name, code, seed=seed, baseline_code=baseline_code)
    record = result.to_dict()
    if profile and result.correct:
        from dataclasses import asdict

        from live.profiler import NcuProfiler

        record["profile"] = asdict(NcuProfiler(task_spec, device=ev.device).profile(task_name,
                                                                                      code))
    click.echo(json.dumps(record, indent=2, default=str))
    sys.exit(0 if result.correct else 1)


def _register_k0() -> None:
    from kernelband.cli.tasks_k0 import k0

    tasks.add_command(k0)


_register_k0()
