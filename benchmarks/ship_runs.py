"""Ship the live runs a recording plan describes as trace datasets, with the tables they answer.

    python benchmarks/ship_runs.py PLAN.json --out OUT              # the runs are complete
    python benchmarks/ship_runs.py PLAN.json --rehearse --out /tmp/x  # the runs as they stand

PLAN is the recording plan of ``benchmarks/record_runs.py`` (``benchmarks/plans/``); its
``ship`` section names, per run, the dataset it becomes and how its kernels were profiled, the
exploration run, the two policy runs of the head-to-head, the size limit, the benchmark's licence
file and the notes every dataset's README carries.

Stages:

1. Each run under ``--runs-dir`` (``benchmarks/runs/``) is checked: every task that can run has
   its target of evaluated attempts (``live_progress.py``), and the exploration run has every
   correct kernel profiled (but ``--allow-unprofiled N``: its README then names the tasks of
   those left). A rehearsal notes what is missing and goes on; otherwise the script stops there.
2. Each is copied to ``DEST/DATASET`` (``traces/``; a rehearsal: ``OUT/traces/``) without the
   run's side files (``evaluations.jsonl``, ``gpu-lock.jsonl``, ``best/``, the writer's lock,
   the profiler's cache),
   validated, and given a README: the generated summary (``benchmarks/gpu/dataset_readme.py``,
   with every piece's command from ``NAME.commands``) and notes (the tasks left out and why, the
   plan's notes), and, where the plan names the benchmark's licence, that ``LICENSE`` and a
   ``NOTICE`` naming the origin of the kernels. The datasets must fit in ``max_mb``.
3. Under ``OUT``: the live head-to-head of the two policy runs, the sim-to-real check of each
   policy run, and the replay of the paper's ablation grid (``kernelband demo`` on DEST's
   datasets), each by its CLI command.
4. ``OUT/benchmarks.md``: those tables with their commands, this machine and the date.

A rehearsal's outputs are marked as such in every file: partial runs are not results.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "benchmarks", ROOT / "benchmarks" / "gpu"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

#: run-side files that are not part of a dataset (traces/SCHEMA.md); ``.profile-cache`` holds
#: Nsight Compute's raw reports, which a profiling pass that resumes reuses: what a dataset
#: keeps of them is in its kernels table
SIDE_FILES = ("evaluations.jsonl", "gpu-lock.jsonl", "best", ".writer.lock", ".profile-cache")


@dataclass(frozen=True)
class Run:
    folder: str  # under the runs folder
    name: str  # the shipped dataset's name under traces/
    target: int  # evaluated attempts per task
    profile: str  # how its kernels were profiled, for the README


@dataclass
class Setup:
    """What a plan says about shipping its runs (the plan's ``ship`` section)."""

    runs: tuple[Run, ...]
    runs_dir: Path
    explore: str  # the exploration run's folder
    pair: tuple[str, ...]  # the two policy runs of the head-to-head
    max_bytes: int
    check_cache: Path | None
    notes: list[str] = field(default_factory=list)
    benchmark: str = ""
    licence: Path | None = None
    notice: str = ""
    demo_analysis: str = "analysis"
    title: str = "Live runs"
    #: correct kernels of the exploration run that may lack a profile (``--allow-unprofiled``)
    allow_unprofiled: int = 0

    def run(self, folder: str) -> Run:
        return next(r for r in self.runs if r.folder == folder)


def benchmark_dir(tasks: str) -> Path | None:
    """The benchmark folder of a task spec such as ``tritonbench:DIR@subset.json``."""
    if ":" not in tasks:
        return None
    folder = tasks.split(":", 1)[1].split("@", 1)[0]
    path = Path(folder)
    return path if path.is_absolute() else ROOT / path


def setup_from_plan(plan_path: Path, runs_dir: Path, benchmark: Path | None = None) -> Setup:
    """A `Setup` from a recording plan; one sentence on what is missing."""
    plan = json.loads(plan_path.read_text())
    ship = plan.get("ship")
    if not isinstance(ship, dict) or not ship.get("datasets"):
        raise SystemExit(f"{plan_path}: the plan has no 'ship' section naming its datasets")
    steps = {r["name"]: int(r["steps"]) for r in plan.get("runs", [])}
    runs = []
    for folder, dataset in ship["datasets"].items():
        if folder not in steps:
            raise SystemExit(f"{plan_path}: dataset of run {folder!r}, which the plan lacks")
        runs.append(Run(folder, dataset["name"], steps[folder], dataset.get("profiles", "")))
    bench = benchmark or benchmark_dir(plan.get("tasks", ""))
    licence = (bench / ship["licence"]) if bench is not None and ship.get("licence") else None
    cache = ship.get("check_cache")
    return Setup(runs=tuple(runs), runs_dir=runs_dir, explore=ship["explore"],
                 pair=tuple(ship.get("head_to_head", ())),
                 max_bytes=int(float(ship.get("max_mb", 30)) * 1024 * 1024),
                 check_cache=(ROOT / cache) if cache else None, notes=list(ship.get("notes", [])),
                 benchmark=ship.get("benchmark", ""), licence=licence,
                 notice=ship.get("notice", ""), demo_analysis=ship.get("demo_analysis",
                                                                       "analysis"),
                 title=ship.get("title", "Live runs"))


def say(text: str) -> None:
    print(text, flush=True)


# ---------------------------------------------------------------------------------------------
# stage 1: ready?


def readiness(run: Run, setup: Setup) -> tuple[dict[str, Any] | None, list[str]]:
    """The run's progress report (None if it has not started) and what keeps it from shipping."""
    from live_progress import progress

    source = setup.runs_dir / run.folder
    if not (source / "manifest.json").exists():
        return None, [f"{run.folder} has not started"]
    report = progress(source, run.target)
    problems = []
    if not report["complete"]:
        left = report["needed"] - report["evaluated_toward_target"]
        problems.append(f"{run.folder}: {report['finished_tasks']} of {report['runnable']} "
                        f"operators at {run.target} evaluated attempts ({left} attempts left)")
    if run.folder == setup.explore:
        correct, profiled, _ = kernel_counts(source)
        if correct - profiled > setup.allow_unprofiled:
            problems.append(f"{run.folder}: {profiled} of {correct} correct kernels profiled "
                            f"(record_runs.py PLAN --jobs profile:{run.folder})")
    return report, problems


def kernel_counts(folder: Path) -> tuple[int, int, dict[str, int]]:
    """(correct, profiled among the correct, {task: correct kernels not profiled}) of a trace's
    distinct kernels."""
    from dataset_readme import distinct_kernels

    from kbsim.trace.reader import load_trace

    distinct = distinct_kernels(load_trace(folder).kernels_df())
    correct = distinct[distinct["correct"]]
    left = correct[~correct["profiled"].astype(bool)].reset_index()
    return (len(correct), int(correct["profiled"].sum()),
            {str(k): int(v) for k, v in left["task_id"].value_counts().sort_index().items()})


# ---------------------------------------------------------------------------------------------
# stage 2: the datasets


def skipped_at_load(setup: Setup) -> list[tuple[str, str]]:
    """(task, reason) for the tasks that failed gold vs gold (the kept check cache that every
    piece was seeded with)."""
    out: list[tuple[str, str]] = []
    if setup.check_cache is None:
        return out
    for path in sorted(setup.check_cache.glob("**/*.json")):
        record = json.loads(path.read_text())
        if not record.get("passed"):
            reason = _clip(" ".join(str(record.get("reason") or "").split()))
            plain = record.get("plain_script")
            out.append((record["name"], reason + (f" (as a plain script: {plain})"
                                                  if plain else "")))
    return sorted(out)


def _clip(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def commands_of(run: Run, setup: Setup) -> list[str]:
    path = setup.runs_dir / f"{run.folder}.commands"
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def notes(run: Run, report: dict[str, Any], rehearsal: list[str], setup: Setup) -> list[str]:
    stopped = [(t["task"].split("/", 1)[-1], _clip(" ".join(str(t["error"]).split())))
               for t in report["tasks"] if t["state"] == "k0 failed"]
    skipped = skipped_at_load(setup)
    runnable = report["runnable"]
    lines = ["", "## Notes", ""]
    if rehearsal:
        lines += ["- **REHEARSAL: not a result.** Written by `ship_runs.py --rehearse` from a run "
                  "that is not complete: " + "; ".join(rehearsal) + ".", ""]
    lines += [
        f"- **Benchmark.** {setup.benchmark} "
        f"{len(report['tasks'])} of its {len(report['tasks']) + len(skipped)} tasks passed "
        "the gold-vs-gold check and are in the manifest; "
        f"{runnable} of those ran (their k0 passed the live evaluation).",
    ]
    if skipped:
        lines += ["- **Left out at load** (the gold code disagrees with itself or cannot run; "
                  "one kept check cache was seeded into every piece, so that every piece and "
                  "every run have the same tasks):"]
        lines += [f"  - `{op}`: {reason}" for op, reason in skipped]
    if stopped:
        lines += ["- **Stopped at k0** (in the manifest, no attempt: the task's own gold "
                  "code fails the live evaluation, so nothing can be judged against it):"]
        lines += [f"  - `{op}`: {error}" for op, error in stopped]
    lines += [
        f"- **Steps.** T = {run.target} evaluated attempts per task, seed 0, the `mutate` "
        "proposer (no LLM). A `not_applicable` proposal (a mutation that does not apply to "
        "its parent) spends no step and is kept as a row.",
        f"- **Profiles.** {run.profile}{profiled_note(run, setup)}.",
        *setup.notes,
    ]
    if setup.licence is not None:
        lines += ["- **Licence of the kernels.** See `LICENSE` and `NOTICE` in this folder."]
    return lines


def profiled_note(run: Run, setup: Setup) -> str:
    """For the exploration run: how many of its correct kernels have a profile, and whose lack
    one (shipped with ``--allow-unprofiled``)."""
    if run.folder != setup.explore:
        return ""
    correct, profiled, left = kernel_counts(setup.runs_dir / run.folder)
    text = f": {profiled:,} of its {correct:,} distinct correct kernels"
    if left:
        text += (" (not profiled: " + ", ".join(f"{n} of `{task.split('/', 1)[-1]}`"
                                                 for task, n in left.items()) + ")")
    return text


def ship(run: Run, dest: Path, report: dict[str, Any], rehearsal: list[str],
         smi: Path | None, setup: Setup) -> Path:
    from dataset_readme import build_readme, nvidia_smi_versions

    from kbsim.trace.reader import validate_trace

    target = dest / run.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(setup.runs_dir / run.folder, target,
                    ignore=shutil.ignore_patterns(*SIDE_FILES))
    problems = validate_trace(target)
    if problems:
        raise SystemExit(f"{target} does not validate: {problems[0]}")
    extra = nvidia_smi_versions(smi) if smi is not None else []
    text = build_readme(target, commands_of(run, setup), extra)
    if rehearsal:
        text = text.replace("\n", "\n\n**REHEARSAL on a run that is not complete: not a "
                                  "result.**\n", 1)
    text += "\n".join(notes(run, report, rehearsal, setup)) + "\n"
    (target / "README.md").write_text(text, encoding="utf-8")
    if setup.licence is not None:  # the kernels derive from the benchmark's code: its terms
        if not setup.licence.is_file():
            raise SystemExit(f"{setup.licence}: the benchmark's licence file is not there")
        shutil.copyfile(setup.licence, target / "LICENSE")
        (target / "NOTICE").write_text(setup.notice.rstrip() + "\n", encoding="utf-8")
    return target


# ---------------------------------------------------------------------------------------------
# stage 3: the analyses


def kernelband(args: list[str], log: Path) -> tuple[str, float]:
    """Run ``kernelband ARGS`` (this interpreter's), its output to `log`; the command as a user
    types it, and the seconds it took."""
    started = time.perf_counter()
    with log.open("w") as handle:
        done = subprocess.run([sys.executable, "-m", "kernelband.cli", *args], cwd=ROOT,
                              stdout=handle, stderr=subprocess.STDOUT, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kernelband {' '.join(args)} failed (exit {done.returncode}); "
                         f"see {log}")
    return "kernelband " + " ".join(shlex.quote(a) for a in args), seconds


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def machine() -> str:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({model}), no GPU, Python {platform.python_version()}"


def read(path: Path) -> str:
    return path.read_text().strip() if path.exists() else f"({rel(path)} was not written)"


def _after_caption(text: str) -> str:
    """A table file without its caption (the summary above it has the same one)."""
    return text[text.index("|"):] if "|" in text else text


def geomean_rows(text: str) -> str:
    """A sim-to-real table cut to its caption, its header and the geomean row of each
    environment (the per-operator rows stay in the file)."""
    lines = text.splitlines()
    table = [i for i, line in enumerate(lines) if line.startswith("|")]
    if len(table) < 2:
        return text
    head = lines[:table[0]] + lines[table[0]:table[0] + 2]
    return "\n".join(head + [line for line in lines[table[0] + 2:] if "**geomean**" in line])


def replay_summary(analysis_dir: Path) -> str:
    """The replay grid over the operators: a policy per row, from the demo's metrics table."""
    import pandas as pd

    path = analysis_dir / "metrics.csv"
    if not path.exists():
        return f"({rel(path)} was not written)"
    table = pd.read_csv(path)
    cells = [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in row]
             for row in table.itertuples(index=False)]
    return "\n".join([f"| {' | '.join(map(str, table.columns))} |",
                      f"| {' | '.join('---' for _ in table.columns)} |",
                      *(f"| {' | '.join(row)} |" for row in cells)])


def main(argv: list[str] | None = None) -> int:
    from dataset_readme import size_bytes as size_of

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", type=Path, help="the recording plan (benchmarks/plans/)")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for the analyses and benchmarks.md")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "benchmarks" / "runs",
                        help="where the runs are kept [benchmarks/runs]")
    parser.add_argument("--benchmark", type=Path, default=None,
                        help="the benchmark's folder, for its licence [the plan's task spec]")
    parser.add_argument("--nvidia-smi", type=Path, default=None,
                        help="an nvidia-smi output of the recording host, for the READMEs")
    parser.add_argument("--rehearse", action="store_true",
                        help="ship the runs as they stand into OUT/traces (not a result)")
    parser.add_argument("--dest", type=Path, default=None,
                        help="where the datasets go [traces/; a rehearsal: OUT/traces]")
    parser.add_argument("--seeds", type=int, default=100, help="replay seeds [100]")
    parser.add_argument("--boot", type=int, default=2000,
                        help="head-to-head bootstrap resamples [2000]")
    parser.add_argument("--allow-unprofiled", type=int, default=0, metavar="N",
                        help="ship although up to N correct kernels of the exploration run lack "
                             "a profile; its README says how many, of which tasks [0]")
    args = parser.parse_args(argv)
    setup = setup_from_plan(args.plan, args.runs_dir, args.benchmark)
    setup.allow_unprofiled = max(0, args.allow_unprofiled)
    out = args.out.resolve()
    dest = (args.dest or (out / "traces" if args.rehearse else ROOT / "traces")).resolve()
    if args.rehearse and dest == (ROOT / "traces").resolve():
        parser.error("a rehearsal does not write to traces/: pass another --dest")

    say("1/4 checking the runs")
    reports: dict[str, dict[str, Any]] = {}
    missing: dict[str, list[str]] = {}
    for run in setup.runs:
        report, problems = readiness(run, setup)
        for problem in problems:
            say(f"  {problem}")
        if report is not None:
            reports[run.folder] = report
        missing[run.folder] = problems
    if any(missing.values()) and not args.rehearse:
        say("not complete: nothing shipped (--rehearse to try every stage on the runs as they "
            "stand)")
        return 3

    say(f"2/4 writing the datasets to {dest}")
    out.mkdir(parents=True, exist_ok=True)
    dest.mkdir(parents=True, exist_ok=True)
    smi = args.nvidia_smi
    shipped: dict[str, Path] = {}
    for run in setup.runs:
        if run.folder not in reports:
            continue
        shipped[run.folder] = ship(run, dest, reports[run.folder], missing[run.folder], smi,
                                   setup)
        say(f"  {rel(shipped[run.folder])}: {size_of(shipped[run.folder]) / 1e6:.2f} MB")
    total = sum(size_of(p) for p in shipped.values())
    if total > setup.max_bytes:
        raise SystemExit(f"the datasets hold {total / 1e6:.1f} MB, over the plan's "
                         f"{setup.max_bytes / 2**20:g} MB")

    say("3/4 analyses (head-to-head, sim-to-real, the replay grid)")
    ran: list[tuple[str, str, float]] = []  # (what, command, seconds)
    explore = shipped.get(setup.explore)
    policies = [shipped[folder] for folder in setup.pair if folder in shipped]
    # the head-to-head needs two policy runs; a rehearsal with one pits it against the
    # exploration trace, only to try the path
    pair = policies if len(policies) == 2 else (policies + ([explore] if explore else []))[:2]
    if len(pair) == 2:
        command, seconds = kernelband(
            ["analyze", "head-to-head", rel(pair[0]), rel(pair[1]), "--out", rel(out / "h2h"),
             "--boot", str(args.boot), "--seed", "0"], out / "h2h.log")
        ran.append(("head-to-head", command, seconds))
    for policy in policies:
        if explore is None:
            break
        key = "s2r-" + policy.name
        command, seconds = kernelband(
            ["analyze", "sim2real", "--explore", rel(explore), "--policy-trace", rel(policy),
             "--seeds", str(args.seeds), "--out", rel(out / key)], out / f"{key}.log")
        ran.append((key, command, seconds))
    if explore is not None:
        command, seconds = kernelband(
            ["demo", "--out", rel(out / "demo"), "--seeds", str(args.seeds), "--no-progress"]
            + (["--trace", rel(explore)] if args.rehearse else []), out / "demo.log")
        ran.append(("demo", command, seconds))

    say("4/4 OUT/benchmarks.md")
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"## {setup.title}: live head-to-head, replay and sim-to-real", ""]
    if args.rehearse:
        lines += ["**REHEARSAL on runs that are not complete: these figures are not results.** "
                  + " ".join(p for problems in missing.values() for p in problems), ""]
    lines += [f"Date {date}; this machine: {machine()}. The datasets: "
              + ", ".join(f"`{rel(p)}` ({size_of(p) / 1e6:.2f} MB)" for p in shipped.values())
              + f"; {total / 1e6:.2f} MB in all.", ""]
    lines += ["| step | command | seconds |", "| --- | --- | ---: |"]
    lines += [f"| {what} | `{command}` | {seconds:.1f} |" for what, command, seconds in ran]
    if (out / "h2h").exists():
        lines += ["", "### Live head-to-head", "", read(out / "h2h" / "head_to_head.md"), "",
                  "Per operator (`head_to_head_tasks.md`):", "",
                  _after_caption(read(out / "h2h" / "head_to_head_tasks.md"))]
    for what, _, _ in ran:
        if what.startswith("s2r-"):
            lines += ["", f"### Sim-to-real: {what.removeprefix('s2r-')}", "",
                      geomean_rows(read(out / what / "sim2real.md")), "",
                      f"Per operator: `{what}/sim2real.md` in the script's output."]
    if explore is not None:
        analysis = out / "demo" / ("analysis" if args.rehearse else setup.demo_analysis)
        lines += ["", "### Replay of the paper's ablation grid on the exploration trace", "",
                  replay_summary(analysis)]
    (out / "benchmarks.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    say(f"done: {rel(out / 'benchmarks.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
