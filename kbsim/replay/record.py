"""Record a trace from a simulated run: the Python step (`kbsim.policies.episode`) with an
environment as the world.

`record_trace` runs one policy on every task of an environment through `Episode.run` (the step
the live runner runs: prepare -> profile representatives -> select -> attempt -> update -> add a
correct child -> record), the policy seeded with `policy_rng(seed, task_id)` and the environment
with `env_rng(seed, task_id)`, and writes every attempt and every kernel with the TraceWriter.
Replaying such a trace with the same policy and seed on the tape env reproduces the run exactly
(tests/kbsim/test_replay_exact.py). Useful for tests and demos.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from kbsim.envs.data import I_REVEAL, NA_STATUS, REVEAL_AT_ONCE, SYNTHETIC, Env, new_scratch
from kbsim.envs.reveal import env_reveal_timed
from kbsim.envs.step import env_init, env_on_add, env_reveal_hw, env_step
from kbsim.policies.episode import NOT_APPLICABLE, Attempt, Choice, Episode, StepResult
from kbsim.policies.spec import PolicySpec, parse_policy, policy_family
from kbsim.rng import env_rng
from kbsim.strategies import STRATEGIES
from kbsim.trace.reveals import REVEALS_NAME, Reveal, write_reveals
from kbsim.trace.rows import kernel_row
from kbsim.trace.writer import TraceWriter

_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


class EnvWorld:
    """One task of an environment as the world of an `Episode`; members are kernel ids.

    Every kernel's hardware signature is written to the trace when it is created (the recorder
    profiles every correct kernel), while the policy sees a signature only when it asks.
    """

    def __init__(self, env: Env, task: int, episode: Episode, writer: TraceWriter,
                 run_id: str, seed: int) -> None:
        self.env, self.task, self.writer = env, task, writer
        self.task_id = env.task_ids[task]
        self.run_id, self.seed = run_id, seed
        self.scratch = new_scratch(env.data, episode.max_pool)
        self.rng = env_rng(seed, self.task_id)
        self.chains: list[list[str]] = []
        self._tokens, self._cost = 0, 0.0
        self.shown: set[int] = set()
        self.reveals: list[Reveal] = []  # signature timing: first showings, as live records
        pool = episode.pool
        env_init(env.kind, env.data, task, pool, self.scratch, env.n_init[task])
        ids = [f"{self.task_id}-k{i}" for i in range(int(pool.n[0]))]
        episode.adopt(ids)
        for i, kid in enumerate(ids):
            self.chains.append([])
            self._write_kernel(episode, i, kid, None)

    def _write_kernel(self, episode: Episode, idx: int, kid: str, parent_id: str | None) -> None:
        """env_on_add, then the kernel's row with its signature; the policy's view of the
        signature is left as it was. NOTE (D43): the recorder profiles every correct kernel for
        the trace; the policy itself sees hw only for its representatives."""
        env, pool = self.env, episode.pool
        env_on_add(env.kind, env.data, self.task, pool, self.scratch, idx)
        saved = pool.hw[idx].copy()
        env_reveal_hw(env.kind, env.data, self.task, pool, idx)
        hw = pool.hw[idx].copy()
        pool.hw[idx] = saved
        roof = (env.data.k_roof[pool.key[idx]] if env.kind != SYNTHETIC
                and env.data.k_roof.shape[0] else None)
        self.writer.append_kernel(kernel_row(
            run_id=self.run_id, task_id=self.task_id, kernel_id=kid,
            code=f"# simulated kernel {kid}\n", parent_id=parent_id,
            strategy_chain=self.chains[idx], correct=True, ms=float(pool.ms[idx]),
            phi=pool.phi[idx], runtime_vec=pool.rt6[idx], timing_backend="simulated",
            hw_sig=None if math.isnan(hw[0]) else hw, profile9=pool.prof9[idx],
            profiler="simulated", roofline_sig=roof,
        ))

    def reveal(self, episode: Episode, wanted: list[int]) -> None:
        """The signatures the environment's timing shows (`kbsim.envs.reveal`; at once: its
        recorded or planted one)."""
        env, sc = self.env, self.scratch
        timed = env.kind != SYNTHETIC and env.data.iparams[I_REVEAL] != REVEAL_AT_ONCE
        for r in wanted:
            if not timed:
                env_reveal_hw(env.kind, env.data, self.task, episode.pool, r)
                continue
            env_reveal_timed(policy_family(episode.spec.kind), env.data, episode.state,
                             episode.pool, r, episode.step, sc.sig_asked, sc.sig_due,
                             sc.sig_prov, self.rng)
            if sc.sig_prov[r]:
                episode.provisional.add(r)
            else:
                episode.provisional.discard(r)
            key = episode.pool.key[r]
            if (r not in self.shown and episode.step >= sc.sig_due[r]
                    and not np.isnan(env.data.k_hw[key]).all()):
                self.shown.add(r)  # first showing of its "Nsight" signature, as live records it
                self.reveals.append(Reveal(self.run_id, self.task_id, episode.members[r],
                                           int(sc.sig_asked[r]), episode.step))

    def attempt(self, episode: Episode, choice: Choice) -> Attempt | None:
        env, sc = self.env, self.scratch
        status, child_ms, child_key, tokens, cost = env_step(
            env.kind, env.data, self.task, episode.pool, sc, choice.parent, choice.strategy,
            self.rng,
        )
        if status < 0:  # a `stop` tape ran out
            return None
        note = (int(tokens), float(cost))
        if status == NA_STATUS:
            return Attempt(NOT_APPLICABLE, note=note)
        if status != 1:
            return Attempt("compile_error", note=note)
        # the child's id is its future pool index
        kid = f"{self.task_id}-k{int(episode.pool.n[0])}"
        return Attempt("ok", ms=float(child_ms), phi=sc.child_phi.copy(),
                       rt6=sc.child_rt6.copy(), prof9=sc.child_prof9.copy(),
                       key=int(child_key), member=kid, note=note)

    def record(self, episode: Episode, result: StepResult) -> None:
        choice, attempt = result.choice, result.attempt
        parent = choice.parent
        child_id = None
        if result.child is not None:
            child_id = episode.members[result.child]
            self.chains.append([*self.chains[parent], STRATEGIES[choice.strategy]])
            self._write_kernel(episode, result.child, child_id, episode.members[parent])
        tokens, cost = attempt.note
        ok = attempt.correct
        self.writer.append_step({
            "run_id": self.run_id,
            "task_id": self.task_id,
            "step": result.index,
            "time": _START + timedelta(seconds=result.index),
            "policy": str(episode.spec),
            "seed": self.seed,
            "logging_propensity": float(choice.propensity),
            "cluster": int(choice.cluster),
            "parent_id": episode.members[parent],
            "strategy": STRATEGIES[choice.strategy],
            "child_id": child_id,
            "status": attempt.status,
            "error": None if ok else f"simulated {attempt.status}",
            "parent_ms": float(episode.pool.ms[parent]),
            "child_ms": float(attempt.ms) if ok else None,
            "reward": float(result.reward),
            "prompt_tokens": tokens,
            "completion_tokens": 0,
            "cost_usd": cost,
        })


def record_trace(
    path: str | Path,
    env: Env,
    policy: str | PolicySpec,
    seed: int,
    steps: int,
    *,
    run_id: str | None = None,
) -> Path:
    """Run `policy` for `steps` steps on every task of `env` with `seed`; write a trace at `path`.

    Every kernel's hardware signature is recorded at creation here (the recorder profiles
    every correct kernel), so the trace is fully profiled; the policy sees a signature when it
    asks, at once or, under the environment's signature timing (`kbsim.envs.reveal`), its
    roofline one first, and the first showings go to ``signature-reveals.jsonl`` as a live
    ``--profile reps`` run writes them.
    """
    spec = policy if isinstance(policy, PolicySpec) else parse_policy(policy)
    run_id = run_id or f"sim-{spec.name}-s{seed}"
    manifest = {
        "hardware": {"gpu_name": "simulated", "note": f"{env.name} env: {env.description}"},
        "proposer": {"kind": "simulated"},
        "policy": {"name": spec.name, "params": dict(spec.params), "spec": str(spec)},
        "tasks": list(env.task_ids),
        "run_ids": [run_id],
        "start_time": _START.isoformat(),
        "not_applicable_rule": "unavailable",
    }
    if env.kind != SYNTHETIC and env.data.iparams[I_REVEAL] != REVEAL_AT_ONCE:
        # as a live --profile reps run describes its signatures (live.profiler.provider)
        manifest["signatures"] = {"requested": "reps", "mode": "reps", "timing": env.reveal}
    max_pool = max(env.n_init) + steps
    reveals: list[Reveal] = []
    with TraceWriter(path, manifest, flush_every=1 << 30) as writer:
        for task, task_id in enumerate(env.task_ids):
            episode = Episode(spec, task_id, seed, max_pool)
            world = EnvWorld(env, task, episode, writer, run_id, seed)
            episode.run(world, steps)
            reveals += world.reveals
    if env.kind != SYNTHETIC and env.data.iparams[I_REVEAL] != REVEAL_AT_ONCE:
        write_reveals(Path(path) / REVEALS_NAME, reveals)
    return Path(path)
