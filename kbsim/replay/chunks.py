"""Running the compiled engine over a chunk of episodes: workspaces, threads, first compiles.

`run_chunk` splits a chunk's episodes over the workspace's workers (worker w takes episodes
w, w + W, ...), each on its own thread running `kbsim.replay.engine.compiled_worker`, which
releases the GIL. `prepare_workers` compiles (or loads from numba's disk cache) the workers a
sweep needs before it starts, and says so on one line when that means compiling.

NOTE (D64): threads, not numba's ``parallel=True`` / prange: a prange loop compiled the whole
engine twice more (the gufunc and its caller: 49 s of the 100 s cold start measured on 2 cores).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np
from numba.core import event

from kbsim.envs.data import FITTED, TAPE, Env, new_scratch
from kbsim.policies.spec import FAMILY_FLAT, FAMILY_V1, FAMILY_V2, PolicySpec, policy_family
from kbsim.policies.state import new_pool, new_state
from kbsim.replay._packed import PackedState, pack_state
from kbsim.replay.engine import RECORDED, EpisodeOut, StepOut, compiled_worker, new_outputs

#: seconds one (policy family, environment) worker takes to compile with an empty cache, its
#: family's functions included, on the shared 2-core development machine (load average ~3;
#: docs/benchmarks.md, "First contact"): the announcement's estimate, not a promise
COMPILE_SECONDS: dict[int, float] = {FAMILY_V2: 18.0, FAMILY_V1: 18.0, FAMILY_FLAT: 8.0}


class Workspace(NamedTuple):
    """Per-worker policy states (packed: one byte buffer each), pools and scratch arrays."""

    template: PackedState
    states: list[PackedState]
    pools: list
    scratches: list
    rngs: list[tuple[np.ndarray, np.ndarray]]  # per worker: (policy, env) RNG state buffers
    engine_kind: int  # the env kind the engine worker is compiled for (`engine_kinds`)


def engine_kinds(env_kinds: Collection[int]) -> dict[int, int]:
    """Env kind -> the kind its engine worker is compiled for, in a sweep over `env_kinds`:
    tape and fitted together share one worker (`engine.RECORDED`: a family's code is compiled
    and optimised once for both), any other kind, or either alone, gets its own."""
    both = TAPE in env_kinds and FITTED in env_kinds
    return {kind: RECORDED if both and kind in (TAPE, FITTED) else kind for kind in env_kinds}


def new_workspace(spec: PolicySpec, env: Env, steps: int, n_workers: int,
                  engine_kind: int | None = None) -> Workspace:
    """Per-worker policy states, pools and scratch arrays for chunks of `spec` on `env`
    (reset per episode by the engine, so one workspace serves every chunk of the pair), run by
    the worker compiled for `engine_kind` (default: env.kind)."""
    max_pool = int(max(env.n_init)) + (steps if env.grows else 0)
    return Workspace(
        template=pack_state(new_state(spec, max_pool)),
        states=[pack_state(new_state(spec, max_pool)) for _ in range(n_workers)],
        pools=[new_pool(max_pool) for _ in range(n_workers)],
        scratches=[new_scratch(env.data, max_pool) for _ in range(n_workers)],
        rngs=[(np.empty(3, np.int64), np.empty(3, np.int64)) for _ in range(n_workers)],
        engine_kind=env.kind if engine_kind is None else engine_kind,
    )


def _worker_args(spec: PolicySpec, env: Env, workspace: Workspace, w: int,
                 ep_task: np.ndarray, ep_n_init: np.ndarray, ep_prng: np.ndarray,
                 ep_erng: np.ndarray, steps: int, out: StepOut, ep_out: EpisodeOut) -> tuple:
    packed = workspace.states[w]
    prng, erng = workspace.rngs[w]
    return (w, len(workspace.states), spec.kind, spec.fparams, spec.iparams,
            workspace.template.buf, packed.buf, packed.state, workspace.pools[w], env.data,
            env.kind, env.grows, workspace.scratches[w], ep_task, ep_n_init, ep_prng, ep_erng,
            prng, erng, steps, out, ep_out)


def run_chunk(spec: PolicySpec, env: Env, workspace: Workspace, ep_task: np.ndarray,
              ep_n_init: np.ndarray, ep_prng: np.ndarray, ep_erng: np.ndarray, steps: int,
              out: StepOut, ep_out: EpisodeOut) -> None:
    """Run every episode of a chunk, one worker per thread, writing rows of out / ep_out.

    ep_prng / ep_erng: (E, 3) int64 RNG states (copied, not advanced). Episode results depend
    only on their own row of ep_task / ep_n_init / ep_prng / ep_erng.
    """
    worker_fn = compiled_worker(policy_family(spec.kind), workspace.engine_kind)
    arrays = [np.ascontiguousarray(a, np.int64) for a in (ep_task, ep_n_init, ep_prng, ep_erng)]

    def work(w: int) -> None:
        worker_fn(*_worker_args(spec, env, workspace, w, *arrays, steps, out, ep_out))

    n_workers = len(workspace.states)
    if n_workers == 1 or len(ep_task) <= 1:
        for w in range(n_workers):
            work(w)
        return
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        for future in [pool.submit(work, w) for w in range(n_workers)]:
            future.result()


class _FirstCompile(event.Listener):
    """Calls `on_first` at the start of the first compilation numba reports (a cache miss)."""

    def __init__(self, on_first: Callable[[], None]) -> None:
        self.on_first: Callable[[], None] | None = on_first

    def on_start(self, ev: event.Event) -> None:
        if self.on_first is not None:
            on_first, self.on_first = self.on_first, None
            on_first()

    def on_end(self, ev: event.Event) -> None:
        pass


def prepare_workers(pairs: Sequence[tuple[PolicySpec, Env]], steps: int,
                    say: Callable[[str], None] | None = None) -> bool:
    """Compile (or load from the disk cache) the workers the (policy, env) pairs need, before
    any episode runs; returns True when something was compiled. Workers are keyed by (policy
    family, `engine_kinds` of the pairs' envs), as `run_sweep` runs them.

    With `say`, the first compilation is announced on one line with the expected time (the
    remaining workers' `COMPILE_SECONDS`): a cold first run says what it is doing instead of
    showing a progress bar at 0 %.
    """
    kinds = engine_kinds({env.kind for _, env in pairs})
    todo: dict[tuple[int, int], tuple[PolicySpec, Env]] = {}
    for spec, env in pairs:
        todo.setdefault((policy_family(spec.kind), kinds[env.kind]), (spec, env))
    keys = list(todo)
    compiled = False
    for i, key in enumerate(keys):
        spec, env = todo[key]
        worker = compiled_worker(*key)
        workspace = new_workspace(spec, env, steps, 1, engine_kind=key[1])
        out, ep_out = new_outputs(1, steps)
        empty = np.zeros((1, 3), np.int64)
        args = _worker_args(spec, env, workspace, 0, empty[:, 0].copy(), empty[:, 0].copy(),
                            empty, empty, steps, out, ep_out)
        signature = tuple(numba.typeof(a) for a in args)
        if signature in worker.overloads:
            continue

        def announce(rest: list[tuple[int, int]] = keys[i:]) -> None:
            nonlocal compiled
            if not compiled and say is not None:  # one line, at the first compilation
                seconds = sum(COMPILE_SECONDS[family] for family, _ in rest)
                say(f"compiling the replay engine (first run of this version, about "
                    f"{seconds:.0f} s)")
            compiled = True

        with event.install_listener("numba:compile", _FirstCompile(announce)):
            worker.compile(signature)
    return compiled
