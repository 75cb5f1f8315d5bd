"""The compiled replay engine: one policy x many (task, seed) episodes, in parallel with prange.

One episode (the same loop the live runner runs, step by step)::

    pool <- the task's initial kernels (k0 first)
    for t in 0 .. T-1:
        prepare(policy)                        # re-cluster when due, refresh the mask
        for r in representatives(policy):      # "profile" representatives lacking hw
            pool.hw[r] <- env signature of r
        # (these two only for policies that profile, the v2 family: for the others
        #  representatives is empty by contract and select runs prepare itself)
        cluster, s, parent, _ = select(policy, rng=policy_rng(seed, task))
        outcome <- env.step(parent, s, rng=env_rng(seed, task))
        reward <- update(policy, cluster, s, parent, child_ms, success)
        if success and the env's pool grows: pool_add(child)   # hw unknown until profiled

Recorded per step: the chosen arm, the policy's own reward, the mean reward (v2 reward, see
below) of the chosen arm and of the best arm of the current pool, their difference (pseudo-
regret; NaN where a mean is unknown) and its running sum over the steps where it is known, the
best speedup so far (k0 runtime / best runtime seen), pool size, and cumulative tokens and cost.

NOTE (D2): arm means (and so regret) are in units of the v2 reward max(0, (Tp - Tc) / Tp) for
every policy, so regrets are comparable across policies; the `reward` column holds the policy's
own reward (v1: 1 - Tc/Tp and -1 on failure), which is what the trace of a logged run records.

Determinism: each episode uses only its own two RNG states and resets a worker's policy state,
pool and scratch from scratch, so results do not depend on the thread count or the chunking.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from kbsim.envs.step import env_init, env_on_add, env_reveal_hw, env_step
from kbsim.policies.kernels import prepare, representatives, select, update
from kbsim.policies.state import pool_add
from kbsim.replay._copy import copy_into


class StepOut(NamedTuple):
    """Per (episode, step) results of one chunk; rows past an episode's truncation are unset."""

    cluster: np.ndarray  # (E, T) int16
    strategy: np.ndarray  # (E, T) int8
    parent: np.ndarray  # (E, T) int32
    success: np.ndarray  # (E, T) bool
    reward: np.ndarray  # (E, T) float64
    arm_mean: np.ndarray
    best_mean: np.ndarray
    regret: np.ndarray
    cum_regret: np.ndarray
    best_speedup: np.ndarray
    pool_size: np.ndarray  # (E, T) int32
    tokens: np.ndarray  # (E, T) int64, cumulative
    cost_usd: np.ndarray  # (E, T) float64, cumulative


class EpisodeOut(NamedTuple):
    """Per-episode summary of one chunk."""

    steps_run: np.ndarray  # (E,) int32: T, or the step at which a `stop` tape truncated
    served: np.ndarray  # (E,) int64: steps served from data (tape: fresh tape outcomes)
    final_speedup: np.ndarray  # (E,) float64
    cum_regret: np.ndarray  # (E,) float64
    tokens: np.ndarray  # (E,) int64
    cost_usd: np.ndarray  # (E,) float64


def new_outputs(n_episodes: int, steps: int, per_step: bool = True) -> tuple[StepOut, EpisodeOut]:
    """Output arrays for a chunk; with per_step=False the step arrays have T = 0 columns."""
    t = steps if per_step else 0
    e = n_episodes
    step_out = StepOut(
        cluster=np.zeros((e, t), np.int16),
        strategy=np.zeros((e, t), np.int8),
        parent=np.zeros((e, t), np.int32),
        success=np.zeros((e, t), np.bool_),
        reward=np.zeros((e, t)),
        arm_mean=np.zeros((e, t)),
        best_mean=np.zeros((e, t)),
        regret=np.zeros((e, t)),
        cum_regret=np.zeros((e, t)),
        best_speedup=np.zeros((e, t)),
        pool_size=np.zeros((e, t), np.int32),
        tokens=np.zeros((e, t), np.int64),
        cost_usd=np.zeros((e, t)),
    )
    episode_out = EpisodeOut(
        steps_run=np.zeros(e, np.int32),
        served=np.zeros(e, np.int64),
        final_speedup=np.zeros(e),
        cum_regret=np.zeros(e),
        tokens=np.zeros(e, np.int64),
        cost_usd=np.zeros(e),
    )
    return step_out, episode_out


@njit(cache=True)
def run_episode(
    pkind, fparams, iparams, state, pool, ekind, env, task, n_init, grows, profiles, scratch,
    prng, erng, steps, e, out, ep_out,
) -> None:
    """Run one episode in place (state, pool, scratch already reset) and record row e."""
    record = out.reward.shape[1] > 0
    pool.n[0] = 0
    scratch.served[0] = 0
    scratch.cursor[:, :] = 0
    k0_ms = env_init(ekind, env, task, pool, scratch, n_init)
    best_mean = np.nan
    best_ms = np.inf
    for i in range(pool.n[0]):
        b = env_on_add(ekind, env, task, pool, scratch, i)
        if not np.isnan(b) and (np.isnan(best_mean) or b > best_mean):
            best_mean = b
        best_ms = min(best_ms, pool.ms[i])
    cum_regret = 0.0
    tokens = 0
    cost = 0.0
    steps_run = steps
    for t in range(steps):
        if profiles:
            prepare(pkind, fparams, iparams, state, pool, prng)
            reps = representatives(pkind, state, pool)
            for r in reps:
                env_reveal_hw(ekind, env, task, pool, r)
        cluster, s, parent, _ = select(pkind, fparams, iparams, state, pool, prng)
        status, child_ms, child_key, tok, c = env_step(ekind, env, task, pool, scratch, parent,
                                                        s, erng)
        if status < 0:
            steps_run = t
            break
        success = status == 1
        reward = update(pkind, fparams, iparams, state, pool, cluster, s, parent, child_ms,
                        success)
        arm_mean = scratch.means[parent, s]
        regret = best_mean - arm_mean
        if not np.isnan(regret):
            cum_regret += regret
        tokens += tok
        cost += c
        step_best_mean = best_mean
        if success:
            if child_ms < best_ms:
                best_ms = child_ms
            if grows:
                key = child_key
                idx = pool_add(pool, scratch.child_phi, scratch.hw, scratch.child_prof9,
                               scratch.child_rt6, child_ms, key)
                if idx >= 0:
                    b = env_on_add(ekind, env, task, pool, scratch, idx)
                    if not np.isnan(b) and (np.isnan(best_mean) or b > best_mean):
                        best_mean = b
        if record:
            out.cluster[e, t] = cluster
            out.strategy[e, t] = s
            out.parent[e, t] = parent
            out.success[e, t] = success
            out.reward[e, t] = reward
            out.arm_mean[e, t] = arm_mean
            out.best_mean[e, t] = step_best_mean
            out.regret[e, t] = regret
            out.cum_regret[e, t] = cum_regret
            out.best_speedup[e, t] = k0_ms / best_ms
            out.pool_size[e, t] = pool.n[0]
            out.tokens[e, t] = tokens
            out.cost_usd[e, t] = cost
    ep_out.steps_run[e] = steps_run
    ep_out.served[e] = scratch.served[0]
    ep_out.final_speedup[e] = k0_ms / best_ms
    ep_out.cum_regret[e] = cum_regret
    ep_out.tokens[e] = tokens
    ep_out.cost_usd[e] = cost


@njit(cache=True, parallel=True)
def run_chunk(
    pkind, fparams, iparams, template, states, pools, scratches,
    ekind, env, grows, profiles, ep_task, ep_n_init, ep_prng, ep_erng, steps, out, ep_out,
) -> None:
    """Run every episode of a chunk; worker w takes episodes w, w + W, ... (W = len(states)).

    ep_prng / ep_erng: (E, 3) int64 RNG states (copied, not advanced). Episode results depend
    only on their own row of ep_task / ep_n_init / ep_prng / ep_erng.
    """
    n_workers = len(states)
    n_episodes = ep_task.shape[0]
    for w in prange(n_workers):
        wi = np.int64(w)
        state = states[wi]
        pool = pools[wi]
        scratch = scratches[wi]
        prng = np.empty(3, np.int64)
        erng = np.empty(3, np.int64)
        for e in range(wi, n_episodes, n_workers):
            copy_into(state, template)
            prng[:] = ep_prng[e]
            erng[:] = ep_erng[e]
            run_episode(pkind, fparams, iparams, state, pool, ekind, env, ep_task[e],
                        ep_n_init[e], grows, profiles, scratch, prng, erng, steps, e, out,
                        ep_out)
