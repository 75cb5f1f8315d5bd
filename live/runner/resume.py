"""What `--resume` needs from a trace: the steps of one run, in order, and its kernels."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from kbsim.trace.reader import load_trace
from kbsim.trace.reveals import Reveal, load_reveals
from kbsim.trace.schema import K0_STRATEGY
from live.runner.config import RunConfig
from live.runner.kernels import KernelInfo, features

#: errors that say the machine stopped an evaluation, not that the kernel failed (a worker the
#: kernel crashed, SIGSEGV say, is the kernel's own failure; SIGKILL is the system's or ours)
_MACHINE_FAILURES = ("(SIGKILL)", "memory limit exceeded")
#: config fields that must not change between a run and its resumption
_FIXED = ("tasks", "policy", "seed", "device", "profile")


class ResumeError(ValueError):
    """The trace cannot be continued with this configuration."""


def _float(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class RecordedRun:
    """Steps and kernels of `run_id` already in a trace."""

    def __init__(self, steps: list[dict[str, Any]], kernels: list[dict[str, Any]],
                 manifest: dict[str, Any], run_id: str,
                 reveals: list[Reveal] | None = None,
                 evaluations: list[dict[str, Any]] | None = None) -> None:
        self.run_id = run_id
        #: (task, kernel) -> the error of its recorded failed evaluation, for kernels the run
        #: never evaluated as correct (evaluations.jsonl)
        self._failed: dict[tuple[str, str], str] = {}
        passed = set()
        for row in evaluations or ():
            if row.get("run_id") != run_id:
                continue
            key = (str(row.get("task_id")), str(row.get("kernel_id")))
            if row.get("status") == "ok":
                passed.add(key)
            else:
                self._failed[key] = f"{row.get('status')}: {row.get('error') or ''}".strip()
        for key in passed:
            self._failed.pop(key, None)
        self.manifest = manifest
        #: (task, kernel) -> the step the run first showed its Nsight Compute signature
        self._shown = {(r.task_id, r.kernel_id): r.shown_step for r in reveals or ()
                       if r.run_id == run_id}
        self._steps: dict[str, list[dict[str, Any]]] = {}
        for row in sorted(steps, key=lambda r: (r["task_id"], r["step"])):
            self._steps.setdefault(row["task_id"], []).append(row)
        for task_id, rows in self._steps.items():
            expected = list(range(len(rows)))
            if [r["step"] for r in rows] != expected:
                raise ResumeError(f"{task_id}: recorded steps of run {run_id} are not 0..n-1")
        self._kernels = {(k["task_id"], k["kernel_id"]): k for k in kernels}
        self.tokens_spent = sum(int(r.get("prompt_tokens") or 0)
                                + int(r.get("completion_tokens") or 0) for r in steps)
        self.cost_spent = float(sum(float(r.get("cost_usd") or 0.0) for r in steps))

    @property
    def reveals_timed(self) -> bool:
        """Whether the run showed roofline signatures until Nsight Compute's (``--profile
        reps``, NOTE D67): its replay then follows ``signature-reveals.jsonl``."""
        return (self.manifest.get("signatures") or {}).get("mode") == "reps"

    def shown_step(self, task_id: str, kid: str) -> int | None:
        """The step the run first showed kernel `kid`'s Nsight Compute signature (None:
        never, as far as the trace says)."""
        return self._shown.get((task_id, kid))

    def own_failure(self, task_id: str, kid: str) -> str | None:
        """The recorded failure of kernel `kid` if the kernel itself failed (incorrect, a
        compile or runtime error), None if it passed, was never evaluated, or was stopped by
        the machine (a timeout, a worker killed by the system or past its memory limit: those
        are evaluated again)."""
        error = self._failed.get((task_id, kid))
        if error is None or error.startswith("timeout") or any(
                mark in error for mark in _MACHINE_FAILURES):
            return None
        return error

    def own_failures(self, task_id: str) -> dict[str, str]:
        """Kernel id -> recorded failure, for the kernels of `task_id` that failed on their own
        (as `own_failure` says) and never passed."""
        return {kid: error for (tid, kid) in self._failed
                if tid == task_id and (error := self.own_failure(tid, kid)) is not None}

    def steps_of(self, task_id: str) -> list[dict[str, Any]]:
        """The policy's recorded attempts of `task_id` (a k0 step left out)."""
        return [r for r in self._steps.get(task_id, []) if r["strategy"] != K0_STRATEGY]

    def k0_step(self, task_id: str) -> dict[str, Any] | None:
        """The recorded k0 step of `task_id` (the proposer's first kernel, NOTE D100), if
        the run wrote one."""
        return next((r for r in self._steps.get(task_id, [])
                     if r["strategy"] == K0_STRATEGY), None)

    def ref_ms(self, task_id: str) -> float | None:
        values = [r["ref_ms"] for r in self._steps.get(task_id, []) if _float(r["ref_ms"])]
        return float(np.median(values)) if values else None

    def kernel_info(self, task_id: str, kid: str, *, parent_id: str | None,
                    chain: list[str]) -> KernelInfo | None:
        """The recorded correct kernel `kid` as a pool entry (None if absent or incorrect)."""
        row = self._kernels.get((task_id, kid))
        if row is None or not row["correct"] or _float(row["ms"]) is None:
            return None
        phi, rt6 = features(row["phi"], row["runtime_vec"])
        meta = {k: row[k] for k in ("registers", "shared_bytes", "num_warps", "num_stages")
                if row.get(k) is not None}
        profiled = bool(row["profiled"]) and row["hw_sig"] is not None
        return KernelInfo(
            kernel_id=kid, code=row["code"], ms=float(row["ms"]),
            ref_ms=self.ref_ms(task_id), parent_id=parent_id, chain=chain, phi=phi, rt6=rt6,
            meta=meta, hw=list(row["hw_sig"]) if profiled else None,
            prof9=list(row["profile9"]) if profiled and row["profile9"] is not None else None,
            roofline=(list(row["roofline_sig"]) if row.get("roofline_sig") is not None
                      else None),
        )

    def correct_kernel_ids(self, task_id: str) -> list[str]:
        """Ids of the recorded correct kernels of `task_id` (to skip re-evaluating them)."""
        return [kid for (tid, kid), row in self._kernels.items()
                if tid == task_id and row["correct"] and _float(row["ms"]) is not None]

    def check_config(self, config: RunConfig) -> None:
        """A resumed run must keep what determines its policy's choices."""
        saved = self.manifest.get("config") or {}
        now = config.public_dict()
        changed = [k for k in _FIXED if k in saved and saved[k] != now[k]]
        if changed:
            what = ", ".join(f"{k} {saved[k]!r} -> {now[k]!r}" for k in changed)
            raise ResumeError(f"cannot resume run {self.run_id} with a different {what}")


def load_recorded(path: str | Path, run_id: str) -> RecordedRun:
    """The part of the trace at `path` that belongs to `run_id`."""
    data = load_trace(path)
    steps = [r for r in data.steps.to_pylist() if r["run_id"] == run_id]
    kernels = [k for k in data.kernels.to_pylist() if k["run_id"] == run_id]
    manifest = data.manifests[0] if data.manifests else {}
    evaluations = []
    log = Path(path) / "evaluations.jsonl"
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                evaluations.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut short by a killed run
                continue
    return RecordedRun(steps, kernels, manifest, run_id, load_reveals(path), evaluations)
