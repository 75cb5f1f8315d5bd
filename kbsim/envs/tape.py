"""Tape environment: the recorded outcomes of a trace, replayed in order.

For each (parent kernel, strategy) the recorded outcomes form a tape; a simulated policy asking
for that arm gets the tape's next outcome (same child, same runtime, same tokens and cost). A
correct child joins the pool with its recorded features; its pool key is its kernel row.

When a tape runs out (``on_exhaust``):

- ``resample``: a bootstrap draw (uniform, env rng) from that tape; if it was empty to begin
  with, the ``nearest`` rule applies;
- ``nearest``: a bootstrap draw from the tape of the nearest recorded parent in z-scored
  phi-space that has outcomes for the same strategy (the Lipschitz assumption); the child's
  runtime is scaled by the runtime ratio of that outcome (T_child = T_parent * Tc' / Tp'),
  never below the task's floor (NOTE D47, below);
- ``stop``: the episode is truncated at this step (the horizon reached is reported).

NOTE (D47): as in the fitted env (NOTE D46), a runtime ratio applied to a parent other than the
one it was recorded on is bounded below by the task's floor, the fastest correct runtime
recorded for the task (k0's included): T_child = max(T_parent * Tc' / Tp', floor). Without it,
stand-in ratios compound past anything the trace ever ran (3.1x against a recorded best of 2.1x
in 400 steps on a synthetic trace). Outcomes served from a kernel's own tape carry recorded
runtimes, never below the floor, and are unchanged.

A recorded ``not_applicable`` outcome (DESIGN.md) is an unavailable action: drawn from a tape,
it spends no step and the policy marks the (member, strategy) pair and selects again; a logged
run with such rows is thereby replayed exactly. Tape means (pseudo-regret) keep counting it as
reward 0 (NOTE D62). ``not_applicable="failure"`` replays the rule before issue #18.

A strategy with no outcome at all in the task (nothing to draw from) is an immediate failure
with no tokens. Coverage = the fraction of steps served fresh from the asked tape.

Pseudo-regret is measured against tape means: the mean v2 reward max(0, (Tp - Tc) / Tp)
(failures 0) of each tape's recorded outcomes (for an empty tape, that of the tape the
``nearest`` rule would use, with the floor's clamp when the member's runtime times some recorded
ratio of that tape falls below it; NaN under ``stop``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from numba import njit

from kbsim._jit import inner_njit
from kbsim.envs.data import I_ON_EXHAUST, NEAREST, ON_EXHAUST, STOP, TAPE, Env, make_env
from kbsim.envs.recorded import apply_na_rule, compile_recorded
from kbsim.envs.reveal import apply_reveal
from kbsim.rng import rand_int
from kbsim.strategies import N_STRATEGIES
from kbsim.trace.reveals import Reveal


def build_tape(
    steps: pa.Table,
    kernels: pa.Table,
    *,
    on_exhaust: str = "resample",
    tasks: Sequence[str] | None = None,
    description: str = "trace",
    not_applicable: str = "unavailable",
    reveals: Sequence[Reveal] | None = None,
    reveal: str | None = None,
) -> Env:
    """The tape environment of a trace's steps and kernels tables."""
    if on_exhaust not in ON_EXHAUST:
        raise ValueError(
            f"unknown on-exhaust rule {on_exhaust!r}; expected one of {', '.join(ON_EXHAUST)}."
        )
    fields, task_ids = compile_recorded(steps, kernels, tasks)
    apply_na_rule(fields, not_applicable)
    timing = apply_reveal(fields, fields["kernel_rows"], reveals, reveal)
    fields["iparams"][I_ON_EXHAUST] = ON_EXHAUST[on_exhaust]
    return Env(
        name="tape",
        kind=TAPE,
        data=make_env(fields),
        task_ids=task_ids,
        n_init=(1,) * len(task_ids),
        grows=True,
        description=description,
        reveal=timing,
    )


@njit(cache=True)
def tape_arm_mean(env, key: int, s: int) -> float:
    """Mean recorded v2 reward of (kernel row `key`, strategy s), or of its `nearest` stand-in,
    before the floor (NOTE D47): what `tape_arm_means_arrays` gives a member far above it."""
    mean = env.tape_mean[key, s]
    if np.isnan(mean) and env.iparams[I_ON_EXHAUST] != STOP:
        nn = env.tape_nn[key, s]
        if nn >= 0:
            mean = env.tape_mean[nn, s]
    return mean


@inner_njit
def stand_in_mean(tape_mean, tape_start, o_success, o_child_ms, o_parent_ms, nn, s, ms,
                  floor_ms) -> float:
    """Exact mean reward of a draw from tape (nn, s) applied as a runtime ratio to a parent
    running in ms, children clamped at floor_ms (NOTE D47): the recorded tape mean when no
    recorded ratio reaches below the floor, else the clamped rewards averaged over the tape."""
    slot = nn * N_STRATEGIES + s
    lo, hi = tape_start[slot], tape_start[slot + 1]
    clamped = False
    for o in range(lo, hi):
        if o_success[o] and ms * (o_child_ms[o] / o_parent_ms[o]) < floor_ms:
            clamped = True
            break
    if not clamped or hi == lo:
        return tape_mean[nn, s]
    total = 0.0
    for o in range(lo, hi):
        if o_success[o]:
            child_ms = max(ms * (o_child_ms[o] / o_parent_ms[o]), floor_ms)
            total += max(0.0, (ms - child_ms) / ms)
    return total / (hi - lo)


@njit(cache=True)
def tape_arm_means_arrays(tape_mean, tape_nn, tape_start, o_success, o_child_ms, o_parent_ms,
                          stop, key, ms, floor_ms, out) -> None:
    """out[s] = mean reward of arm (member with kernel row `key` running in ms, s): its own
    tape's recorded mean, or for an empty tape (not under ``stop``) that of the `nearest`
    stand-in, whose ratios are clamped at floor_ms (NOTE D47; 0: no floor)."""
    for s in range(out.shape[0]):
        mean = tape_mean[key, s]
        if np.isnan(mean) and not stop:
            nn = tape_nn[key, s]
            if nn >= 0:
                mean = stand_in_mean(tape_mean, tape_start, o_success, o_child_ms, o_parent_ms,
                                     nn, s, ms, floor_ms)
        out[s] = mean


@inner_njit
def tape_pick_arrays(tape_start, tape_nn, k_first, mode, key, s, cursor, rng):
    """(outcome row or -1, own tape?, fresh?, truncate?) for kernel row `key` and strategy s;
    k_first is the task's first kernel row, mode the on-exhaust rule."""
    k_local = key - k_first
    slot = key * N_STRATEGIES + s
    lo, hi = tape_start[slot], tape_start[slot + 1]
    used = cursor[k_local, s]
    if lo + used < hi:
        cursor[k_local, s] = used + 1
        return lo + used, True, True, False
    if mode == STOP:
        return -1, True, False, True
    if mode != NEAREST and hi > lo:
        return lo + rand_int(rng, hi - lo), True, False, False
    nn = tape_nn[key, s]
    if nn >= 0:
        slot = nn * N_STRATEGIES + s
        lo2, hi2 = tape_start[slot], tape_start[slot + 1]
        return lo2 + rand_int(rng, hi2 - lo2), False, False, False
    if hi > lo:
        return lo + rand_int(rng, hi - lo), True, False, False
    return -1, True, False, False


@njit(cache=True)
def tape_pick(env, task: int, key: int, s: int, cursor: np.ndarray, rng: np.ndarray):
    """`tape_pick_arrays` on an EnvData."""
    return tape_pick_arrays(env.tape_start, env.tape_nn, env.task_kstart[task],
                            env.iparams[I_ON_EXHAUST], key, s, cursor, rng)
