"""Running the compiled engine over a chunk of episodes: workspaces, threads, first compiles.

`run_chunk` splits a chunk's episodes over the workspace's workers (worker w takes episodes
w, w + W, ...), each on its own thread running `kbsim.replay.engine.compiled_worker`, which
releases the GIL. `prepare_workers` compiles (or loads from numba's disk cache) the workers a
sweep needs before it starts, and says so on one line when that means compiling; the policy
families of a cold sweep compile side by side, the others in helper processes.

NOTE (D64): threads, not numba's ``parallel=True`` / prange: a prange loop compiled the whole
engine twice more (the gufunc and its caller: 49 s of the 100 s cold start measured on 2 cores).
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numba
import numpy as np
from numba.core import event

from kbsim._byref import TupleImage, tuple_image
from kbsim._jit import gc_paused
from kbsim.envs.data import ENV_KINDS, FITTED, SYNTHETIC, TAPE, Env, new_scratch
from kbsim.policies.spec import (
    FAMILY_FLAT,
    FAMILY_NAMES,
    FAMILY_V1,
    FAMILY_V2,
    PolicySpec,
    parse_policy,
    policy_family,
)
from kbsim.policies.state import new_pool, new_state
from kbsim.replay._packed import PackedState, pack_state
from kbsim.replay.engine import RECORDED, EpisodeOut, StepOut, compiled_worker, new_outputs

#: seconds one (policy family, environment) worker takes to compile with an empty cache, its
#: family's functions included, on the 2-core machine of docs/benchmarks.md ("First contact";
#: measured idle, 2026-11-27): the announcement's estimate, not a promise
COMPILE_SECONDS: dict[int, float] = {FAMILY_V2: 16.0, FAMILY_V1: 9.0, FAMILY_FLAT: 5.0}
#: a policy of each family: the compiled worker depends on the family only
FAMILY_POLICY = {FAMILY_V2: "kernelband-v2", FAMILY_V1: "kernelband-v1", FAMILY_FLAT: "greedy"}
#: the environments a worker compiled for an engine kind runs (`engine_kinds`)
ENGINE_ENVS = {TAPE: ("tape",), FITTED: ("fitted",), SYNTHETIC: ("synthetic",),
               RECORDED: ("tape", "fitted")}
#: seconds a helper process takes to start and import kbsim before it compiles
_HELPER_START_S = 2.0
#: seconds after which a helper that has not ended is given up (its work done here instead)
_HELPER_TIMEOUT_S = 1800.0


class Workspace(NamedTuple):
    """Per-worker policy states (packed: one byte buffer each), pools and scratch arrays, and
    their images (`kbsim._byref`), which the engine worker takes in their place."""

    template: PackedState
    states: list[PackedState]
    pools: list
    scratches: list
    rngs: list[tuple[np.ndarray, np.ndarray]]  # per worker: (policy, env) RNG state buffers
    engine_kind: int  # the env kind the engine worker is compiled for (`engine_kinds`)
    images: list[tuple[TupleImage, TupleImage, TupleImage]]  # per worker: state, pool, scratch


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
    states = [pack_state(new_state(spec, max_pool)) for _ in range(n_workers)]
    pools = [new_pool(max_pool) for _ in range(n_workers)]
    scratches = [new_scratch(env.data, max_pool) for _ in range(n_workers)]
    return Workspace(
        template=pack_state(new_state(spec, max_pool)),
        states=states,
        pools=pools,
        scratches=scratches,
        rngs=[(np.empty(3, np.int64), np.empty(3, np.int64)) for _ in range(n_workers)],
        engine_kind=env.kind if engine_kind is None else engine_kind,
        images=[(tuple_image(packed.state), tuple_image(pool), tuple_image(scratch))
                for packed, pool, scratch in zip(states, pools, scratches, strict=True)],
    )


def _worker_args(spec: PolicySpec, env: Env, workspace: Workspace, w: int,
                 ep_task: np.ndarray, ep_n_init: np.ndarray, ep_prng: np.ndarray,
                 ep_erng: np.ndarray, steps: int, out: StepOut, ep_out: EpisodeOut) -> tuple:
    packed = workspace.states[w]
    prng, erng = workspace.rngs[w]
    state, pool, scratch = workspace.images[w]
    data, out_image, ep_image = (tuple_image(t) for t in (env.data, out, ep_out))
    return (w, len(workspace.states), spec.kind, spec.fparams, spec.iparams,
            workspace.template.buf, packed.buf, *state[:2], *pool[:2], *data[:2], env.kind,
            env.grows, *scratch[:2], ep_task, ep_n_init, ep_prng, ep_erng, prng, erng, steps,
            *out_image[:2], *ep_image[:2])


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


def _signature(spec: PolicySpec, env: Env, steps: int, engine_kind: int) -> tuple:
    """The numba types of a worker's arguments for `spec` on `env` (they depend on the policy
    family and the environment kind, not on the data)."""
    workspace = new_workspace(spec, env, steps, 1, engine_kind=engine_kind)
    out, ep_out = new_outputs(1, steps)
    empty = np.zeros((1, 3), np.int64)
    args = _worker_args(spec, env, workspace, 0, empty[:, 0].copy(), empty[:, 0].copy(),
                        empty, empty, steps, out, ep_out)
    return tuple(numba.typeof(a) for a in args)


def _spare_cpus() -> int:
    """CPUs this process may use beside its own, for helper processes (0 where it may not
    start any: a daemonic process, such as a worker of a process pool)."""
    if multiprocessing.current_process().daemon:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return cpus - 1


def engine_kind_of(env_names: Collection[str]) -> int:
    """The engine kind of the worker a sweep over the environments named runs (one kind)."""
    (kind,) = set(engine_kinds({ENV_KINDS[name] for name in env_names}).values())
    return kind


def compile_family(family: int, kinds: Sequence[int]) -> float:
    """Compile (or load from numba's disk cache) the workers of policy `family` for each engine
    kind of `kinds`, on small synthetic environments of those kinds (a worker's types do not
    depend on the data); returns the seconds it took. What the helper processes of
    `prepare_workers` run (``python -m kbsim.replay.warm --workers ...``)."""
    from kbsim.envs.registry import build_env
    from kbsim.trace.synthetic_trace import synthetic_tables

    start = time.perf_counter()
    tables = synthetic_tables(n_steps=120, n_tasks=2, seed=0)
    spec = parse_policy(FAMILY_POLICY[family])
    for kind in kinds:
        envs = [build_env(name, "default,tasks=2" if name == "synthetic" else tables)
                for name in ENGINE_ENVS[kind]]
        prepare_workers([(spec, env) for env in envs], 2, parallel=False)
    return time.perf_counter() - start


class _Helper(NamedTuple):
    """A helper process of `prepare_workers` and the file its stderr goes to."""

    proc: subprocess.Popen
    log: Any

    def failure(self, timeout_s: float = _HELPER_TIMEOUT_S) -> str | None:
        """None once it has ended well, else how it ended (waits for it, `timeout_s` at most,
        then kills it)."""
        try:
            if self.proc.wait(timeout=timeout_s) == 0:
                return None
        except subprocess.TimeoutExpired:
            self.close()
            return f"still compiling after {timeout_s:.0f} s"
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip()[-500:]
        return f"exit {self.proc.returncode}: {tail}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def _start_helpers(families: dict[int, list[int]], n: int) -> dict[int, _Helper]:
    """`n` helper processes compiling the workers of `families` (family -> engine kinds),
    the families dealt out in turn, the costliest first; returns each family's helper."""
    shares: list[list[int]] = [[] for _ in range(n)]
    by_cost = sorted(families, key=lambda f: -COMPILE_SECONDS[f] * len(families[f]))
    for i, family in enumerate(by_cost):
        shares[i % n].append(family)
    root = str(Path(__file__).resolve().parents[2])  # the folder kbsim is imported from
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    helpers: dict[int, _Helper] = {}
    try:
        for share in shares:
            command = [sys.executable, "-m", "kbsim.replay.warm"]
            for family in share:
                envs = ",".join("+".join(ENGINE_ENVS[kind]) for kind in families[family])
                command += ["--workers", f"{FAMILY_NAMES[family]}={envs}"]
            log = tempfile.TemporaryFile()
            try:
                proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=log)
            except OSError:
                log.close()
                raise
            helper = _Helper(proc, log)
            helpers.update({family: helper for family in share})
    except OSError:
        for helper in set(helpers.values()):
            helper.close()
        raise
    return helpers


def prepare_workers(pairs: Sequence[tuple[PolicySpec, Env]], steps: int,
                    say: Callable[[str], None] | None = None, parallel: bool = True) -> bool:
    """Compile (or load from the disk cache) the workers the (policy, env) pairs need, before
    any episode runs; returns True when something was compiled. Workers are keyed by (policy
    family, `engine_kinds` of the pairs' envs), as `run_sweep` runs them.

    Families compile in parallel: at the first compilation (a cache miss, so a first run of
    this kbsim version), the workers of the other policy families still to prepare go to
    helper processes (`compile_family`, as many as there are spare CPUs, at most one a
    family), which fill numba's disk cache while this process compiles its own family's; each
    of theirs is then loaded from the cache (or compiled here, should its helper fail). A
    family's workers stay in one process, which compiles the functions they share once.
    `parallel=False`: all of them here.

    With `say`, the first compilation is announced on one line with the expected time (the
    remaining workers' `COMPILE_SECONDS`, spread over the processes): a cold first run says
    what it is doing instead of showing a progress bar at 0 %.
    """
    kinds = engine_kinds({env.kind for _, env in pairs})
    todo: dict[tuple[int, int], tuple[PolicySpec, Env]] = {}
    for spec, env in pairs:
        todo.setdefault((policy_family(spec.kind), kinds[env.kind]), (spec, env))
    signatures = {key: _signature(*todo[key], steps, key[1]) for key in todo}
    pending = [key for key in todo if signatures[key] not in compiled_worker(*key).overloads]
    compiled = False
    helpers: dict[int, _Helper] = {}

    def start(first: tuple[int, int]) -> None:
        """At the first compilation: hand the other families to helpers, say it once."""
        nonlocal compiled
        if compiled:
            return
        compiled = True
        rest = [first, *pending]
        others: dict[int, list[int]] = {}
        for family, kind in rest:
            if family != first[0]:
                others.setdefault(family, []).append(kind)
        n_helpers = min(len(others), _spare_cpus() if parallel else 0)
        if n_helpers > 0:
            try:
                helpers.update(_start_helpers(others, n_helpers))
            except OSError as error:  # no interpreter to start (an embedded Python, say)
                warnings.warn(f"could not start a helper process to compile with ({error}); "
                              "compiling every policy family here", RuntimeWarning,
                              stacklevel=2)
                n_helpers = 0
            pending.sort(key=lambda key: key[0] in helpers)  # this process's family first
        if say is not None:
            here = sum(COMPILE_SECONDS[family] for family, _ in rest if family not in helpers)
            away = sum(COMPILE_SECONDS[family] for family, _ in rest if family in helpers)
            seconds = max(here, _HELPER_START_S + away / n_helpers) if helpers else here
            processes = f", {1 + n_helpers} processes" if helpers else ""
            say(f"compiling the replay engine (first run of this version, about "
                f"{seconds:.0f} s{processes})")

    try:
        while pending:
            key = pending.pop(0)
            helper = helpers.get(key[0])
            failure = helper.failure() if helper is not None else None  # else: load its work
            if helper is not None and failure is not None:
                warnings.warn(f"compiling the {FAMILY_NAMES[key[0]]} policies in a helper "
                              f"process failed ({failure}); compiling them here",
                              RuntimeWarning, stacklevel=2)
                for family in [f for f, h in helpers.items() if h == helper]:
                    del helpers[family]
                helper.close()
            with event.install_listener("numba:compile", _FirstCompile(lambda k=key: start(k))), \
                    gc_paused():
                compiled_worker(*key).compile(signatures[key])
    finally:
        for helper in set(helpers.values()):
            helper.close()
    return compiled
