"""Record a trace from a simulated run: the live runner's step loop, with an env as the world.

`record_trace` runs one policy on every task of an environment, one step at a time from Python,
in exactly the order the compiled engine (`kbsim.replay.engine`) uses (and the live runner
must use: prepare -> profile representatives -> select -> evaluate -> update -> add a correct
child),
seeding the policy with `policy_rng(seed, task_id)`, and writes every attempt and every kernel
with the TraceWriter. Replaying such a trace with the same policy and seed on the tape env
reproduces the run exactly (tests/kbsim/test_replay_exact.py). Useful for tests and demos.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from kbsim.envs.data import Env, new_scratch
from kbsim.envs.step import env_init, env_on_add, env_reveal_hw, env_step
from kbsim.policies.kernels import prepare, representatives, select, update
from kbsim.policies.spec import PolicySpec, parse_policy
from kbsim.policies.state import new_pool, new_state, pool_add
from kbsim.replay.seeding import env_rng, policy_rng
from kbsim.strategies import STRATEGIES
from kbsim.trace.writer import TraceWriter

_START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _kernel_row(run_id: str, task_id: str, kernel_id: str, parent_id: str | None,
                chain: list[str], pool, i: int) -> dict:
    hw = pool.hw[i]
    return {
        "run_id": run_id,
        "task_id": task_id,
        "kernel_id": kernel_id,
        "code": f"# simulated kernel {kernel_id}\n",
        "parent_id": parent_id,
        "strategy_chain": chain,
        "correct": True,
        "ms": float(pool.ms[i]),
        "timing_backend": "simulated",
        "phi": [float(v) for v in pool.phi[i]],
        "runtime_vec": [float(v) for v in pool.rt6[i]],
        "hw_sig": None if math.isnan(hw[0]) else [float(v) for v in hw],
        "profile9": [float(v) for v in pool.prof9[i]],
        "profiled": not math.isnan(hw[0]),
        "profiler": "simulated",
    }


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

    Every kernel's hardware signature is revealed at creation here (the recorder profiles every
    correct kernel), so the trace is fully profiled.
    """
    spec = policy if isinstance(policy, PolicySpec) else parse_policy(policy)
    run_id = run_id or f"sim-{spec.name}-s{seed}"
    manifest = {
        "hardware": {"gpu_name": "simulated", "note": f"{env.name} env: {env.description}"},
        "proposer": {"kind": "simulated"},
        "policy": {"name": spec.name, "params": dict(spec.params)},
        "tasks": list(env.task_ids),
        "run_ids": [run_id],
        "start_time": _START.isoformat(),
    }
    max_pool = max(env.n_init) + steps
    with TraceWriter(path, manifest, flush_every=1 << 30) as writer:
        for task, task_id in enumerate(env.task_ids):
            state = new_state(spec, max_pool)
            pool = new_pool(max_pool)
            scratch = new_scratch(env.data, max_pool)
            prng, erng = policy_rng(seed, task_id), env_rng(seed, task_id)
            env_init(env.kind, env.data, task, pool, scratch, env.n_init[task])
            ids, chains = [], []
            for i in range(int(pool.n[0])):
                env_on_add(env.kind, env.data, task, pool, scratch, i)
                env_reveal_hw(env.kind, env.data, task, pool, i)
                ids.append(f"{task_id}-k{i}")
                chains.append([])
                writer.append_kernel(_kernel_row(run_id, task_id, ids[i], None, [], pool, i))
                pool.hw[i] = np.nan  # the policy learns hw only by profiling representatives
            for t in range(steps):
                prepare(spec.kind, spec.fparams, spec.iparams, state, pool, prng)
                for r in representatives(spec.kind, state, pool):
                    env_reveal_hw(env.kind, env.data, task, pool, r)
                cluster, s, parent, propensity = select(
                    spec.kind, spec.fparams, spec.iparams, state, pool, prng
                )
                status, child_ms, child_key, tokens, cost = env_step(
                    env.kind, env.data, task, pool, scratch, parent, s, erng
                )
                success = status == 1
                reward = update(spec.kind, spec.fparams, spec.iparams, state, pool, cluster, s,
                                parent, child_ms, success)
                child_id = None
                if success:
                    key = child_key
                    idx = pool_add(pool, scratch.child_phi, scratch.hw, scratch.child_prof9,
                                   scratch.child_rt6, child_ms, key)
                    if idx >= 0:
                        env_on_add(env.kind, env.data, task, pool, scratch, idx)
                        # NOTE (D43): the recorder profiles every correct kernel for the trace;
                        # the policy itself saw hw only for its representatives.
                        saved = pool.hw[idx].copy()
                        env_reveal_hw(env.kind, env.data, task, pool, idx)
                        child_id = f"{task_id}-k{idx}"
                        ids.append(child_id)
                        chains.append([*chains[parent], STRATEGIES[s]])
                        writer.append_kernel(_kernel_row(run_id, task_id, child_id, ids[parent],
                                                         chains[-1], pool, idx))
                        pool.hw[idx] = saved
                writer.append_step({
                    "run_id": run_id,
                    "task_id": task_id,
                    "step": t,
                    "time": _START + timedelta(seconds=t),
                    "policy": str(spec),
                    "seed": seed,
                    "logging_propensity": float(propensity),
                    "cluster": int(cluster),
                    "parent_id": ids[parent],
                    "strategy": STRATEGIES[s],
                    "child_id": child_id,
                    "status": "ok" if success else "compile_error",
                    "error": None if success else "simulated failure",
                    "parent_ms": float(pool.ms[parent]),
                    "child_ms": float(child_ms) if success else None,
                    "reward": float(reward),
                    "prompt_tokens": int(tokens),
                    "completion_tokens": 0,
                    "cost_usd": float(cost),
                })
    return Path(path)

