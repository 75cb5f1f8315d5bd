"""Ship issue #19's three TritonBench-G runs as datasets and make the tables the issue asks for.

    python benchmarks/ship_tb19.py --out out/tb19              # the runs are complete
    python benchmarks/ship_tb19.py --rehearse --out /tmp/tb19  # the runs as they stand

Stages:

1. Each run under ``benchmarks/runs/`` is checked: every operator that can run has its target of
   evaluated attempts (``live_progress.py``), and the exploration trace has every correct kernel
   profiled. A rehearsal notes what is missing and goes on; otherwise the script stops there.
2. Each is copied to ``DEST/NAME`` (``traces/``; a rehearsal: ``OUT/traces/``) without the
   run's side files (``evaluations.jsonl``, ``best/``, the writer's lock), validated, and given a
   README: the generated summary (``benchmarks/gpu/dataset_readme.py``, with every piece's
   command from ``NAME.commands`` and the driver from the newest session's ``nvidia-smi.txt``)
   and notes (the GPU model, the operators left out and why, the licence of the operators'
   code). The three must fit in 30 MB.
3. Under ``OUT``: the live head-to-head (v2 against greedy), the sim-to-real check of each
   policy run, and the replay of the paper's ablation grid (``kernelband demo`` on DEST's
   datasets), each by its CLI command.
4. ``OUT/benchmarks.md``: those tables with their commands, this machine and the date, for
   docs/benchmarks.md.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS_DIR = ROOT / "benchmarks" / "runs"
for path in (ROOT, ROOT / "benchmarks", ROOT / "benchmarks" / "gpu"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

#: the issue's limit for the three datasets together
MAX_BYTES = 30 * 1024 * 1024
#: run-side files that are not part of a dataset (traces/SCHEMA.md)
SIDE_FILES = ("evaluations.jsonl", "best", ".writer.lock")
CHECK_CACHE = RUNS_DIR / "tb-check-cache-h200" / "gold-checks"
SUBSET = "paper_subset_50.json"


@dataclass(frozen=True)
class Run:
    folder: str  # under benchmarks/runs/
    name: str  # the shipped dataset's name under traces/
    target: int  # evaluated attempts per operator
    profile: str  # how its kernels were profiled, for the README

    @property
    def source(self) -> Path:
        return RUNS_DIR / self.folder


RUNS: tuple[Run, ...] = (
    Run("tb-explore-h200", "tritonbench-g-explore-h200", 60,
        "every correct kernel profiled with Nsight Compute afterwards "
        "(`kernelband traces profile`)"),
    Run("tb-v2-h200", "tritonbench-g-v2-h200", 40,
        "`--profile reps`: the representatives KernelBand v2 asked signatures of were profiled "
        "with Nsight Compute during the run"),
    Run("tb-greedy-h200", "tritonbench-g-greedy-h200", 40,
        "`--profile off` (greedy reads no signature)"),
)
EXPLORE, V2, GREEDY = RUNS


def say(text: str) -> None:
    print(text, flush=True)


# ---------------------------------------------------------------------------------------------
# stage 1: ready?


def readiness(run: Run) -> tuple[dict[str, Any] | None, list[str]]:
    """The run's progress report (None if it has not started) and what keeps it from shipping."""
    from live_progress import progress

    if not (run.source / "manifest.json").exists():
        return None, [f"{run.folder} has not started"]
    report = progress(run.source, run.target)
    problems = []
    if not report["complete"]:
        left = report["needed"] - report["evaluated_toward_target"]
        problems.append(f"{run.folder}: {report['finished_tasks']} of {report['runnable']} "
                        f"operators at {run.target} evaluated attempts ({left} attempts left)")
    if run is EXPLORE:
        correct, profiled = kernel_counts(run.source)
        if profiled < correct:
            problems.append(f"{run.folder}: {profiled} of {correct} correct kernels profiled "
                            "(STAGE=profile bash benchmarks/gpu/tb19_piece.sh)")
    return report, problems


def kernel_counts(folder: Path) -> tuple[int, int]:
    """(correct, profiled among the correct) distinct kernels of a trace."""
    from dataset_readme import distinct_kernels

    from kbsim.trace.reader import load_trace

    distinct = distinct_kernels(load_trace(folder).kernels_df())
    correct = distinct[distinct["correct"]]
    return len(correct), int(correct["profiled"].sum())


# ---------------------------------------------------------------------------------------------
# stage 2: the datasets


def skipped_at_load() -> list[tuple[str, str]]:
    """(operator, reason) for the subset's operators that failed gold vs gold (the committed
    check cache that every piece was seeded with)."""
    out = []
    for path in sorted(CHECK_CACHE.glob("**/*.json")):
        record = json.loads(path.read_text())
        if not record.get("passed"):
            reason = _clip(" ".join(str(record.get("reason") or "").split()))
            plain = record.get("plain_script")
            out.append((record["name"], reason + (f" (as a plain script: {plain})"
                                                  if plain else "")))
    return sorted(out)


def _clip(text: str, limit: int = 240) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def newest_nvidia_smi() -> Path | None:
    found = sorted((ROOT / "benchmarks" / "results").glob("tritonbench_g_h200_*/nvidia-smi.txt"))
    return found[-1] if found else None


def commands_of(run: Run) -> list[str]:
    path = RUNS_DIR / f"{run.folder}.commands"
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def notes(run: Run, report: dict[str, Any], rehearsal: list[str]) -> list[str]:
    stopped = [(t["task"].removeprefix("tritonbench/"), _clip(" ".join(str(t["error"]).split())))
               for t in report["tasks"] if t["state"] == "k0 failed"]
    skipped = skipped_at_load()
    runnable = report["runnable"]
    lines = ["", "## Notes", ""]
    if rehearsal:
        lines += ["- **REHEARSAL: not a result.** Written by `ship_tb19.py --rehearse` from a run "
                  "that is not complete: " + "; ".join(rehearsal) + ".", ""]
    lines += [
        "- **Benchmark.** TritonBench-G as its authors ship it, the authors' 50-operator subset "
        f"(`{SUBSET}`), read by path (`--tasks \"tritonbench:DIR@{SUBSET}\"`). "
        f"{len(report['tasks'])} of its {len(report['tasks']) + len(skipped)} operators passed "
        "the gold-vs-gold check on the H200 and are in the manifest; "
        f"{runnable} of those ran (their k0 passed the live evaluation).",
    ]
    if skipped:
        lines += ["- **Left out at load** (the gold code disagrees with itself or cannot run; "
                  "the committed check cache `benchmarks/runs/tb-check-cache-h200` was seeded "
                  "into every piece so that every piece and all three runs have the same "
                  "operators):"]
        lines += [f"  - `{op}`: {reason}" for op, reason in skipped]
    if stopped:
        lines += ["- **Stopped at k0** (in the manifest, no attempt: the operator's own gold "
                  "code fails the live evaluation, so nothing can be judged against it):"]
        lines += [f"  - `{op}`: {error}" for op, error in stopped]
    lines += [
        f"- **Steps.** T = {run.target} evaluated attempts per operator, seed 0, the `mutate` "
        "proposer (no LLM). A `not_applicable` proposal (a mutation that does not apply to "
        "its parent) spends no step (issue #18's rule) and is kept as a row.",
        f"- **Profiles.** {run.profile}.",
        "- **GPU.** Issue #19 asks for an H100, an H200 only if no H100 can be had, and one GPU "
        "model for all three runs. Only single-GPU NVIDIA H200 machines were lent in the "
        "sessions that recorded them, so all three are H200 runs. The evaluator ran 12 "
        "workers on the one GPU (candidates compile and are checked side by side and are "
        "timed alone).",
        "- **In pieces.** Recorded in device calls of at most 10 minutes, each resuming the "
        "trace of the one before (`benchmarks/gpu/tb19_piece.sh`, `benchmarks/runs/`); the "
        "commands above are those pieces in order, each with its start (UTC), the tree, and "
        "the steps after it. The manifest keeps the first piece's configuration.",
        "- **Not in this folder.** The run's `evaluations.jsonl` (where each evaluation's time "
        "went), kept with the sessions' logs under `benchmarks/results/`; `best/` (the best "
        "kernels as files: they are in the kernels table).",
        "- **Licence of the kernels.** The kernels table holds TritonBench-G operator code: "
        "each operator's gold code (k0) and the `mutate` proposer's modifications of it (every "
        "kernel other than k0 is such a modification, made by this project). TritonBench-G is "
        "distributed under the Apache License 2.0 "
        "(https://www.apache.org/licenses/LICENSE-2.0); the operators keep their own headers, "
        "some with Advanced Micro Devices copyright notices. That code is data here, under "
        "its licence, not part of kernelband's source.",
    ]
    return lines


def ship(run: Run, dest: Path, report: dict[str, Any], rehearsal: list[str],
         smi: Path | None) -> Path:
    from dataset_readme import build_readme, nvidia_smi_versions

    from kbsim.trace.reader import validate_trace

    target = dest / run.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(run.source, target, ignore=shutil.ignore_patterns(*SIDE_FILES))
    problems = validate_trace(target)
    if problems:
        raise SystemExit(f"{target} does not validate: {problems[0]}")
    extra = nvidia_smi_versions(smi) if smi is not None else []
    text = build_readme(target, commands_of(run), extra)
    if rehearsal:
        text = text.replace("\n", "\n\n**REHEARSAL on a run that is not complete: not a "
                                  "result.**\n", 1)
    text += "\n".join(notes(run, report, rehearsal)) + "\n"
    (target / "README.md").write_text(text, encoding="utf-8")
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
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for the analyses and benchmarks.md")
    parser.add_argument("--rehearse", action="store_true",
                        help="ship the runs as they stand into OUT/traces (not a result)")
    parser.add_argument("--dest", type=Path, default=None,
                        help="where the datasets go [traces/; a rehearsal: OUT/traces]")
    parser.add_argument("--seeds", type=int, default=100, help="replay seeds [100]")
    parser.add_argument("--boot", type=int, default=2000,
                        help="head-to-head bootstrap resamples [2000]")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    dest = (args.dest or (out / "traces" if args.rehearse else ROOT / "traces")).resolve()
    if args.rehearse and dest == (ROOT / "traces").resolve():
        parser.error("a rehearsal does not write to traces/: pass another --dest")

    say("1/4 checking the runs")
    reports: dict[str, dict[str, Any]] = {}
    missing: dict[str, list[str]] = {}
    for run in RUNS:
        report, problems = readiness(run)
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
    smi = newest_nvidia_smi()
    shipped: dict[str, Path] = {}
    for run in RUNS:
        if run.folder not in reports:
            continue
        shipped[run.folder] = ship(run, dest, reports[run.folder], missing[run.folder], smi)
        say(f"  {rel(shipped[run.folder])}: {size_of(shipped[run.folder]) / 1e6:.2f} MB")
    total = sum(size_of(p) for p in shipped.values())
    if total > MAX_BYTES:
        raise SystemExit(f"the datasets hold {total / 1e6:.1f} MB, over the issue's 30 MB")

    say("3/4 analyses (head-to-head, sim-to-real, the replay grid)")
    ran: list[tuple[str, str, float]] = []  # (what, command, seconds)
    explore = shipped.get(EXPLORE.folder)
    policies = [shipped[r.folder] for r in (V2, GREEDY) if r.folder in shipped]
    # the head-to-head needs two policy runs; a rehearsal without greedy pits v2 against the
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
        key = "s2r-" + policy.name.removeprefix("tritonbench-g-").removesuffix("-h200")
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
    lines = ["## TritonBench-G: KernelBand v2 against greedy, replay and sim-to-real (H200 "
             "traces, issue #19)", ""]
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
        analysis = out / "demo" / ("analysis" if args.rehearse else "tritonbench-g/analysis")
        lines += ["", "### Replay of the paper's ablation grid on the exploration trace", "",
                  replay_summary(analysis)]
    (out / "benchmarks.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    say(f"done: {rel(out / 'benchmarks.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
