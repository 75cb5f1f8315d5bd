"""`RunConfig`: what a live run does (tasks, policy, steps, budgets), from flags or a file.

The proposer is configured apart (live.proposers.cli_options), with its own budget.

The resolved config (defaults filled in, secrets left out) is stored in the trace manifest under
``config``, so every trace says how it was made and ``--resume`` can check it continues the same
run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from live.evaluator.config import EvaluatorConfig
from live.evaluator.gpu_lock import TIMING_PATIENCE_S
from live.runner.shard import parse_shard

PROFILE_MODES = ("reps", "all", "roofline", "off")


@dataclass(frozen=True)
class RunConfig:
    """One live run: tasks x policy x proposer, with its budgets.

    Attributes:
        out: trace dataset directory written by the run.
        tasks: ``builtin``, ``softmax,layernorm`` or ``tritonbench:PATH``.
        policy: policy spec, e.g. ``kernelband-v2:K=5`` (kbsim.policies.spec).
        steps: attempts per task.
        seed: seeds the policy (kbsim.rng.policy_rng) and the proposer.
        run_id: defaults to ``<policy name>-s<seed>``.
        device: ``auto`` | ``cuda`` | ``cpu`` (CPU: Triton interpreter, tiny shapes).
        profile: ``reps`` profiles the cluster representatives the policy asks for, ``all``
            every correct kernel (the trace is then fully profiled; the policy still sees a
            signature only once it asks), ``roofline`` no profiler: signatures from the measured
            runtime and the task's bytes and FLOPs (live.hardware), ``off`` none.
        profile_lag: with ``reps``, the fewest steps of a task between the policy asking for a
            representative's signature and seeing Nsight Compute's (the roofline one until it is
            back, never waiting); 0 waits for the profile (live.profiler.provider).
        gpu_memory_gib: cap on the GPU memory the evaluator plans for (emulate a smaller card);
            None: the whole card (live.evaluator.memory_plan).
        in_flight: tasks run concurrently (LLM latency overlaps GPU work; GPU timing and
            profiling are never concurrent on one device).
        eval_workers: warm evaluator processes; 0 picks one per task in flight on a GPU (at most
            8, and at most half the CPU cores: they compile and check concurrently, and time
            one at a time), one on the CPU.
        max_wall_s: wall-clock budget for the whole run.
        eval_timeout_s: per-candidate limit for checking and timing (compile has its own).
        timing_patience_s: on a GPU, the longest a candidate's timing request lets new checks
            start before the GPU lock stops them and drains (timings are batched at quiet
            points, NOTE D81); 0 times each candidate as soon as the checks in flight drain.
        step_aside: on a GPU, checks in flight step aside for a batch of timings at their next
            torch call or Triton launch instead of holding the device to the end of a shape
            or of the operator's own test code (NOTE D97); False: they hold it, as before.
        shard: ``K/N``: this process runs only share K of N of the run's tasks (the loaded
            tasks sorted by name, those at positions p with p % N == K; live.runner.shard);
            None: all of them. How the run's work is split, not what the run is: left out of
            the manifest's config and free to change on ``--resume``.
        retry_k0: with ``--resume``, evaluate again the k0 of a task whose k0 failed on its own
            in the recorded run (NOTE D86 keeps such a task stopped otherwise), e.g. after an
            evaluator fix; a k0 that passes now starts its task. A choice of one call, not of
            the run: left out of the manifest's config.
        compile_timing: time each task's reference under ``torch.compile`` once, after its k0
            (KernelBench: the baseline of ``fast_p`` against ``torch.compile``, kept in the
            manifest's ``compile_ms``); False skips it, seconds to tens of seconds a task, and
            `kernelband analyze` then says that task has no ``compile_ms``. A choice of one
            call: a resume with it on times the tasks not timed yet. Left out of the
            manifest's config.
    """

    out: str
    tasks: str = "builtin"
    policy: str = "kernelband-v2"
    steps: int = 40
    seed: int = 0
    run_id: str | None = None
    device: str = "auto"
    profile: str = "reps"
    in_flight: int = 4
    eval_workers: int = 0
    max_wall_s: float | None = None
    eval_timeout_s: float = 120.0
    profile_lag: int = 1
    gpu_memory_gib: float | None = None
    timing_patience_s: float = TIMING_PATIENCE_S
    step_aside: bool = True
    shard: str | None = None
    retry_k0: bool = False
    compile_timing: bool = True

    def __post_init__(self) -> None:
        if self.shard is not None:
            parse_shard(self.shard)
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        if self.in_flight < 1:
            raise ValueError(f"in_flight must be >= 1, got {self.in_flight}")
        if self.profile_lag < 0:
            raise ValueError(f"profile_lag must be >= 0, got {self.profile_lag}")
        if self.gpu_memory_gib is not None and self.gpu_memory_gib <= 0:
            raise ValueError(f"gpu_memory_gib must be positive, got {self.gpu_memory_gib}")
        if not self.timing_patience_s >= 0:  # NaN too
            raise ValueError(f"timing_patience_s must be >= 0, got {self.timing_patience_s}")
        if self.eval_workers < 0:
            raise ValueError(f"eval_workers must be >= 0, got {self.eval_workers}")
        if self.profile not in PROFILE_MODES:
            raise ValueError(
                f"profile must be one of {', '.join(PROFILE_MODES)}, got {self.profile!r}"
            )
        if self.device not in ("auto", "cuda", "cpu"):
            raise ValueError(f"device must be auto, cuda or cpu, got {self.device!r}")

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or f"{self.policy.split(':', 1)[0]}-s{self.seed}"

    def evaluator_config(self, workers: int) -> EvaluatorConfig:
        """The evaluator's section of this run, with `workers` warm workers (per GPU): the
        run's tasks, device and limits, and the static check on (candidates are untrusted LLM
        output)."""
        return EvaluatorConfig(
            self.tasks, device=self.device, workers=workers, timeout_s=self.eval_timeout_s,
            static_check=True, timing_patience_s=self.timing_patience_s,
            step_aside=self.step_aside, gpu_memory_gib=self.gpu_memory_gib)

    def public_dict(self) -> dict[str, Any]:
        """The config as plain data (for manifests and logs); holds no secrets by design: the
        proposer's settings, API keys among them, are not part of it."""
        data = asdict(self)
        data["run_id"] = self.resolved_run_id
        # every share of a run writes the same config, so the shares' copies merge
        del data["shard"]
        del data["retry_k0"]  # how one call resumes, not what the run is
        del data["compile_timing"]  # likewise: a later call may time what this one did not
        return data


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML or JSON config file into a dict; one clear sentence on a bad file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"config file {path} is not valid YAML/JSON: {first}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"config file {path} must hold a mapping of option: value")
    known = {f.name for f in fields(RunConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"config file {path}: unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}"
        )
    return data
