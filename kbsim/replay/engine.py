"""The compiled replay engine: one policy x many (task, seed) episodes, one worker's share.

`compiled_worker(family, env_kind)` is the loop below compiled for one policy family and one
environment kind (issue #16: a replay compiles only what it runs); `kbsim.replay.chunks` runs
one worker per thread over a chunk of episodes and says when a first run compiles.

One episode (the same loop the live runner runs, step by step)::

    pool <- the task's initial kernels (k0 first)
    for t in 0 .. T-1:
        prepare(policy)                        # re-cluster when due, refresh the mask
        for r in representatives(policy):      # "profile" representatives lacking hw
            pool.hw[r] <- env signature of r     # (or, with signature timing, its roofline
                                                 #  one until its Nsight one is due:
                                                 #  kbsim.envs.reveal)
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

NOTE (D42): arm means (and so regret) are in units of the v2 reward max(0, (Tp - Tc) / Tp) for
every policy, so regrets are comparable across policies; the `reward` column holds the policy's
own reward (v1: 1 - Tc/Tp and -1 on failure), which is what the trace of a logged run records.

Determinism: each episode uses only its own two RNG states and resets a worker's policy state,
pool and scratch from scratch, so results do not depend on the thread count or the chunking.

Compile structure (issue #16, NOTE (D64)): the worker calls its policy family's functions
(`kbsim.policies.kernels`' `select_in_v2`, ...) and its environment kind's answer
(`kbsim.envs.step.tape_answer`, ...), all inlined, in branches on the family and the kind, which
are compile-time constants here: numba's dead-branch pruning removes the other branches before it
inlines, so only one family's and one environment's code is copied, typed, optimised and cached
(numba inlines by copying a callee's whole IR: a dispatch on the family inlined here copied every
family's code first). The named tuples of arrays (state, pool, environment data, scratch,
outputs) reach the worker as images and go everywhere as one pointer each (`kbsim._byref`): a
cold kernelband-v2 replay compiles about 30 % less than with the tuples passed by value.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from kbsim._byref import ref_of_image
from kbsim._jit import inner_njit
from kbsim.envs.data import (
    ENV_KINDS,
    FITTED,
    I_ON_EXHAUST,
    I_REVEAL,
    NA_STATUS,
    REVEAL_AT_ONCE,
    STOP,
    SYNTHETIC,
    TAPE,
)
from kbsim.envs.reveal import env_reveal_timed
from kbsim.envs.step import (
    env_arm_means,
    env_init,
    env_on_add,
    env_reveal_hw,
    fitted_answer,
    synthetic_answer,
    tape_answer,
)
from kbsim.policies.kernels import (
    mark_na_inline,
    prepare_in_v2,
    representatives_in_v2,
    select_in_flat,
    select_in_v1,
    select_in_v2,
    update_in_flat,
    update_in_v1,
    update_in_v2,
)
from kbsim.policies.spec import FAMILY_NAMES, FAMILY_V1, FAMILY_V2
from kbsim.policies.state import pool_add


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


@inner_njit(_nrt=False)
def _reps_pending(rep, size, hw) -> bool:
    """Whether some non-empty cluster's representative lacks a hardware dimension.

    NOTE (D45): `representatives` (which allocates and passes the whole state: ~1.5 us) is asked
    only when this cheap check on the documented PolicyState fields `rep` / `size` says it may
    return something; the check is broader than the policy's own rule (a representative with
    *no* dimension known), so no representative it would return is ever missed. The tape
    replay exactness tests (which call `representatives` every step, like the live runner)
    hold the two loops equal.
    """
    for c in range(rep.shape[0]):
        r = rep[c]
        if size[c] > 0 and r >= 0:
            for d in range(3):
                if np.isnan(hw[r, d]):
                    return True
    return False


#: `engine_kind` of a worker that runs both trace environments, tape and fitted, choosing per
#: call (`env_kind`): a sweep over both compiles one worker per family instead of two
RECORDED = -1
FIT_NEVER, FIT_ALWAYS, FIT_RUNTIME = 0, 1, 2


def _make_worker(family: int, ekind: int):
    """The compiled worker loop for one (policy family, environment kind) pair; `ekind` is an
    env kind of `kbsim.envs.data` or RECORDED (tape and fitted, chosen by `env_kind`).

    `family` and `ekind` are compile-time constants of the closure (numba freezes free
    variables), so numba's dead-branch pruning removes every other family's and environment's
    branch before typing: their functions are never compiled (issue #16, NOTE (D64)). Each pair
    gets its own name (``run_worker_v2_tape``, ...), so its own numba cache index: processes
    compiling different pairs at once never rewrite each other's index.
    """

    def run_worker(
        worker, n_workers, pkind, fparams, iparams, template_buf, state_buf, state_img,
        state_t, pool_img, pool_t, env_img, env_t, env_kind, grows, scratch_img, scratch_t,
        ep_task, ep_n_init, ep_prng, ep_erng, prng, erng, steps, out_img, out_t, ep_out_img,
        ep_out_t,
    ) -> None:
        """Run episodes worker, worker + n_workers, ... of a chunk in place.

        Per episode: reset the state (one copy of the template's packed bytes), then the step
        loop of the module docstring, recording row e of out / ep_out. The policy state, pool,
        environment data, scratch and outputs come as images (`kbsim._byref.tuple_image`: an
        int64 array and the tuple's numba type each) and travel as one pointer each
        (`TupleRef`), to the policy's inner functions too: numba would otherwise unbox their
        ~130 arrays here and pass the state's 51 by value to every callee. The environment's
        answer and arm means (`kbsim.envs.step.tape_answer`, ... / `env_arm_means`) and the
        policy's `prepare` / `select` / `update` (`select_in_v2`, ...) are inlined. Compiled with
        ``_nrt=False``: no reference counting, no allocation.
        """
        state = ref_of_image(state_img, state_t)
        pool = ref_of_image(pool_img, pool_t)
        env = ref_of_image(env_img, env_t)
        scratch = ref_of_image(scratch_img, scratch_t)
        out = ref_of_image(out_img, out_t)
        ep_out = ref_of_image(ep_out_img, ep_out_t)
        # per-worker values of the env (its arrays are read inside the inlined answer and
        # env_arm_means: no call boundary, so no reference counting)
        mode = env.iparams[I_ON_EXHAUST]
        stop = mode == STOP
        timed = env.iparams[I_REVEAL] != REVEAL_AT_ONCE  # signature timing (issue 15)
        # pool and scratch arrays
        p_phi, p_ms, p_key, p_n, p_hw = pool.phi, pool.ms, pool.key, pool.n, pool.hw
        st_rep, st_size = state.rep, state.size
        means, cursor, nan_hw, reps = scratch.means, scratch.cursor, scratch.hw, scratch.reps
        child_phi, child_prof9 = scratch.child_phi, scratch.child_prof9
        child_rt6 = scratch.child_rt6
        sig_asked, sig_due, sig_prov = scratch.sig_asked, scratch.sig_due, scratch.sig_prov
        # outputs
        record = out.reward.shape[1] > 0
        o_cluster, o_strategy, o_parent, o_succ = out.cluster, out.strategy, out.parent, out.success
        o_reward, o_arm, o_best, o_regret = out.reward, out.arm_mean, out.best_mean, out.regret
        o_cum, o_speed, o_pool, o_tok, o_usd = (out.cum_regret, out.best_speedup, out.pool_size,
                                                out.tokens, out.cost_usd)
        for e in range(worker, ep_task.shape[0], n_workers):
            for i in range(state_buf.shape[0]):  # an element loop: LLVM makes it a memcpy
                state_buf[i] = template_buf[i]
            for d in range(prng.shape[0]):
                prng[d] = ep_prng[e, d]
                erng[d] = ep_erng[e, d]
            task = ep_task[e]
            pool.n[0] = 0
            scratch.served[0] = 0
            for i in range(cursor.shape[0]):
                for j in range(cursor.shape[1]):
                    cursor[i, j] = 0
            for i in range(sig_asked.shape[0]):
                sig_asked[i] = -1
                sig_prov[i] = 0
            if ekind == SYNTHETIC:
                k0_ms = env_init(SYNTHETIC, env, task, pool, scratch, ep_n_init[e])
            else:  # tape and fitted start alike
                k0_ms = env_init(TAPE, env, task, pool, scratch, ep_n_init[e])
            floor_ms = env.task_floor_ms[task] if ekind != SYNTHETIC else 0.0  # NOTE D46, D47
            k_first = env.task_kstart[task]
            best_mean = np.nan
            best_ms = np.inf
            for i in range(p_n[0]):
                if ekind == SYNTHETIC:
                    b = env_on_add(SYNTHETIC, env, task, pool, scratch, i)
                elif fit == FIT_ALWAYS or (fit == FIT_RUNTIME and env_kind == FITTED):
                    b = env_on_add(FITTED, env, task, pool, scratch, i)
                else:
                    b = env_on_add(TAPE, env, task, pool, scratch, i)
                if not np.isnan(b) and (np.isnan(best_mean) or b > best_mean):
                    best_mean = b
                best_ms = min(best_ms, p_ms[i])
            served = 0
            cum_regret = 0.0
            tokens = 0
            cost = 0.0
            steps_run = steps
            for t in range(steps):
                if family == FAMILY_V2:  # the policies that profile representatives
                    prepare_in_v2(pkind, fparams, iparams, state, pool, prng)
                    if timed and ekind != SYNTHETIC:  # kbsim.envs.reveal; the order of
                        # Episode.wanted_signatures: representatives without a signature or
                        # with a provisional one, in cluster order
                        for c in range(st_rep.shape[0]):
                            r = st_rep[c]
                            if st_size[c] > 0 and r >= 0 and (
                                    sig_prov[r] == 1 or (p_hw[r, 0] != p_hw[r, 0]
                                                         and p_hw[r, 1] != p_hw[r, 1]
                                                         and p_hw[r, 2] != p_hw[r, 2])):
                                env_reveal_timed(family, env, state, pool, r, t, sig_asked,
                                                 sig_due, sig_prov, erng)
                    elif _reps_pending(st_rep, st_size, p_hw):
                        for j in range(representatives_in_v2(state, pool, reps)):
                            if ekind == SYNTHETIC:
                                env_reveal_hw(SYNTHETIC, env, task, pool, reps[j])
                            else:
                                env_reveal_hw(TAPE, env, task, pool, reps[j])
                # NOTE (issue #18): a not-applicable answer is no step: the pair is marked, the
                # policy selects again; with no applicable pair left (parent -1) the episode
                # ends here. The environment's answer is its kind's (kbsim.envs.step), inlined
                # in a branch per kind that numba prunes but one before inlining (NOTE (D64))
                ended = False
                while True:
                    if family == FAMILY_V2:
                        cluster, s, parent, _ = select_in_v2(pkind, fparams, iparams, state,
                                                             pool, prng)
                    elif family == FAMILY_V1:
                        cluster, s, parent, _ = select_in_v1(pkind, fparams, iparams, state,
                                                             pool, prng)
                    else:
                        cluster, s, parent, _ = select_in_flat(pkind, fparams, iparams, state,
                                                               pool, prng)
                    if parent < 0:
                        ended = True
                        break
                    if ekind == SYNTHETIC:
                        status, child_ms, child_key, tok, c, fresh = synthetic_answer(
                            env, task, k_first, mode, floor_ms, p_key[parent], p_phi[parent],
                            p_ms[parent], s, cursor, erng, child_phi, child_prof9, child_rt6)
                    elif fit == FIT_ALWAYS or (fit == FIT_RUNTIME and env_kind == FITTED):
                        status, child_ms, child_key, tok, c, fresh = fitted_answer(
                            env, task, k_first, mode, floor_ms, p_key[parent], p_phi[parent],
                            p_ms[parent], s, cursor, erng, child_phi, child_prof9, child_rt6)
                    else:
                        status, child_ms, child_key, tok, c, fresh = tape_answer(
                            env, task, k_first, mode, floor_ms, p_key[parent], p_phi[parent],
                            p_ms[parent], s, cursor, erng, child_phi, child_prof9, child_rt6)
                    if status < 0:  # a `stop` tape ran out
                        ended = True
                        break
                    served += fresh
                    if status != NA_STATUS:
                        break
                    mark_na_inline(state, parent, s)
                    tokens += tok
                    cost += c
                if ended:
                    steps_run = t
                    break
                success = status == 1
                if family == FAMILY_V2:
                    reward = update_in_v2(pkind, fparams, iparams, state, pool, cluster, s,
                                          parent, child_ms, success)
                elif family == FAMILY_V1:
                    reward = update_in_v1(pkind, fparams, iparams, state, pool, cluster, s,
                                          parent, child_ms, success)
                else:
                    reward = update_in_flat(pkind, fparams, iparams, state, pool, cluster, s,
                                            parent, child_ms, success)
                arm_mean = means[parent, s]
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
                        idx = pool_add(pool, child_phi, nan_hw, child_prof9, child_rt6, child_ms,
                                       child_key)
                        if idx >= 0:
                            if ekind == SYNTHETIC:
                                b = env_arm_means(SYNTHETIC, env, task, stop, child_key,
                                                  p_phi[idx], p_ms[idx], floor_ms, means[idx])
                            elif fit == FIT_ALWAYS or (fit == FIT_RUNTIME and
                                                       env_kind == FITTED):
                                b = env_arm_means(FITTED, env, task, stop, child_key,
                                                  p_phi[idx], p_ms[idx], floor_ms, means[idx])
                            else:
                                b = env_arm_means(TAPE, env, task, stop, child_key,
                                                  p_phi[idx], p_ms[idx], floor_ms, means[idx])
                            if not np.isnan(b) and (np.isnan(best_mean) or b > best_mean):
                                best_mean = b
                if record:
                    o_cluster[e, t] = cluster
                    o_strategy[e, t] = s
                    o_parent[e, t] = parent
                    o_succ[e, t] = success
                    o_reward[e, t] = reward
                    o_arm[e, t] = arm_mean
                    o_best[e, t] = step_best_mean
                    o_regret[e, t] = regret
                    o_cum[e, t] = cum_regret
                    o_speed[e, t] = k0_ms / best_ms
                    o_pool[e, t] = p_n[0]
                    o_tok[e, t] = tokens
                    o_usd[e, t] = cost
            ep_out.steps_run[e] = steps_run
            ep_out.served[e] = served
            ep_out.final_speedup[e] = k0_ms / best_ms
            ep_out.cum_regret[e] = cum_regret
            ep_out.tokens[e] = tokens
            ep_out.cost_usd[e] = cost

    fit = {FITTED: FIT_ALWAYS, RECORDED: FIT_RUNTIME}.get(ekind, FIT_NEVER)
    env_name = {kind: name for name, kind in ENV_KINDS.items()}.get(ekind, "recorded")
    run_worker.__name__ = f"run_worker_{FAMILY_NAMES[family]}_{env_name}"
    run_worker.__qualname__ = run_worker.__name__
    # only Python calls it: numba's C-callable wrapper (for compiled callers) is not built
    return njit(cache=True, nogil=True, _nrt=False, no_cfunc_wrapper=True)(run_worker)


_WORKERS: dict[tuple[int, int], Any] = {}


def compiled_worker(family: int, ekind: int):
    """The compiled worker for (policy family, env kind), built on first use (then cached by
    numba on disk, per kbsim source version: `kbsim._numba_cache`)."""
    key = (int(family), int(ekind))
    worker = _WORKERS.get(key)
    if worker is None:
        worker = _WORKERS[key] = _make_worker(*key)
    return worker

