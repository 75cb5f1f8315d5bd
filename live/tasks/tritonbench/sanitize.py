"""A TritonBench-G operator under NVIDIA compute-sanitizer: why a passing plain script is hollow.

The adapter loads every operator whose own script passes, unless its check fails; for an
operator it skips although ``python OP.py`` passes, the skip reason should show why that pass
proves nothing. compute-sanitizer shows the usual causes: ``memcheck`` out-of-bounds or
misaligned accesses (a kernel that hard-codes one shape, faulting on every other), ``initcheck``
reads of device memory nothing wrote (an index table made with ``torch.empty`` and never filled,
which a fresh allocation hides behind zeros, and which the adapter's filled uninitialised memory
turns into an illegal access).

Two parts of an operator can be run: ``plain`` (its file as its authors run it, in the operator
folder) and ``perf`` (its performance inputs as the adapter makes them, seeded on the CPU and
moved by the script's ``to_cuda``, the smallest first, through ``call_op`` with the gold code).
Needs a CUDA GPU and compute-sanitizer (on PATH or in CUDA_HOME/bin).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
TOOLS = ("memcheck", "initcheck")
PARTS = ("plain", "perf")

PERF_SNIPPET = """
import sys, torch
from pathlib import Path
from live.tasks.loading import import_source
from live.tasks.tritonbench.format import module_code, operator_source
from live.tasks.tritonbench.operator import (PERF_SEED, _cpu_inputs, _gold_module, _smallest,
                                            make_inputs, run_operator)
path, op, which, candidate, device = sys.argv[1:6]
if candidate:
    source = operator_source(path, op)
    module = import_source(module_code(Path(candidate).read_text(), source.test_code),
                           "tb_candidate_" + op)
else:
    module = _gold_module(path, op)
entries, is_sequence = _cpu_inputs(path, op, PERF_SEED)
chosen = ([int(i) for i in which[1:].split(",")] if which.startswith("=")
          else _smallest(entries)[:int(which)])
for index in chosen:
    inputs = make_inputs(path, op, {"index": index}, PERF_SEED, device)
    try:
        run_operator(path, op, is_sequence, module, inputs)
        if device != "cpu":
            torch.cuda.synchronize()
        print(f"perf input {index}: ran", flush=True)
    except Exception as exc:
        print(f"perf input {index}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
              flush=True)
        break
"""

#: a report's error headline (``========= Invalid __global__ read of size 16 bytes``)
_HEADLINE = re.compile(r"^=+ (Invalid .+|Uninitialized .+|Illegal .+|Misaligned .+|"
                       r"Out-of-range .+|Out of range .+|Program hit .+|Cuda API error .+)$")
#: the lines that follow a headline: where (``at KERNEL+0x.. in FILE:LINE``), how far out
_WHERE = re.compile(r"^=+\s+at (\S+?)\+0x[0-9a-f]+ in (\S+?):(\d+)")
_ACCESS = re.compile(r"^=+\s+(Access to .+? is (out of bounds|misaligned)|Address .+ is "
                     r"(out of bounds|misaligned))")
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


@dataclass
class SanitizerRun:
    """One part of one operator under one tool: the exit status (``timeout`` when stopped),
    the sanitizer's error count (None when it printed no summary) and its distinct errors,
    each ``headline at KERNEL (FILE:LINE)[: out of bounds]``."""

    op: str
    part: str
    tool: str
    status: int | str
    seconds: float
    errors: int | None
    first_errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def found(self) -> bool:
        return bool(self.errors) or bool(self.first_errors)


def parse_report(text: str, limit: int = 5) -> tuple[int | None, list[str]]:
    """The error count and up to `limit` distinct errors of a compute-sanitizer report."""
    lines = text.splitlines()
    errors: list[str] = []
    for k, line in enumerate(lines):
        head = _HEADLINE.match(line.rstrip())
        if not head:
            continue
        text_ = head.group(1).strip()
        for follow in lines[k + 1:k + 6]:
            if where := _WHERE.match(follow):
                text_ += f" at {where.group(1)} ({Path(where.group(2)).name}:{where.group(3)})"
            elif access := _ACCESS.match(follow):
                text_ += f": {access.group(2) or access.group(3)}"
        if text_ not in errors:
            errors.append(text_)
    summary = _SUMMARY.search(text)
    count = int(summary.group(1)) if summary else (len(errors) or None)
    return count, errors[:limit]


def find_sanitizer() -> str | None:
    """compute-sanitizer's path: on PATH, else in CUDA_HOME/bin (default /usr/local/cuda)."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    candidate = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "compute-sanitizer"
    return str(candidate) if candidate.is_file() else None


def operator_file(data: Path, op: str) -> Path:
    """Operator `op`'s file under the TritonBench-G folder `data`, found as the adapter finds
    it; one sentence when there is none."""
    from live.tasks.tritonbench.format import operator_source

    try:
        return operator_source(str(Path(data).resolve()), op).operator_path
    except ValueError as exc:
        raise FileNotFoundError(f"{data}: no operator file {op}.py ({exc})") from None


def run_part(data: Path, op: str, part: str, tool: str | None, *, timeout_s: float = 300,
             inputs: int = 2, sanitizer: str | None = None, log: Path | None = None,
             candidate: Path | None = None, indices: Sequence[int] | None = None,
             device: str = "cuda") -> SanitizerRun:
    """Run `part` of operator `op` under compute-sanitizer `tool` (None: without it).

    With ``perf``: the `inputs` smallest performance inputs, or those numbered `indices`;
    `candidate` a candidate's code (an operator file's code part, as a live run records it)
    run on them instead of the gold code; `device` where they run (``cpu`` only without a
    tool, to try the plumbing)."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    data = Path(data).resolve()
    script = operator_file(data, op)
    if candidate is not None and part != "perf":
        raise ValueError("a candidate runs only the perf part (its plain script is the gold's)")
    if part == "plain":
        command, cwd = [sys.executable, str(script)], script.parent
    else:
        which = "=" + ",".join(map(str, indices)) if indices else str(inputs)
        command = [sys.executable, "-c", PERF_SNIPPET, str(data), op, which,
                   str(Path(candidate).resolve()) if candidate is not None else "", device]
        cwd = ROOT
    if tool is not None:
        if tool not in TOOLS:
            raise ValueError(f"tool must be one of {', '.join(TOOLS)}, got {tool!r}")
        path = sanitizer or find_sanitizer()
        if path is None:
            raise FileNotFoundError("compute-sanitizer is not on PATH nor in CUDA_HOME/bin")
        command = [path, "--tool", tool, "--print-limit", "20", "--target-processes", "all",
                   *command]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "PYTHONUNBUFFERED": "1"}
    if tool is not None:
        # each tensor its own cudaMalloc: inside PyTorch's cached blocks a read a little past a
        # tensor's end lands in another tensor's memory, which memcheck cannot tell from a
        # legal read
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout_s)
        text, status = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                       for x in (exc.stdout, exc.stderr))
        status = "timeout"
    if log is not None:
        log.write_text(text)
    count, errors = parse_report(text) if tool is not None else (None, [])
    return SanitizerRun(op, part, tool or "none", status, round(time.monotonic() - start, 1),
                        count, errors)


def explain(runs: list[SanitizerRun]) -> str | None:
    """One sentence from an operator's sanitizer runs, or None when they found nothing."""
    found = [r for r in runs if r.tool != "none" and r.found]
    if not found:
        return None
    what = {"plain": "its plain script", "perf": "its performance inputs"}
    parts = []
    for r in found:
        count = f"{r.errors} error{'s' if r.errors != 1 else ''}" if r.errors else "errors"
        stopped = ", stopped at the time limit" if r.status == "timeout" else ""
        first = f": {r.first_errors[0]}" if r.first_errors else ""
        parts.append(f"{what[r.part]} under {r.tool}, {count}{stopped}{first}")
    return "compute-sanitizer: " + "; ".join(parts)


def explain_operator(data: Path, op: str, *, timeout_s: float = 120,
                     sanitizer: str | None = None, indices: Sequence[int] | None = None,
                     device: str = "cuda") -> tuple[str | None, list[SanitizerRun]]:
    """Both parts of `op` under both tools (the performance inputs numbered `indices`, else
    the two smallest); the sentence of `explain` and the runs."""
    runs = [run_part(data, op, part, tool, timeout_s=timeout_s, sanitizer=sanitizer,
                     indices=indices if part == "perf" else None, device=device)
            for part in PARTS for tool in TOOLS]
    return explain(runs), runs


def sanitize_passing(data: Path, loaded: Any, ops: Sequence[str], *, device: str = "cuda",
                     indices: Sequence[int] | None = None, timeout_s: float = 120,
                     sanitizer: str | None = None,
                     progress: Callable[[str], None] | None = None,
                     ) -> list[tuple[str, str | None]]:
    """Run operators `ops`, each of which passed `loaded`'s gold check (a ``Loaded`` of the
    TritonBench-G folder `data`), under compute-sanitizer like `explain_operator`; an operator
    in which it finds errors leaves ``loaded.tasks`` for ``loaded.skipped``, its pass hollow,
    and its cached check record keeps the finding, so every later load on this machine skips
    it with that reason. `progress(op)` is called before each operator. Returns each operator
    with its finding (None: nothing found, it stays loaded); ValueError names an operator that
    did not pass the load.

    A gold check compares the gold code with itself, so a kernel that reads out of bounds can
    pass it wherever the stray reads happen to land in mapped memory, and fault on another
    run (TritonBench-G's ``attention_kernel`` reads a 64-row block of a 4-token query and
    faulted on its long inputs): only a tool that checks every access tells that pass from a
    sound one.
    """
    from live.tasks.skips import Skipped, hollow_pass_reason
    from live.tasks.tritonbench import NAME_PREFIX, remember_hollow

    by_op = {task.name.removeprefix(NAME_PREFIX): task for task in loaded.tasks}
    missing = [op for op in ops if op not in by_op]
    if missing:
        raise ValueError(f"{', '.join(missing)} did not pass the load (only an operator that "
                         "passes can be sanitized; --explain-skips explains the skipped ones)")
    found = []
    for op in ops:
        if progress is not None:
            progress(op)
        sentence, _ = explain_operator(data, op, timeout_s=timeout_s, sanitizer=sanitizer,
                                       indices=indices, device=device)
        found.append((op, sentence))
        if sentence is None:
            continue
        remember_hollow(data, op, device, sentence)
        task = by_op[op]
        loaded.tasks = [t for t in loaded.tasks if t is not task]
        loaded.findings.pop(task.name, None)
        loaded.skipped.append(Skipped(op, hollow_pass_reason(sentence), None, sentence))
        if "passed" in loaded.stats:
            loaded.stats["passed"] = len(loaded.tasks)
    return found

