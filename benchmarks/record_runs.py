"""Record several resumable live runs side by side on a multi-GPU host, one GPU each.

A plan (JSON) names the task set, the options every run shares, the runs (name, policy, steps,
`--profile` mode, extra options) and which run's correct kernels to profile afterwards. Each call
of this program advances the runs in pieces of at most ``--max-wall`` seconds: every job gets
its own GPU (``CUDA_VISIBLE_DEVICES``), resumes its run from ``--work`` (left by an earlier call
on this host) or from ``--runs-dir`` (the runs as kept between hosts), and leaves the run packed
as ``OUT/NAME.tar.gz``, so a run stopped between pieces loses nothing.

    python benchmarks/record_runs.py PLAN.json --out OUT [--gpus 0,1,2,3] [--jobs A,B,...]
        [--runs-dir benchmarks/runs] [--work /tmp/kb-runs] [--max-wall 400] [--stop-s 520]
        [--min-left 120] [--dry-run]

Jobs (``--jobs``, in order; default: the runs not yet complete, in plan order, then the
profiling of the plan's ``profile.run``). The first jobs start one per GPU; each later one starts
on the first GPU whose job ends while at least ``--min-left`` seconds of ``--max-wall`` remain,
with what remains as its own limit, so a GPU whose run completes goes on with the next:

- ``NAME``: continue the live run NAME (``kernelband live --resume``); a plan entry with
  ``"scratch": true`` (a pilot) starts afresh in ``--work`` and is never taken from
  ``--runs-dir``;
- ``profile:NAME``: Nsight Compute profiles of run NAME's correct kernels
  (``kernelband traces profile --sessions N``; ``profile.sessions``, ``profile.batch``), started
  only once run NAME is complete;
- ``sessions-check:NAME``: ``profile.sessions`` profiling sessions against 1, side by side on
  copies of run NAME (``benchmarks/gpu/profile_sessions_check.py``);
- ``NAME@K/N`` and ``profile:NAME@K/N``: share K of N of run NAME's tasks (the tasks sorted by
  name, every N-th from the K-th: ``kernelband live --shard K/N``, ``kernelband traces profile
  --shard K/N`` over the trace's tasks), each in its own copy ``WORK/NAME@KofN`` made from the
  newest copy of NAME; a profile share waits for the run to be complete, as ``profile:NAME``
  does. The shares of one run run side by side, one GPU each; once every share of NAME (of one
  kind) in this call has ended, the copies are merged (``kernelband traces merge-shards``)
  into ``WORK/NAME``, which they replace, and NAME is validated and packed once. A run's live
  jobs of one call (and its profile jobs) are one job or distinct shares of one N; two jobs of
  one run never run at once otherwise.

OUT receives ``NAME.tar.gz`` per run that ran, ``logs.tar.gz`` (each job's log, and each live
run's ``evaluations.jsonl`` and ``gpu-lock.jsonl``) and ``summary.json``: per job its GPU, exit
status, wall time, the piece's line for ``benchmarks/runs/NAME.commands`` (its ``kernelband``
command, start, tree from ``KB_TREE`` or git, GPU, and the steps after it) and, for live jobs,
the evaluations of this piece, evaluations per second, the evaluated attempts toward the target
before and after, the GPU lock's closes (how long checks took to drain for timings), and the
first evaluation of each task of a run started afresh (k0 timed against itself, an A/A check
under load); a share's entry has its own copy's figures, and its piece line its ``--shard K/N``
and the merged run's steps; ``merges`` says, per run merged from shares, its copies, validation,
steps and, for live shares, the evaluated attempts after. Whatever limits the whole command
should allow ``--stop-s`` + 90 seconds: a job is interrupted at ``--stop-s`` and has 30 more
to end before it is killed, then the runs are validated and packed. A run is complete when
every task that can run has ``steps`` evaluated attempts (``benchmarks/live_progress.py``).

Runs on the GPU host; ``--dry-run`` (any machine) prints the jobs and their commands.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from record_shards import check_shards, clashes, merge_copies, parse_job, shard_folder  # noqa: E402


@dataclass
class Job:
    """One process on one GPU."""

    name: str
    kind: str  # live | profile | sessions-check
    run: str
    gpu: str
    command: list[str]
    log: Path
    #: the run's folder this job works in: WORK/NAME, or its own copy WORK/NAME@KofN
    folder: Path
    #: ``K/N`` for a share of the run's tasks (``NAME@K/N``), None for the whole run
    shard: str | None = None
    started: float = 0.0
    process: subprocess.Popen | None = None
    result: dict[str, Any] = field(default_factory=dict)


def load_plan(path: Path) -> dict[str, Any]:
    """The plan, checked: ``tasks``, ``runs`` (each with name, policy, steps) required."""
    plan = json.loads(path.read_text())
    if not isinstance(plan.get("tasks"), str) or not plan.get("runs"):
        raise SystemExit(f"{path}: a plan needs 'tasks' (a task spec) and 'runs' (a list)")
    for run in plan["runs"]:
        missing = [k for k in ("name", "policy", "steps") if k not in run]
        if missing:
            raise SystemExit(f"{path}: run {run.get('name', run)} lacks {', '.join(missing)}")
    return plan


def run_entry(plan: dict[str, Any], name: str) -> dict[str, Any]:
    for run in plan["runs"]:
        if run["name"] == name:
            return run
    known = ", ".join(r["name"] for r in plan["runs"])
    raise SystemExit(f"no run named {name!r} in the plan ({known})")


def where(name: str, work: Path, runs_dir: Path, scratch: bool = False) -> Path | None:
    """The newest copy of run `name`: this host's work folder, else the kept runs."""
    if (work / name / "manifest.json").is_file():
        return work / name
    if not scratch and (runs_dir / name / "manifest.json").is_file():
        return runs_dir / name
    return None


def progress_of(folder: Path | None, target: int) -> dict[str, Any] | None:
    if folder is None:
        return None
    from live_progress import progress

    return progress(folder, target)


def default_jobs(plan: dict[str, Any], work: Path, runs_dir: Path) -> list[str]:
    """The runs not yet complete, in plan order, then the profiling of ``profile.run``."""
    jobs = []
    for run in plan["runs"]:
        if run.get("scratch"):
            continue
        report = progress_of(where(run["name"], work, runs_dir), int(run["steps"]))
        if report is None or not report["complete"]:
            jobs.append(run["name"])
    profile = plan.get("profile")
    if profile:
        jobs.append(f"profile:{profile['run']}")
    return jobs


def live_command(plan: dict[str, Any], run: dict[str, Any], out: Path, resume: bool,
                 max_wall: float, stop_s: float, extra: list[str] | None = None) -> list[str]:
    return ["timeout", "-s", "INT", "-k", "30", f"{stop_s:g}",
            sys.executable, "-m", "kernelband.cli", "live", "--out", str(out),
            *(["--resume"] if resume else []), "--max-wall", f"{max_wall:g}", "--quiet",
            "--tasks", plan["tasks"], "--policy", run["policy"], "--steps", str(run["steps"]),
            "--profile", run.get("profile", "off"), *plan.get("live_args", []),
            *run.get("args", []), *(extra or [])]


def build_job(plan: dict[str, Any], name: str, gpu: str, work: Path, runs_dir: Path,
              logs: Path, max_wall: float, stop_s: float, retry_k0: bool = False) -> Job:
    """Job `name` on GPU `gpu`, its run copied into `work` from `runs_dir` where needed (a
    share's job: into its own copy, from the newest copy of the run). `retry_k0`: a live job
    that resumes its run evaluates again the k0s that failed in it (``--retry-k0``)."""
    kind, run_name, shard = parse_job(name)
    log = logs / f"{name.replace(':', '-').replace('/', 'of')}.log"
    folder = work / run_name if shard is None else shard_folder(work, run_name, shard)
    if shard is not None and kind not in ("live", "profile"):
        raise SystemExit(f"{name}: only live and profile jobs take a shard")
    if shard is not None and folder.exists():
        shutil.rmtree(folder)  # left by an earlier call: the share starts from the run
    shard_args = ["--shard", shard] if shard is not None else []
    if kind == "live":
        run = run_entry(plan, run_name)
        found = where(run_name, work, runs_dir, scratch=bool(run.get("scratch")))
        if found is not None and found != folder:
            shutil.copytree(found, folder, dirs_exist_ok=False)
        retry = ["--retry-k0"] if retry_k0 and found is not None else []
        command = live_command(plan, run, folder, found is not None, max_wall, stop_s,
                               shard_args + retry)
    elif kind in ("profile", "sessions-check"):
        run_entry(plan, run_name)
        found = where(run_name, work, runs_dir)
        if found is None:
            raise SystemExit(f"{name}: run {run_name} has no trace yet")
        if found != folder:
            shutil.copytree(found, folder)
        profile = plan.get("profile") or {}
        if kind == "profile":
            command = ["timeout", "-s", "INT", "-k", "30", f"{stop_s:g}", sys.executable,
                       "-m", "kernelband.cli", "traces", "profile", str(folder),
                       "--batch-size", str(profile.get("batch", 48)),
                       "--sessions", str(profile.get("sessions", 1)),
                       "--max-wall", f"{max_wall:g}", "--quiet", *shard_args]
        else:
            command = [sys.executable, str(ROOT / "benchmarks/gpu/profile_sessions_check.py"),
                       str(work / run_name), "--tasks", ",".join(profile["check_tasks"]),
                       "--sessions", str(profile.get("sessions", 3)),
                       "--batch-size", str(profile.get("batch", 48)),
                       "--max-wall", str(profile.get("check_wall_s", 60)),
                       "--json", str(logs / "profile_sessions.json")]
    else:
        raise SystemExit(f"unknown job kind {kind!r} in {name!r}")
    return Job(name=name, kind=kind, run=run_name, gpu=gpu, command=command, log=log,
               folder=folder, shard=shard)


def waiting_on(plan: dict[str, Any], name: str, work: Path, runs_dir: Path) -> str | None:
    """Why job `name` cannot start yet (a profile of a run not complete), else None."""
    kind, run_name, _ = parse_job(name)
    if kind != "profile":
        return None
    run = run_entry(plan, run_name)
    report = progress_of(where(run_name, work, runs_dir), int(run["steps"]))
    if report is None or not report["complete"]:
        return f"run {run_name} is not complete"
    return None


def _lines(path: Path) -> int:
    if not path.is_file():
        return 0
    with open(path) as f:
        return sum(1 for _ in f)


def _records_since(path: Path, since_line: int) -> list[dict[str, Any]]:
    """The JSON lines of `path` from line `since_line` on (a line a killed run cut short is
    skipped)."""
    if not path.is_file():
        return []
    records = []
    with open(path) as f:
        for k, line in enumerate(f):
            if k >= since_line:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return records


def lock_figures(folder: Path, since_line: int) -> dict[str, Any]:
    """This piece's closes of the GPU lock (the lines of gpu-lock.jsonl it appended)."""
    closes = _records_since(folder / "gpu-lock.jsonl", since_line)
    if not closes:
        return {}
    figures: dict[str, Any] = {"lock_closes": len(closes)}
    for key in ("drain_s", "closed_s", "served", "readers"):
        values = sorted(c[key] for c in closes if c.get(key) is not None)
        if values:
            figures[f"lock_{key}_p50"] = round(statistics.median(values), 3)
            figures[f"lock_{key}_p90"] = round(values[int(0.9 * (len(values) - 1))], 3)
            figures[f"lock_{key}_sum"] = round(sum(values), 1)
    for reason in ("quiet", "batch", "patience"):
        figures[f"lock_closes_{reason}"] = sum(c.get("reason") == reason for c in closes)
    return figures


def live_figures(folder: Path, since_line: int, wall_s: float, fresh: bool) -> dict[str, Any]:
    """This piece's evaluations (the lines of evaluations.jsonl it appended) and their rate."""
    rows = _records_since(folder / "evaluations.jsonl", since_line)
    figures: dict[str, Any] = {
        "evaluations": len(rows), "wall_s": round(wall_s, 1),
        "evaluations_per_s": round(len(rows) / wall_s, 4) if wall_s else None}
    if rows:
        finished = sorted(dt.datetime.fromisoformat(r["finished"]).timestamp() for r in rows)
        loop_s = finished[-1] - finished[0]
        figures["loop_s"] = round(loop_s, 1)
        figures["evaluations_per_loop_s"] = round((len(rows) - 1) / loop_s, 4) if loop_s else None
        for key in ("eval_latency_s", "timing_wait_s", "shared_wait_s", "yield_wait_s",
                    "check_s", "timing_s"):
            values = [r[key] for r in rows if r.get(key) is not None]
            if values:
                figures[f"median_{key}"] = round(statistics.median(values), 3)
        for key in ("step_asides", "compiles_off_lock"):
            counts = [r[key] for r in rows if r.get(key) is not None]
            if counts:
                figures[key] = sum(counts)
    if fresh:  # the first evaluation of each task is k0 timed against itself: A/A under load
        first: dict[str, dict] = {}
        for r in rows:
            first.setdefault(r["task_id"], r)
        ratios = [r["ref_ms"] / r["ms"] for r in first.values()
                  if r.get("status") == "ok" and r.get("ms") and r.get("ref_ms")]
        if ratios:
            figures["aa_tasks"] = len(ratios)
            figures["aa_within_2pct"] = sum(abs(x - 1) <= 0.02 for x in ratios)
            figures["aa_worst_pct"] = round(100 * max(abs(x - 1) for x in ratios), 2)
            figures["aa_median_abs_pct"] = round(
                100 * statistics.median(abs(x - 1) for x in ratios), 2)
    return figures


def tree() -> str:
    """The source tree this runs: ``KB_TREE``, else git's short hash, else "unknown"."""
    if os.environ.get("KB_TREE"):
        return os.environ["KB_TREE"]
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def piece_line(job: Job, started: str, gpu: str, steps: int | None) -> str:
    """The piece's line for NAME.commands: its kernelband command as a user types it (the run
    folder, or a share's copy of it, as DIR), then '#' with its start, the tree, the GPU and
    the steps after it."""
    command = job.command[job.command.index(sys.executable) + 1:]
    shown = ["kernelband" if part == "kernelband.cli" else
             "DIR" if part == str(job.folder) else part for part in command]
    if shown[:1] == ["-m"]:
        shown = shown[1:]
    return (f"{shlex.join(shown)}   # {started}, {tree()}, {gpu}; "
            f"{steps if steps is not None else '?'} steps")


def steps_in(folder: Path) -> int | None:
    from kbsim.trace.reader import load_trace

    try:
        return len(load_trace(folder).steps)
    except Exception:  # noqa: BLE001 - a run that did not start: no count
        return None


def gpu_names() -> list[str]:
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plan", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="folder for what comes back")
    parser.add_argument("--gpus", default=None,
                        help="GPU indices to use, comma-separated [every GPU nvidia-smi shows]")
    parser.add_argument("--jobs", default=None,
                        help="comma-separated jobs: NAME, NAME@K/N (share K of N of its "
                             "tasks, merged once its shares end), profile:NAME[@K/N], "
                             "sessions-check:NAME [the runs not complete, then the profile]")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "benchmarks/runs")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kb-runs"))
    parser.add_argument("--max-wall", type=float, default=400.0,
                        help="seconds after which a job starts nothing new [400]")
    parser.add_argument("--stop-s", type=float, default=None,
                        help="seconds after which a job is interrupted [max-wall + 120]")
    parser.add_argument("--min-left", type=float, default=120.0,
                        help="a queued job starts only while this many seconds of --max-wall "
                             "remain [120]")
    parser.add_argument("--retry-k0", action="store_true",
                        help="live jobs that resume evaluate again the k0s that failed in "
                             "their run (`kernelband live --retry-k0`); name the runs in --jobs "
                             "(a run whose other tasks are done counts as complete)")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    plan = load_plan(args.plan)
    stop_s = args.stop_s if args.stop_s is not None else args.max_wall + 120
    gpus = (args.gpus.split(",") if args.gpus
            else [line.split(",")[0] for line in gpu_names()] or ["0"])
    args.work.mkdir(parents=True, exist_ok=True)
    logs = args.work / "logs"
    logs.mkdir(exist_ok=True)
    names = (args.jobs.split(",") if args.jobs
             else default_jobs(plan, args.work, args.runs_dir))
    check_shards(names)
    if not names or all(waiting_on(plan, n, args.work, args.runs_dir) for n in names):
        print("every run is complete and profiled: nothing to do" if not names else
              "nothing can start: " + "; ".join(
                  f"{n}: {waiting_on(plan, n, args.work, args.runs_dir)}" for n in names))
        return 0
    if args.dry_run:
        for k, name in enumerate(names):
            print(f"GPU {gpus[k]}: {name}" if k < len(gpus)
                  else f"then, on the first GPU free: {name}")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.setdefault("KERNELBAND_CACHE_DIR", str(args.work / "kb-cache"))
    env.setdefault("TRITON_CACHE_DIR", str(args.work / "triton-cache"))
    if plan.get("seed_cache"):  # the same operators in every piece: a kept check cache
        seed = ROOT / plan["seed_cache"]
        shutil.copytree(seed, env["KERNELBAND_CACHE_DIR"], dirs_exist_ok=True)
    summary: dict[str, Any] = {"gpus": gpu_names(), "started": dt.datetime.now(
        dt.timezone.utc).isoformat(timespec="seconds"), "max_wall_s": args.max_wall,
        "stop_s": stop_s, "jobs": {}, "not_started": {}}
    names_by_index = {line.split(",")[0].strip(): line.split(",")[1].strip()
                      for line in summary["gpus"] if line.count(",") >= 1}
    t0 = time.perf_counter()
    queue, lanes, done = list(names), {gpu: None for gpu in gpus}, []
    before: dict[str, Any] = {}
    first_round = True  # the first jobs, one per GPU, start whatever --min-left says

    def start(name: str, gpu: str) -> Job:
        elapsed = time.perf_counter() - t0
        job = build_job(plan, name, gpu, args.work, args.runs_dir, logs,
                        args.max_wall - elapsed, stop_s - elapsed, retry_k0=args.retry_k0)
        if job.kind == "live":
            run = run_entry(plan, job.run)
            folder = job.folder
            before[job.name] = {
                "lines": _lines(folder / "evaluations.jsonl"),
                "lock_lines": _lines(folder / "gpu-lock.jsonl"),
                "fresh": not (folder / "manifest.json").is_file(),
                "progress": progress_of(folder if (folder / "manifest.json").is_file()
                                        else None, int(run["steps"]))}
        # a temporary folder per GPU: Nsight Compute keeps its lock file there, and profiling
        # sessions on different GPUs need not wait for each other
        scratch = args.work / f"tmp-gpu{job.gpu}"
        scratch.mkdir(exist_ok=True)
        job.started = time.perf_counter()
        job.result["started_at"] = dt.datetime.now(dt.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC")
        job.process = subprocess.Popen(job.command, stdout=open(job.log, "w"),
                                       stderr=subprocess.STDOUT, cwd=ROOT,
                                       env=dict(env, CUDA_VISIBLE_DEVICES=job.gpu,
                                                TMPDIR=str(scratch)))
        print(f"GPU {job.gpu}: {job.name} started at {elapsed:.0f} s", flush=True)
        return job

    def pack(run_name: str, folder: Path) -> list[str]:
        """Validate the run in `folder` and pack it as OUT/NAME.tar.gz; the validation's say."""
        check = subprocess.run([sys.executable, "-m", "kernelband.cli", "traces", "validate",
                                str(folder)], capture_output=True, text=True, cwd=ROOT, env=env)
        with tarfile.open(args.out / f"{run_name}.tar.gz", "w:gz") as tar:
            tar.add(folder, arcname=run_name,
                    filter=lambda info: None if ("/best" in info.name
                                                 or info.name.endswith(".writer.lock"))
                    else info)
        return (check.stdout + check.stderr).strip().splitlines()[-1:]

    # the shares of a run in this call, per (kind, run): merged once all of them have ended
    shares: dict[tuple[str, str], set[str]] = {}
    for name in names:
        kind, run_name, shard = parse_job(name)
        if shard is not None:
            shares.setdefault((kind, run_name), set()).add(name)
    ended: dict[tuple[str, str], list[Job]] = {}
    summary["merges"] = {}

    def merge(key: tuple[str, str]) -> None:
        """The copies of a run's shares merged into WORK/NAME, validated and packed; each
        share's piece line then counts the merged run's steps."""
        kind, run_name = key
        jobs = sorted(ended.pop(key), key=lambda j: int(str(j.shard).split("/")[0]))
        target = args.work / run_name
        record = merge_copies([j.folder for j in jobs], target, env)
        record["jobs"] = [j.name for j in jobs]
        summary["merges"][f"{kind}:{run_name}" if kind != "live" else run_name] = record
        if "error" in record:
            print(f"{run_name}: shares not merged: {record['error']}", flush=True)
            return
        record["validate"] = pack(run_name, target)
        record["steps"] = steps_in(target)
        if kind == "live":
            report = progress_of(target, int(run_entry(plan, run_name)["steps"]))
            if report is not None:
                record["evaluated_after"] = report["evaluated_toward_target"]
                record["complete_after"] = report["complete"]
        for job in jobs:
            entry = summary["jobs"][job.name]
            entry["piece"] = piece_line(job, job.result["started_at"], entry["gpu_name"],
                                        record["steps"])
        print(f"{run_name}: {record['copies']} shares merged {json.dumps(record)}", flush=True)

    def finish(job: Job) -> None:
        assert job.process is not None
        rc = job.process.returncode
        wall = time.perf_counter() - job.started
        entry: dict[str, Any] = {"gpu": job.gpu, "kind": job.kind, "rc": rc,
                                 "wall_s": round(wall, 1), "command": job.command}
        folder = job.folder
        if job.kind == "live":
            run = run_entry(plan, job.run)
            seen = before[job.name]
            entry.update(live_figures(folder, seen["lines"], wall, seen["fresh"]))
            entry.update(lock_figures(folder, seen["lock_lines"]))
            after = progress_of(folder if (folder / "manifest.json").is_file() else None,
                                int(run["steps"]))
            for label, report in (("before", seen["progress"]), ("after", after)):
                if report is not None:
                    entry[f"evaluated_{label}"] = report["evaluated_toward_target"]
                    entry["needed"] = report["needed"]
                    entry[f"complete_{label}"] = report["complete"]
        if job.kind in ("live", "profile"):
            entry["gpu_name"] = names_by_index.get(job.gpu, f"GPU {job.gpu}")
            entry["piece"] = piece_line(job, job.result["started_at"], entry["gpu_name"],
                                        steps_in(folder))
        if (job.shard is None and job.kind in ("live", "profile")
                and (folder / "manifest.json").is_file()):
            entry["validate"] = pack(job.run, folder)
        summary["jobs"][job.name] = entry
        shown = {k: v for k, v in entry.items() if k != "command"}
        print(f"GPU {job.gpu}: {job.name} rc={rc} {json.dumps(shown)}", flush=True)
        if job.shard is not None:
            key = (job.kind, job.run)
            ended.setdefault(key, []).append(job)
            if len(ended[key]) == len(shares[key]):
                merge(key)

    look = True  # a queued job can become ready only when a job ends (its run may be complete)
    while queue or any(lanes.values()):
        for gpu, job in lanes.items():
            if job is not None and job.process is not None and job.process.poll() is not None:
                finish(job)
                done.append(job)
                lanes[gpu] = job = None
                look = True
        free = [gpu for gpu, job in lanes.items() if job is None]
        left = args.max_wall - (time.perf_counter() - t0)
        if look and queue and free and (first_round or left >= args.min_left):
            running = [j for j in lanes.values() if j is not None]
            for name in [n for n in queue if not waiting_on(plan, n, args.work, args.runs_dir)]:
                # one job per run at once, but the shares of one run side by side
                if free and not any(clashes(name, j) for j in running):
                    queue.remove(name)
                    gpu = free.pop(0)
                    lanes[gpu] = start(name, gpu)
                    running.append(lanes[gpu])
        look = first_round = False
        if not any(lanes.values()):
            break  # what is left waits for a run not complete, or for more time
        time.sleep(1.0)
    for key in list(ended):  # shares that started, when others of the run could not
        merge(key)
    for name in queue:
        summary["not_started"][name] = (waiting_on(plan, name, args.work, args.runs_dir)
                                        or f"less than --min-left {args.min_left:g} s was left")
    with tarfile.open(args.out / "logs.tar.gz", "w:gz") as tar:
        tar.add(logs, arcname="logs")
        for run_name in dict.fromkeys(job.run for job in done if job.kind == "live"):
            for log in ("evaluations", "gpu-lock"):
                path = args.work / run_name / f"{log}.jsonl"
                if path.is_file():
                    tar.add(path, arcname=f"{log}/{run_name}.jsonl")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return max((job.process.returncode for job in done if job.process), default=0)


if __name__ == "__main__":
    sys.exit(main())
