"""Filling numba's on-disk cache ahead of use, in several processes at once.

A process that meets a function missing from numba's cache compiles it, and so does every other
process that meets it before the first has saved it: on a cold cache the pytest-xdist workers of
`make test` each compiled the engine workers they first needed (~250 CPU-seconds in all, much of
it twice). `warm_cache` compiles each compiled function once, before they need it: every engine
worker (policy family x environment kind) and the step-by-step entry points (`Episode`'s
`select` / `update` / ..., the environments' `env_step` / `env_on_add`), grouped so that one
process compiles a family's shared functions once, the groups spread over `processes` fresh
processes. `tests/conftest.py` starts it in the xdist controller (`start_warm_cache`), starts
the workers when its first group ends, and schedules no test before the last one does.

    python -m kbsim.replay.warm [--processes N]
    python -m kbsim.replay.warm --workers v1=tape+fitted,synthetic   # only these, here

The second form is what `kbsim.replay.chunks.prepare_workers` starts to compile the other
policy families of a cold first sweep beside its own.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

from kbsim.policies.spec import FAMILY_NAMES

#: the environment sets a sweep runs a worker for (tape and fitted together share one worker)
ENV_SETS: tuple[tuple[str, ...], ...] = (("tape",), ("fitted",), ("synthetic",),
                                         ("tape", "fitted"))
#: what one process compiles, in turn: a family's workers (its functions compiled once, then
#: loaded), or the step-by-step entry points (``step``), which call every family's functions
#: compiled for references (`kbsim.policies.kernels`): they come after v1's in one process and
#: load v2's from the cache, which the other process fills with them in its first ~10 s (v2's
#: first worker), then goes on with v2's other workers and flat's (flat's few functions of its
#: own may be compiled by both). The two took ~47 and ~53 s, measured side by side
GROUPS: tuple[str, ...] = ("v2+flat", "v1+step")


def _warm_family(family: str, env_sets: Sequence[Sequence[str]]) -> int:
    """Compile (or load) the family's engine worker for each environment set
    (`kbsim.replay.chunks.compile_family`), with what a sweep compiles beside it (its RNG
    seeding); returns how many workers."""
    from kbsim.replay.chunks import compile_family, engine_kind_of
    from kbsim.rng import episode_rngs

    compile_family(FAMILY_NAMES.index(family), [engine_kind_of(names) for names in env_sets])
    episode_rngs("policy", [("task", 0)])
    return len(env_sets)


def _warm_steps() -> int:
    """Compile the step-by-step entry points as `Episode` calls them: a short recorded run on a
    synthetic environment (every family's policy code is in each entry point), then
    `mark_na`, which such a run may not reach."""
    import numba

    from kbsim._jit import gc_paused
    from kbsim.envs.registry import build_env
    from kbsim.policies.kernels import mark_na
    from kbsim.policies.spec import parse_policy
    from kbsim.policies.state import new_state
    from kbsim.replay.record import record_trace

    with tempfile.TemporaryDirectory() as folder, gc_paused():
        record_trace(f"{folder}/trace", build_env("synthetic", "default,tasks=2"),
                     "kernelband-v2", seed=0, steps=3)
        state = new_state(parse_policy("kernelband-v2"), 4)
        mark_na.compile((numba.typeof(state), numba.int64, numba.int64))
    return 1


def _warm_group(group: str, env_sets: Sequence[Sequence[str]],
                leave_out: Collection[tuple[str, tuple[str, ...]]] = ()) -> tuple[str, float]:
    start = time.perf_counter()
    for part in group.split("+"):
        if part == "step":
            _warm_steps()
        else:
            _warm_family(part, [names for names in env_sets
                                if (part, tuple(names)) not in leave_out])
    return group, time.perf_counter() - start


def start_warm_cache(processes: int = 2, groups: Sequence[str] = GROUPS,
                     env_sets: Sequence[Sequence[str]] = ENV_SETS,
                     leave_out: Collection[tuple[str, tuple[str, ...]]] = ()
                     ) -> tuple[ProcessPoolExecutor, list[Future]]:
    """Start compiling the `groups` in `processes` fresh processes and return at once: the
    pool (shut it down when done) and a future per group, whose result is (group, seconds).
    `leave_out`: (family, environment set) workers not to compile, e.g. ``("v1", ("fitted",))``.
    """
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=max(1, processes), mp_context=context)
    leave_out = frozenset((family, tuple(names)) for family, names in leave_out)
    return pool, [pool.submit(_warm_group, group, env_sets, leave_out) for group in groups]


def warm_cache(processes: int = 2, groups: Sequence[str] = GROUPS,
               env_sets: Sequence[Sequence[str]] = ENV_SETS,
               say: Callable[[str], None] | None = None,
               leave_out: Collection[tuple[str, tuple[str, ...]]] = ()) -> dict[str, float]:
    """Compile (or find cached) the `groups` (a family's workers for each of `env_sets` but
    those in `leave_out`, or ``step``) in `processes` fresh processes (spawned: each imports
    kbsim afresh and uses the numba cache folder of this kbsim version); returns each group's
    seconds. With `say`, one line when done."""
    start = time.perf_counter()
    pool, futures = start_warm_cache(processes, groups, env_sets, leave_out)
    with pool:
        seconds = dict(future.result() for future in futures)
    if say is not None:
        say(f"numba cache filled: {', '.join(groups)} in {time.perf_counter() - start:.0f} s "
            f"({processes} processes)")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--workers", action="append", metavar="FAMILY=ENVS",
                        help="only these workers, in this process: a policy family (v2, v1, "
                        "flat) and comma-separated environment sets, e.g. "
                        "v1=tape+fitted,synthetic (repeatable)")
    args = parser.parse_args()
    if not args.workers:
        warm_cache(args.processes, say=print)
        return
    from kbsim.envs.data import ENV_KINDS
    from kbsim.replay.chunks import engine_kind_of

    def one_worker(names: list[str]) -> bool:  # environments one engine worker runs
        try:
            engine_kind_of(names)
        except (KeyError, ValueError):
            return False
        return True

    jobs = []
    for item in args.workers:
        family, _, envs = item.partition("=")
        env_sets = [names.split("+") for names in envs.split(",")] if envs else []
        if family not in FAMILY_NAMES or not env_sets or not all(map(one_worker, env_sets)):
            parser.error(f"--workers {item!r}: expected FAMILY=ENVS, FAMILY one of "
                         f"{', '.join(FAMILY_NAMES)}, ENVS comma-separated environments "
                         f"({', '.join(ENV_KINDS)}; tape+fitted for the two in one worker), "
                         "e.g. v1=tape+fitted,synthetic")
        jobs.append((family, env_sets))
    for family, env_sets in jobs:
        _warm_family(family, env_sets)


if __name__ == "__main__":
    main()
