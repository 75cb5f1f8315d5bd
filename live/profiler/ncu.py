"""Nsight Compute profiler: hardware signature h(k) and the 9-dim v1 profile of a candidate.

``ncu --csv --page raw --metrics ... python -m live.profiler.target ...`` runs the candidate on one
representative performance shape (the middle one), filtered to the candidate's own Triton kernels,
over several launches; metrics are averaged weighted by each launch's duration. Results are cached
by (task, kernel_id) as JSON. Where ncu is missing or refuses (no GPU, container without counter
access, ``ERR_NVGPUCTRPERM``), the profiler says "unavailable" once (a log warning) and returns
``profiled=False`` from then on, so the run goes on and policies fall back to unmasked arms.

Sessions start with profiling off: the target program compiles and calls each candidate once
unprofiled, then profiles the measured calls. With ``device_gate`` set (the live runner's GPU
lock, exclusive side), the session holds the device alone only while it measures
(`live.profiler.gate`); without it, the caller holds the device around the whole call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path

from kbsim.trace.layout import atomic_write_bytes
from live.evaluator.hashing import kernel_id
from live.evaluator.sandbox import PROJECT_ROOT, scrubbed_env
from live.evaluator.task_source import canonical_spec, task_language
from live.profiler.batch import kernel_regex, rename_kernels, split_launches
from live.profiler.csv_parse import Launch, duration_weighted, parse_raw_csv
from live.profiler.gate import DeviceGate
from live.profiler.metrics import NCU_METRICS, base_name, hw_signature, profile9
from live.profiler.target import GATE_ENV

log = logging.getLogger(__name__)

#: ncu output that means "this machine will not let us profile" (not the candidate's fault)
_REFUSALS = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded", "Failed to initialize the profiler",
             "not supported on this", "Profiling is not supported", "Insufficient privileges",
             "No CUDA-capable device")


@dataclass(frozen=True)
class ProfileResult:
    """What the profiler learned about one kernel (NaN where a metric was unavailable)."""

    kernel_id: str
    task_id: str
    profiled: bool
    profiler: str | None = None
    hw_sig: tuple[float, float, float] | None = None
    profile9: tuple[float, ...] | None = None
    l1_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    registers_per_thread: float | None = None
    bank_conflicts: float | None = None
    metrics: dict[str, float] | None = None
    n_launches: int = 0
    kernel_names: tuple[str, ...] = ()
    error: str | None = None
    latency_s: float | None = None
    cached: bool = False


def triton_kernel_names(code: str, language: str = "triton") -> list[str]:
    """Names of the kernel functions of `code` in the task's kernel `language` (for Triton:
    decorated with ``triton.jit`` / ``autotune`` / ``heuristics``)."""
    from live.evaluator.languages import kernel_language

    return kernel_language(language).kernel_names(code)


def result_from_csv(text: str, *, kid: str, task_id: str, profiler: str) -> ProfileResult:
    """A ProfileResult from raw CSV text (``profiled=False`` if no launch was captured)."""
    return result_from_launches(parse_raw_csv(text), kid=kid, task_id=task_id,
                                profiler=profiler)


def result_from_launches(launches: list[Launch], *, kid: str, task_id: str,
                         profiler: str) -> ProfileResult:
    """A ProfileResult from one candidate's launches (``profiled=False`` if there are none)."""
    if not launches:
        return ProfileResult(kid, task_id, profiled=False, profiler=profiler,
                             error="no kernel launch captured by ncu")
    means = duration_weighted(launches)
    p9 = profile9(means)

    def opt(key: str) -> float | None:
        value = means.get(key)
        return value if value is not None and math.isfinite(value) else None

    return ProfileResult(
        kernel_id=kid, task_id=task_id, profiled=True, profiler=profiler,
        hw_sig=hw_signature(means), profile9=p9, l1_pct=opt("l1_pct"),
        achieved_occupancy_pct=opt("achieved_occupancy_pct"),
        registers_per_thread=opt("registers_per_thread"),
        bank_conflicts=p9[6] if math.isfinite(p9[6]) else None,
        metrics=means, n_launches=len(launches),
        kernel_names=tuple(sorted({lc.kernel_name for lc in launches})),
    )


class NcuProfiler:
    """Profile candidates of `task_spec` with Nsight Compute; see the module docstring."""

    def __init__(self, task_spec: str, *, cache_dir: str | Path | None = None,
                 timeout_s: float = 300.0, ncu_path: str | None = None, launches: int = 3,
                 device: str = "cuda", quiet: bool = False,
                 device_gate: Callable[[], AbstractContextManager] | None = None,
                 session_memory: Callable[[list[str]], AbstractContextManager] | None = None,
                 dropped_shapes: Callable[[str], Sequence[int]] | None = None):
        self.task_spec = canonical_spec(task_spec)
        #: a task's perf-shape indices not to run (the evaluator's: its memory plan's and the
        #: load-time check's, which a task rebuilt in the target program does not hold)
        self.dropped_shapes = dropped_shapes
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.timeout_s = timeout_s
        self.launches = launches
        self.device = device
        self.ncu_path = ncu_path or shutil.which("ncu") or _default_ncu()
        self.unavailable_reason: str | None = None
        #: quiet: say nothing when unavailable (the caller says it once, e.g. the live runner's
        #: signature provider, which switches to roofline signatures)
        self.quiet = quiet
        self._running: subprocess.Popen | None = None
        #: the device to ourselves for the measured part of each session (``device_gate()`` is
        #: a context manager, e.g. the GPU lock's exclusive side); None: the caller holds it
        self.device_gate = device_gate
        #: seconds the device was held through ``device_gate``, over every session so far
        self.held_s = 0.0
        #: ``session_memory(task_names)``: a context manager held for each session's whole
        #: life (the live runner's memory-pool reservation for the target program); None: none
        self.session_memory = session_memory
        self._cancelled = False
        self._metrics: list[str] | None = None
        self.last_raw_csv: str | None = None
        if device != "cuda":
            self._mark_unavailable("no CUDA device (CPU mode)")
        elif self.ncu_path is None:
            self._mark_unavailable("ncu not found on PATH")

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    @property
    def name(self) -> str:
        return "ncu"

    def _mark_unavailable(self, reason: str) -> None:
        if self.unavailable_reason is None:
            self.unavailable_reason = reason
            if not self.quiet:
                log.warning("Nsight Compute unavailable (%s): continuing with profiled=false",
                            reason)

    def _cache_path(self, task_id: str, kid: str) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / re.sub(r"[^A-Za-z0-9_.-]", "_", task_id) / f"{kid}.json"

    def metrics(self) -> list[str]:
        """The metrics to ask for: ours, minus those this ncu/GPU does not know."""
        if self._metrics is None:
            wanted = list(NCU_METRICS.values())
            known = self._query_metric_names()
            # launch__* (launch statistics) are not listed by --query-metrics but always valid
            self._metrics = [m for m in wanted
                             if not known or base_name(m) in known or m.startswith("launch__")]
        return self._metrics

    def _query_metric_names(self) -> set[str]:
        try:
            proc = subprocess.run([self.ncu_path, "--query-metrics"], capture_output=True,
                                  text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return set()
        names = set()
        for line in proc.stdout.splitlines():
            tokens = line.split()
            if tokens and "__" in tokens[0]:
                names.add(tokens[0])
        return names

    def profile(self, task_name: str, code: str) -> ProfileResult:
        """Profile one candidate (cached by kernel_id); never raises for the candidate's faults."""
        kid = kernel_id(code)
        if not self.available:
            return ProfileResult(kid, task_name, profiled=False, error=self.unavailable_reason)
        cached = self._cached(task_name, kid)
        if cached is not None:
            return cached
        started = time.perf_counter()
        result = self._run_ncu(task_name, code, kid)
        result = ProfileResult(**{**asdict(result), "latency_s": time.perf_counter() - started})
        self._store(result)
        return result

    def _cached(self, task_name: str, kid: str) -> ProfileResult | None:
        cache = self._cache_path(task_name, kid)
        if cache is None or not cache.exists():
            return None
        data = json.loads(cache.read_text())
        data["hw_sig"] = tuple(data["hw_sig"]) if data.get("hw_sig") else None
        data["profile9"] = tuple(data["profile9"]) if data.get("profile9") else None
        data["kernel_names"] = tuple(data.get("kernel_names", ()))
        return ProfileResult(**{**data, "cached": True})

    def _store(self, result: ProfileResult) -> None:
        cache = self._cache_path(result.task_id, result.kernel_id)
        if cache is not None and result.profiled:
            cache.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(cache, json.dumps(asdict(result), default=_json_default).encode())

    def profile_many(self, task_name: str, codes: list[str], *, batch_size: int = 24,
                     calls: int = 2) -> list[ProfileResult]:
        """Profile several candidates of one task, `batch_size` per ncu session (see
        live.profiler.batch); results in the order of `codes`. A candidate the batch captured
        no launch of is profiled alone (its own session), so one odd kernel costs only itself.
        """
        results: dict[int, ProfileResult] = {}
        todo: list[tuple[int, str, str]] = []
        for i, code in enumerate(codes):
            kid = kernel_id(code)
            if not self.available:
                results[i] = ProfileResult(kid, task_name, profiled=False,
                                           error=self.unavailable_reason)
                continue
            cached = self._cached(task_name, kid)
            if cached is not None:
                results[i] = cached
            else:
                todo.append((i, code, kid))
        for start in range(0, len(todo), batch_size):
            chunk = todo[start:start + batch_size]
            for (i, code, _kid), result in zip(chunk, self._run_batch(task_name, chunk, calls),
                                              strict=True):
                if not result.profiled and self.available:
                    result = self.profile(task_name, code)  # alone (and cached), own error text
                else:
                    self._store(result)
                results[i] = result
        return [results[i] for i in range(len(codes))]

    def profile_items(self, items: list[tuple[str, str]], *, batch_size: int = 24,
                      calls: int = 2) -> list[ProfileResult]:
        """Profile candidates of several tasks, ``(task_name, code)`` each, `batch_size` per ncu
        session whatever their tasks (the live runner's background batches); results in order.
        A candidate the session captured no launch of is profiled alone."""
        results: dict[int, ProfileResult] = {}
        todo: list[tuple[int, str, str, str]] = []
        for i, (task_name, code) in enumerate(items):
            kid = kernel_id(code)
            cached = self._cached(task_name, kid) if self.available else None
            if not self.available:
                results[i] = ProfileResult(kid, task_name, profiled=False,
                                           error=self.unavailable_reason)
            elif cached is not None:
                results[i] = cached
            else:
                todo.append((i, task_name, code, kid))
        for start in range(0, len(todo), batch_size):
            chunk = todo[start:start + batch_size]
            for (i, task_name, code, _), result in zip(
                    chunk, self._run_session([(t, c, k) for _, t, c, k in chunk], calls),
                    strict=True):
                if not result.profiled and self.available:
                    result = self.profile(task_name, code)
                else:
                    self._store(result)
                results[i] = result
        return [results[i] for i in range(len(items))]

    def _run_batch(self, task_name: str, chunk: list[tuple[int, str, str]],
                   calls: int) -> list[ProfileResult]:
        return self._run_session([(task_name, code, kid) for _, code, kid in chunk], calls)

    def _run_session(self, chunk: list[tuple[str, str, str]],
                     calls: int) -> list[ProfileResult]:
        """One ncu session over ``(task_name, code, kernel_id)`` candidates (kernels renamed
        apart by their position in `chunk`)."""
        started = time.perf_counter()
        names = [triton_kernel_names(code, task_language(self.task_spec, task_name))
                 for task_name, code, _ in chunk]
        workdir = Path(tempfile.mkdtemp(prefix="kb-ncu-batch-"))
        try:
            paths = []
            for j, (_, code, _) in enumerate(chunk):
                path = workdir / f"candidate_{j}.py"
                try:
                    path.write_text(rename_kernels(code, names[j], j) if names[j] else code)
                except SyntaxError:
                    path.write_text(code)
                paths.append(path)
            command = [*self._command(), "--kernel-name", kernel_regex(names)]
            command += [sys.executable, "-m", "live.profiler.target", "--task-spec",
                        self.task_spec, "--calls", str(calls)]
            tasks = {task_name for task_name, _, _ in chunk}
            command += self._drop_args(tasks)
            if len(tasks) == 1:  # one task: --task T --code FILE ...
                command += ["--task", next(iter(tasks))]
                for path in paths:
                    command += ["--code", str(path)]
            else:
                for (task_name, _, _), path in zip(chunk, paths, strict=True):
                    command += ["--item", f"{task_name}={path}"]
            stdout, stderr, _, error = self._spawn(command, workdir,
                                                   self.timeout_s + 10.0 * len(chunk),
                                                   sorted(tasks))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if error is not None:
            return [ProfileResult(kid, task_name, profiled=False, profiler=self.name,
                                  error=error) for task_name, _, kid in chunk]
        if self._refused(stdout + "\n" + stderr):
            return [ProfileResult(kid, task_name, profiled=False, error=self.unavailable_reason)
                    for task_name, _, kid in chunk]
        groups = split_launches(parse_raw_csv(stdout))
        each_s = (time.perf_counter() - started) / max(1, len(chunk))
        out = []
        for j, (task_name, _, kid) in enumerate(chunk):
            result = result_from_launches(groups.get(j, []), kid=kid, task_id=task_name,
                                          profiler=self.name)
            out.append(ProfileResult(**{**asdict(result), "latency_s": each_s}))
        return out

    def _drop_args(self, task_names: set[str]) -> list[str]:
        """``--drop TASK=I,J`` for each of `task_names` with dropped shapes."""
        args: list[str] = []
        for task_name in sorted(task_names):
            dropped = list(self.dropped_shapes(task_name)) if self.dropped_shapes else []
            if dropped:
                args += ["--drop", f"{task_name}={','.join(str(i) for i in dropped)}"]
        return args

    def _command(self) -> list[str]:
        """ncu and the options every session shares (raw CSV page of our metrics)."""
        return [self.ncu_path, "--csv", "--page", "raw", "--clock-control", "none",
                "--target-processes", "all", "--profile-from-start", "off",
                "--metrics", ",".join(self.metrics())]

    def _spawn(self, command: list[str], workdir: Path, timeout_s: float,
               task_names: list[str] | None = None) -> tuple[str, str, int | None, str | None]:
        """Run ncu in its own session; (stdout, stderr, exit code, None), or ("", "", None,
        why it did not finish) after killing it at `timeout_s`."""
        if self._cancelled:
            return "", "", None, "ncu session cancelled"
        memory = (self.session_memory(task_names or []) if self.session_memory is not None
                  else contextlib.nullcontext())
        with memory:
            return self._spawn_now(command, workdir, timeout_s)

    def _spawn_now(self, command: list[str], workdir: Path,
                   timeout_s: float) -> tuple[str, str, int | None, str | None]:
        if self._cancelled:
            return "", "", None, "ncu session cancelled"
        extra = {"PYTHONPATH": str(PROJECT_ROOT)}
        gate: contextlib.AbstractContextManager = contextlib.nullcontext()
        if self.device_gate is not None:
            gate = DeviceGate(workdir / "gate.sock", self.device_gate)
            extra[GATE_ENV] = gate.path
        env = scrubbed_env(dict(os.environ), extra)
        try:
            with gate:
                proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=workdir, env=env,
                                        start_new_session=True)
                self._running = proc
                try:
                    stdout, stderr = proc.communicate(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.communicate()
                    return "", "", None, f"ncu exceeded {timeout_s:g} s"
                finally:
                    self._running = None
        finally:
            if isinstance(gate, DeviceGate):
                self.held_s += gate.held_s
        if self._cancelled:
            return stdout, stderr, None, "ncu session cancelled"
        return stdout, stderr, proc.returncode, None

    def cancel(self) -> None:
        """Kill the ncu session in flight, if any (its own process group: the target too), and
        every later one at once; its kernels come back unprofiled. For the end of a run."""
        self._cancelled = True
        proc = self._running
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _refused(self, output: str) -> bool:
        """True (and the profiler marked unavailable) if ncu's output says this machine will
        not let us profile."""
        refusal = next((r for r in _REFUSALS if r in output), None)
        if refusal is not None:
            self._mark_unavailable(f"ncu refused: {refusal}")
        return refusal is not None

    def _run_ncu(self, task_name: str, code: str, kid: str) -> ProfileResult:
        result = self._run_ncu_once(task_name, code, kid)
        unknown = set(re.findall(r"[Ff]ailed to find metric[s]?:? *([\w.]+)", result.error or ""))
        if not result.profiled and unknown and self._metrics:
            self._metrics = [m for m in self._metrics if m not in unknown]
            result = self._run_ncu_once(task_name, code, kid)
        return result

    def _run_ncu_once(self, task_name: str, code: str, kid: str) -> ProfileResult:
        names = triton_kernel_names(code, task_language(self.task_spec, task_name))
        workdir = Path(tempfile.mkdtemp(prefix="kb-ncu-"))
        try:
            code_path = workdir / "candidate.py"
            code_path.write_text(code)
            command = self._command()
            if names:
                command += ["--kernel-name", "regex:^(" + "|".join(names) + ")$",
                            "--launch-count", str(self.launches * len(names))]
            else:
                command += ["--launch-count", str(self.launches)]
            command += [sys.executable, "-m", "live.profiler.target", "--task-spec",
                        self.task_spec, "--task", task_name, "--code", str(code_path),
                        "--calls", str(self.launches + 1), *self._drop_args({task_name})]
            stdout, stderr, returncode, error = self._spawn(command, workdir, self.timeout_s,
                                                            [task_name])
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if error is not None:
            return ProfileResult(kid, task_name, profiled=False, profiler=self.name, error=error)
        self.last_raw_csv = stdout
        both = stdout + "\n" + stderr
        if self._refused(both):
            return ProfileResult(kid, task_name, profiled=False, error=self.unavailable_reason)
        result = result_from_csv(stdout, kid=kid, task_id=task_name, profiler=self.name)
        if not result.profiled:
            errors = [ln for ln in both.splitlines() if "ERROR" in ln]
            tail = " | ".join(errors[-3:] or both.strip().splitlines()[-3:])
            return ProfileResult(**{**asdict(result),
                                    "error": f"{result.error}; exit {returncode}: "
                                             f"{tail[-400:]}"})
        return result


def _default_ncu() -> str | None:
    for candidate in sorted(Path("/opt/nvidia/nsight-compute").glob("*/ncu"), reverse=True):
        if candidate.exists():
            return str(candidate)
    for candidate in ("/usr/local/cuda/bin/ncu",):
        if Path(candidate).exists():
            return candidate
    return None


def _json_default(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)
