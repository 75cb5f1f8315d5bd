"""``kernelband tasks k0``: the ``torch.compile`` k0 of each KernelBench problem, judged, written
and counted per level (parent side).

For each problem an evaluator worker compiles it, wraps inductor's Triton code as ``ModelNew``
(``live.tasks.kernelbench.k0_extract``) and checks that k0 as the load-time gold check checks a
k0; here it also goes through the static check a live run applies (a k0 that still calls the
reference's operator, inductor's ``extern_kernels.mm`` say, is no Triton k0). Written to OUT:

- ``<level>/<problem>.py``: every k0 that was made (passing or not, to read);
- ``k0.json``: the problems whose k0 passes, with their k0 files: a selector file, so
  ``kernelbench:PATH@OUT/k0.json`` is those problems with those k0s (a live run's tasks);
- ``k0-report.json``: per problem the outcome and its reason, per level the counts and the
  reasons of the rest;
- ``worker-results/``: each problem's worker result, written as it arrives, so a stopped run
  loses only the problems in flight: run again with the same OUT, and only the problems without
  a result there (or whose worker crashed, timed out or ran out of memory) are made again.

A problem that ran out of memory beside the others (its compile, its check, or its worker's
host-memory limit) is made again after the pool, alone, with a load-time gold check's room for
a check retried alone (``RETRY_WORKERS``, ``RETRY_MEMORY_MB``): the pool runs up to one worker
per core on the GPU, each allowed 0.45 of its memory, as the gold checks do.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kbsim.trace.layout import atomic_write_bytes

#: the worker function that makes and checks one k0
K0_CALL = "live.tasks.kernelbench.k0_extract.k0_in_worker"
OUTCOMES = ("passes", "fails_check", "rejected", "no_k0", "error")
#: failure kinds (``FailureKind`` values) that say a problem ran out of room, not that its k0
#: failed: out of device memory, past the worker's host-memory limit, killed by the system
OUT_OF_ROOM = ("out_of_memory", "memory_limit", "killed_by_system")


def out_of_room(result: dict[str, Any]) -> bool:
    """Whether a worker result ran out of room: making the k0 (``failure_kind``) or checking
    it (``check_failure_kind``)."""
    return (result.get("failure_kind") in OUT_OF_ROOM
            or result.get("check_failure_kind") in OUT_OF_ROOM)


@dataclass(frozen=True)
class K0Outcome:
    """What became of one problem's k0.

    Attributes:
        problem: ``level1/19_ReLU``.
        outcome: ``passes`` | ``fails_check`` (made, but incorrect or failing to run) |
            ``rejected`` (made, refused by the static check) | ``no_k0`` (none made) |
            ``error`` (the worker crashed or timed out).
        reason: why not ``passes`` (one sentence), else None; for ``error``, ``worker
            STATUS: FIRST LINE`` (``worker error: torch.OutOfMemoryError: CUDA out of ...``).
        file: the k0 file under OUT, when one was made.
        compile_s: seconds to compile and wrap; check_s: seconds to check.
    """

    problem: str
    outcome: str
    reason: str | None = None
    file: str | None = None
    compile_s: float | None = None
    check_s: float | None = None

    @property
    def level(self) -> str:
        return self.problem.split("/", 1)[0]


def judge(problem: str, task_spec: str, task_name: str, result: dict[str, Any],
          static_check: Callable[[str, str, str], str | None]) -> tuple[K0Outcome, str | None]:
    """One worker result as an outcome (and the k0's code, if one was made)."""
    timings = {"compile_s": result.get("compile_s"), "check_s": result.get("check_s")}
    status = result.get("status")
    if status == "no_k0":
        return K0Outcome(problem, "no_k0", result.get("reason"), **timings), None
    code = result.get("code")
    if status != "ok" or not isinstance(code, str):
        # the worker's failure: its status and the first line of its error (the exception's
        # type and message, as the worker formats it)
        lines = str(result.get("error") or "").strip().splitlines()
        first = " ".join(lines[0].split())[:300] if lines else "no error given"
        return K0Outcome(problem, "error", f"worker {status}: {first}", **timings), None
    refused = static_check(code, task_spec, task_name)
    if refused is not None:
        return K0Outcome(problem, "rejected", refused, **timings), code
    if result.get("check_status") != "ok":
        error = " ".join(str(result.get("check_error") or "").split())[:300]
        return K0Outcome(problem, "fails_check", f"{result.get('check_status')}: {error}",
                         **timings), code
    return K0Outcome(problem, "passes", None, **timings), code


def reason_class(outcome: K0Outcome) -> str:
    """A short class of why a problem has no passing k0, for counting."""
    reason = outcome.reason or ""
    if outcome.outcome == "rejected":
        family = re.search(r"the reference's own (\w+) operator", reason)
        if family:
            called = re.search(r"forward calls (\S+)", reason)
            via = f" via {called.group(1)}" if called else ""
            return f"still calls the reference's {family.group(1)}{via}"
        return "static check: " + reason.removeprefix("static check: ").split(" (")[0][:60]
    if outcome.outcome == "fails_check":
        return "check: " + reason.split(":", 1)[0]
    if outcome.outcome == "no_k0":
        if reason.startswith("inductor generated no Triton kernel"):
            return "no Triton kernel (extern calls only)"
        if reason.startswith(("torch.compile failed", "making the reference model")):
            return ": ".join(reason.split(": ", 2)[:2])[:100]
        if reason.startswith("kernel "):
            return re.sub(r"^kernel \w+: ", "", reason).split(" (")[0][:60]
        return reason.split(":")[0][:60]
    # a worker's failure: its status (error, crashed, timeout) and the exception's type
    status, _, error = reason.removeprefix("worker ").partition(": ")
    raised = re.match(r"([\w.]+(?:Error|Exception|Interrupt|Exit))\b", error)
    return "worker " + status + (f": {raised.group(1).rsplit('.', 1)[-1]}" if raised else "")


def summarize(outcomes: Sequence[K0Outcome]) -> dict[str, dict[str, Any]]:
    """Per level: problems, k0s made, k0s that pass, and the reasons of the rest (counted)."""
    levels: dict[str, dict[str, Any]] = {}
    for level in sorted({o.level for o in outcomes}):
        mine = [o for o in outcomes if o.level == level]
        reasons = Counter(reason_class(o) for o in mine if o.outcome != "passes")
        levels[level] = {"problems": len(mine),
                         "made": sum(o.outcome in ("passes", "fails_check", "rejected")
                                     for o in mine),
                         "passes": sum(o.outcome == "passes" for o in mine),
                         "outcomes": dict(Counter(o.outcome for o in mine)),
                         "reasons": dict(reasons.most_common())}
    return levels


def table(levels: dict[str, dict[str, Any]], top: int = 6) -> list[str]:
    """A text table: one row per level, then each level's most frequent reasons."""
    lines = [f"{'level':<8} {'problems':>8} {'k0 made':>8} {'k0 passes':>10}"]
    for level, row in levels.items():
        lines.append(f"{level:<8} {row['problems']:>8} {row['made']:>8} {row['passes']:>10}")
    for level, row in levels.items():
        if row["reasons"]:
            lines.append(f"{level}: why the other {row['problems'] - row['passes']} have no "
                         "passing k0:")
            for reason, count in list(row["reasons"].items())[:top]:
                lines.append(f"  {count:>4}  {reason}")
            rest = sum(list(row["reasons"].values())[top:])
            if rest:
                lines.append(f"  {rest:>4}  (other reasons: see k0-report.json)")
    return lines


def build_k0s(task_spec: str, out: Path, *, device: str = "auto", workers: int | None = None,
              timeout_s: float = 600.0, progress: bool = False) -> dict[str, Any]:
    """Make, judge and write every selected problem's k0 (see the module docstring); returns
    the report written to ``OUT/k0-report.json``."""
    from live.devices import resolve_device
    from live.evaluator.host_memory import HostRoom
    from live.evaluator.isolated import Call, run_calls
    from live.evaluator.settings import WorkerSettings
    from live.evaluator.static_check import static_check_for_task
    from live.gold.load import CHECK_MEMORY_MB, RETRY_MEMORY_MB, RETRY_WORKERS
    from live.tasks.kernelbench import select
    from live.tasks.registry import canonical_spec
    from live.tasks.sources import parse_spec

    prefix, arg = parse_spec(task_spec)
    if prefix != "kernelbench":
        raise ValueError(f"tasks k0 makes KernelBench k0s: the spec must be kernelbench:PATH, "
                         f"not {task_spec!r}")
    spec = canonical_spec(task_spec)
    device = resolve_device(device)
    problems = select(arg)
    kept = out / "worker-results"
    kept.mkdir(parents=True, exist_ok=True)

    def kept_file(name: str) -> Path:
        return kept / f"{name.replace('/', '__')}.json"

    earlier: dict[str, dict[str, Any]] = {}
    for problem in problems:
        try:
            result = json.loads(kept_file(problem.name).read_text())
        except (OSError, json.JSONDecodeError):
            continue
        # a crash, a time-out or a problem out of memory is tried again
        if result.get("status") in ("ok", "no_k0") and not out_of_room(result):
            earlier[problem.name] = result
    calls = [Call(p.name, K0_CALL, {"task_spec": spec, "task_name": p.task_name}, timeout_s)
             for p in problems if p.name not in earlier]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(problems), initial=len(earlier), desc="k0 from torch.compile",
                   unit="problem", dynamic_ncols=True)

    def arrived(call: Call, result: dict[str, Any]) -> None:
        try:
            atomic_write_bytes(kept_file(call.key), json.dumps(result, default=str).encode())
        except (TypeError, ValueError):  # not JSON: it is judged, just not kept
            pass
        if bar is not None:
            bar.update(1)

    # as load-time gold checks: up to 0.45 of the GPU and 64 GiB of host memory per worker,
    # and on a GPU host no compile starts while the host is short of memory (D84)
    results = earlier | (run_calls(calls, device=device, workers=workers,
                                   memory_limit_mb=CHECK_MEMORY_MB,
                                   settings=WorkerSettings(gpu_workers=2),
                                   host_room=HostRoom() if device == "cuda" else None,
                                   on_result=arrived) if calls else {})
    # out of memory beside the others: again, one at a time, with more room
    again = [call for call in calls if out_of_room(results.get(call.key, {}))]
    if again:
        if bar is not None:
            bar.total += len(again)
            bar.set_description("k0 out of memory, again alone")
        results |= run_calls(again, device=device, workers=RETRY_WORKERS,
                             memory_limit_mb=RETRY_MEMORY_MB,
                             settings=WorkerSettings(gpu_workers=RETRY_WORKERS),
                             on_result=arrived)
    if bar is not None:
        bar.close()
    outcomes = []
    for problem in problems:
        outcome, code = judge(problem.name, spec, problem.task_name,
                              results.get(problem.name, {"status": "error",
                                                         "error": "no result"}),
                              static_check_for_task)
        if code is not None:
            file = Path(problem.level) / f"{problem.stem}.py"
            (out / problem.level).mkdir(exist_ok=True)
            atomic_write_bytes(out / file, code.encode())
            outcome = K0Outcome(**{**asdict(outcome), "file": str(file)})
        outcomes.append(outcome)
    passing = [o for o in outcomes if o.outcome == "passes"]
    atomic_write_bytes(out / "k0.json", json.dumps(
        {"problems": [o.problem for o in passing],
         "k0": {o.problem: o.file for o in passing}}, indent=1).encode())
    report = _report(spec, device, outcomes)
    atomic_write_bytes(out / "k0-report.json", json.dumps(report, indent=1).encode())
    return report


def _report(spec: str, device: str, outcomes: Sequence[K0Outcome]) -> dict[str, Any]:
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    return {"task_spec": spec, "device": device, "device_name": name,
            "torch": torch.__version__, "triton": triton_version,
            "created": dt.datetime.now(dt.timezone.utc).isoformat(),
            "levels": summarize(outcomes),
            "problems": {o.problem: {k: v for k, v in asdict(o).items() if k != "problem"}
                         for o in outcomes}}
