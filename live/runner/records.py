"""Trace rows of the live runner: one function per row kind, nothing else."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from kbsim.policies.episode import Choice
from kbsim.trace.rows import kernel_row as build_kernel_row
from kbsim.trace.schema import K0_PARENT, K0_STRATEGY
from live.evaluator import EvalResult
from live.proposers.base import Proposal
from live.runner.kernels import KernelInfo


def _finite(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def kernel_row(run_id: str, task_id: str, code: str, result: EvalResult,
               parent_id: str | None, chain: list[str], profile: Any | None,
               roofline: Any | None = None) -> dict[str, Any]:
    """A KERNELS_SCHEMA row for an evaluated candidate (correct or not), with its profile if
    one was taken (`profile` is a live.profiler.ProfileResult) and its roofline signature
    (`live.hardware`, what v2 sees before Nsight Compute's): the evaluator's fields handed
    to THE kernel-row builder, `kbsim.trace.rows.kernel_row`."""
    profiled = bool(profile is not None and profile.profiled and profile.hw_sig is not None)
    return build_kernel_row(
        run_id=run_id, task_id=task_id, kernel_id=result.kernel_id, code=code,
        parent_id=parent_id, strategy_chain=chain, correct=result.correct, ms=result.ms,
        shape_ms=result.shape_ms, timing_cv=result.timing_cv,
        timing_backend=result.timing_backend, registers=result.registers,
        shared_bytes=result.shared_bytes, num_warps=result.num_warps,
        num_stages=result.num_stages, phi=result.phi, runtime_vec=result.runtime_vec,
        hw_sig=profile.hw_sig if profiled else None,
        profile9=profile.profile9 if profiled and profile.profile9 else None,
        profiler=profile.profiler if profiled else None,
        roofline_sig=roofline,
    )


def step_row(*, run_id: str, task_id: str, step: int, policy: str, seed: int, choice: Choice,
             parent: KernelInfo, proposal: Proposal, status: str, error: str | None,
             child_id: str | None, child_ms: float | None, ref_ms: float | None,
             reward: float, eval_latency_s: float | None,
             profile_latency_s: float | None) -> dict[str, Any]:
    """A STEPS_SCHEMA row for one attempt."""
    ok = status == "ok"
    child_ms = _finite(child_ms) if ok else None
    ref_ms = _finite(ref_ms)
    speedup = ref_ms / child_ms if ok and child_ms and ref_ms else None
    return {
        "run_id": run_id,
        "task_id": task_id,
        "step": step,
        "time": datetime.now(timezone.utc),
        "policy": policy,
        "seed": seed,
        "logging_propensity": _finite(choice.propensity),
        "cluster": choice.cluster,
        "parent_id": parent.kernel_id,
        "strategy": choice.strategy_name,
        "child_id": child_id,
        "status": status,
        "error": error,
        "parent_ms": _finite(parent.ms),
        "child_ms": child_ms,
        "ref_ms": ref_ms,
        "speedup_vs_ref": speedup,
        "reward": float(reward),
        **_llm_fields(proposal),
        "eval_latency_s": eval_latency_s,
        "profile_latency_s": profile_latency_s,
    }


def _llm_fields(proposal: Proposal) -> dict[str, Any]:
    """A step row's LLM columns: the model, its tokens, latency and cost."""
    return {"llm_model": proposal.model, "prompt_tokens": proposal.prompt_tokens,
            "completion_tokens": proposal.completion_tokens, "llm_latency_s": proposal.latency_s,
            "cost_usd": _finite(proposal.cost_usd) if proposal.cost_usd is not None else None}


def k0_step_row(*, run_id: str, task_id: str, policy: str, seed: int, proposal: Proposal,
                status: str, error: str | None, child_id: str | None,
                child_ms: float | None, ref_ms: float | None,
                eval_latency_s: float | None) -> dict[str, Any]:
    """A STEPS_SCHEMA row for a k0 step: step 0 of a task whose first kernel the proposer wrote
    from the reference (`live.runner.k0_step`; NOTE D100): no parent kernel, no policy choice,
    reward 0."""
    ok = status == "ok"
    child_ms = _finite(child_ms) if ok else None
    ref_ms = _finite(ref_ms)
    return {
        "run_id": run_id,
        "task_id": task_id,
        "step": 0,
        "time": datetime.now(timezone.utc),
        "policy": policy,
        "seed": seed,
        "logging_propensity": None,
        "cluster": -1,
        "parent_id": K0_PARENT,
        "strategy": K0_STRATEGY,
        "child_id": child_id,
        "status": status,
        "error": error,
        "parent_ms": None,
        "child_ms": child_ms,
        "ref_ms": ref_ms,
        "speedup_vs_ref": ref_ms / child_ms if ok and child_ms and ref_ms else None,
        "reward": 0.0,
        **_llm_fields(proposal),
        "eval_latency_s": eval_latency_s,
        "profile_latency_s": None,
    }
