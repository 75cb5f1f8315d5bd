"""Speed of the bandit core: compiled policies vs the plain-Python reference, same workload.

Two workloads, each run through the compiled kernels and through `kbsim.policies.reference`
with the same seeds (the benchmark checks that both end in the same state):

- core: select + update over 3 clusters x 6 strategies with a fixed pool of 6 kernels (two per
  cluster, hardware signatures known), re-clustering disabled (tau = 10**6), synthetic outcomes
  (success 70 %, child runtime = parent x U(0.8, 1.2), children not added);
- episodes: full kernelband-v2 episodes (default parameters: re-clustering every 10 steps once
  the pool has 6 members), T = 200 steps, every correct child joins the pool; the compiled
  side resets state and pool from a template before each episode (included in the time).

Compiled numbers are given two ways: `select_inline` / `update_inline` in a loop compiled with
``_nrt=False`` (the hot-loop path), and `select` / `update` called from a plain ``@njit`` loop.

Usage: .venv/bin/python benchmarks/bench_policies.py [--repeats 7] [--core-steps 2000000]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

# measure the kbsim of the tree this script lives in (a `git worktree` of an older commit, say),
# not whichever checkout the virtualenv has installed in editable mode
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from kbsim.policies import (  # noqa: E402
    copy_pool,
    copy_state,
    new_pool,
    new_state,
    parse_policy,
    pool_add,
    select,
    select_inline,
    update,
    update_inline,
)
from kbsim.policies.reference import select_ref, update_ref  # noqa: E402
from kbsim.rng import (  # noqa: E402
    new_rng,
    py_rand_normal,
    py_rand_uniform,
    rand_normal,
    rand_uniform,
)

CORE_SPEC = "kernelband-v2:tau=1000000"
EPISODE_SPEC = "kernelband-v2"
EPISODE_STEPS = 200
EPISODE_POOL = EPISODE_STEPS + 1


# ---------------------------------------------------------------------------- workloads


def core_pool() -> object:
    """Six kernels in three well-separated phi groups, all profiled."""
    gen = np.random.default_rng(0)
    pool = new_pool(6)
    for k in range(6):
        phi = np.full(5, 10.0 * (k // 2)) + gen.normal(0.0, 0.1, 5)
        hw = gen.uniform(30.0, 100.0, 3)
        pool_add(pool, phi, hw, np.full(9, np.nan), np.zeros(6), 1.0 + 0.1 * k, k)
    return pool


@njit(cache=True, _nrt=False)
def core_loop_inline(kind, fparams, iparams, state, pool, rng, env, steps) -> float:
    total = 0.0
    for _ in range(steps):
        c, s, p, _prop = select_inline(kind, fparams, iparams, state, pool, rng)
        success = rand_uniform(env) < 0.7
        child_ms = pool.ms[p] * (0.8 + 0.4 * rand_uniform(env))
        total += update_inline(kind, fparams, iparams, state, pool, c, s, p, child_ms, success)
    return total


@njit(cache=True)
def core_loop_call(kind, fparams, iparams, state, pool, rng, env, steps) -> float:
    total = 0.0
    for _ in range(steps):
        c, s, p, _prop = select(kind, fparams, iparams, state, pool, rng)
        success = rand_uniform(env) < 0.7
        child_ms = pool.ms[p] * (0.8 + 0.4 * rand_uniform(env))
        total += update(kind, fparams, iparams, state, pool, c, s, p, child_ms, success)
    return total


def core_loop_ref(spec, state, pool, rng, env, steps) -> float:
    total = 0.0
    for _ in range(steps):
        c, s, p, _prop = select_ref(spec, state, pool, rng)
        success = py_rand_uniform(env) < 0.7
        child_ms = float(pool.ms[p] * (0.8 + 0.4 * py_rand_uniform(env)))
        total += update_ref(spec, state, pool, c, s, p, child_ms, success)
    return total


@njit(cache=True, _nrt=False)
def episode_steps(kind, fparams, iparams, state, pool, rng, env, steps, phi, hw, prof9,
                  rt6) -> float:
    total = 0.0
    for step in range(steps):
        c, s, p, _prop = select_inline(kind, fparams, iparams, state, pool, rng)
        success = rand_uniform(env) < 0.7
        child_ms = pool.ms[p] * (0.8 + 0.4 * rand_uniform(env))
        total += update_inline(kind, fparams, iparams, state, pool, c, s, p, child_ms, success)
        if success:
            for d in range(5):
                phi[d] = pool.phi[p, d] + 0.3 * rand_normal(env)
            for d in range(3):
                hw[d] = 30.0 + 70.0 * rand_uniform(env)
            pool_add(pool, phi, hw, prof9, rt6, child_ms, step + 1)
    return total


def episode_ref(spec, state, pool, rng, env, steps) -> float:
    total = 0.0
    for step in range(steps):
        c, s, p, _prop = select_ref(spec, state, pool, rng)
        success = py_rand_uniform(env) < 0.7
        child_ms = float(pool.ms[p] * (0.8 + 0.4 * py_rand_uniform(env)))
        total += update_ref(spec, state, pool, c, s, p, child_ms, success)
        if success:
            phi = np.array([pool.phi[p, d] + 0.3 * py_rand_normal(env) for d in range(5)])
            hw = np.array([30.0 + 70.0 * py_rand_uniform(env) for _ in range(3)])
            pool_add(pool, phi, hw, np.full(9, np.nan), np.zeros(6), child_ms, step + 1)
    return total


def _make_reset(fields_ndim: list[tuple[str, int]]):
    """A compiled `reset(dst, src)` copying every array of a NamedTuple of arrays."""
    lines = ["def reset(dst, src):"]
    for name, ndim in fields_ndim:
        idx = ", ".join([":"] * ndim)
        lines.append(f"    dst.{name}[{idx}] = src.{name}")
    namespace: dict = {}
    exec("\n".join(lines), namespace)  # generated: one line per field
    return njit(namespace["reset"])


def make_episodes_runner(state_template, pool_template):
    reset_state = _make_reset([(f, getattr(state_template, f).ndim)
                               for f in state_template._fields])
    reset_pool = _make_reset([(f, getattr(pool_template, f).ndim) for f in pool_template._fields])

    @njit
    def run(kind, fparams, iparams, state, tmpl_state, pool, tmpl_pool, rng, env, steps,
            episodes) -> float:
        phi = np.empty(5)
        hw = np.empty(3)
        prof9 = np.full(9, np.nan)
        rt6 = np.zeros(6)
        total = 0.0
        for _ in range(episodes):
            reset_state(state, tmpl_state)
            reset_pool(pool, tmpl_pool)
            total += episode_steps(kind, fparams, iparams, state, pool, rng, env, steps, phi,
                                   hw, prof9, rt6)
        return total

    return run


# ---------------------------------------------------------------------------- timing


def _time(fn, repeats: int) -> list[float]:
    """CPU seconds of this thread per repeat (robust to other processes sharing the cores)."""
    out = []
    for _ in range(repeats):
        t0 = time.thread_time()
        fn()
        out.append(time.thread_time() - t0)
    return out


def _states_equal(a, b) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for f, x, y in zip(a._fields, a, b,
                                                                      strict=True)
               if not (f.startswith("sc_") or f.startswith("pc_")))


def bench_core(repeats: int, steps: int, ref_steps: int) -> dict:
    spec = parse_policy(CORE_SPEC)
    args = (spec.kind, spec.fparams, spec.iparams)
    out = {}
    for label, loop in (("inline", core_loop_inline), ("call", core_loop_call)):
        state, pool = new_state(spec, 6), core_pool()
        rng, env = new_rng(1), new_rng(2)
        loop(*args, state, pool, rng, env, 10)  # compile / load from cache
        times = _time(lambda loop=loop, state=state, pool=pool, rng=rng, env=env:
                      loop(*args, state, pool, rng, env, steps), repeats)
        out[label] = [t / steps * 1e9 for t in times]
    # same workload, same seeds, through compiled and reference: identical end states
    st_c, pool_c = new_state(spec, 6), core_pool()
    st_r, pool_r = copy_state(st_c), copy_pool(pool_c)
    rng_c, env_c = new_rng(3), new_rng(4)
    rng_r, env_r = rng_c.copy(), env_c.copy()
    t0 = time.perf_counter()
    core_loop_ref(spec, st_r, pool_r, rng_r, env_r, ref_steps)
    out["reference"] = [(time.perf_counter() - t0) / ref_steps * 1e9]
    core_loop_inline(*args, st_c, pool_c, rng_c, env_c, ref_steps)
    out["same_state"] = _states_equal(st_c, st_r) and np.array_equal(rng_c, rng_r)
    return out


def bench_episodes(repeats: int, episodes: int, ref_episodes: int) -> dict:
    spec = parse_policy(EPISODE_SPEC)
    args = (spec.kind, spec.fparams, spec.iparams)
    tmpl_pool = new_pool(EPISODE_POOL)
    pool_add(tmpl_pool, np.zeros(5), np.array([60.0, 50.0, 40.0]), np.full(9, np.nan),
             np.zeros(6), 1.0, 0)
    tmpl_state = new_state(spec, EPISODE_POOL)
    run = make_episodes_runner(tmpl_state, tmpl_pool)
    state, pool = copy_state(tmpl_state), copy_pool(tmpl_pool)
    rng, env = new_rng(5), new_rng(6)
    run(*args, state, tmpl_state, pool, tmpl_pool, rng, env, EPISODE_STEPS, 1)  # compile
    times = _time(lambda: run(*args, state, tmpl_state, pool, tmpl_pool, rng, env,
                              EPISODE_STEPS, episodes), repeats)
    out = {"inline": [t / (episodes * EPISODE_STEPS) * 1e9 for t in times]}
    # reference: same seeds per episode, and a check that one episode ends identically
    rng_c, env_c = new_rng(7), new_rng(8)
    rng_r, env_r = rng_c.copy(), env_c.copy()
    total = 0.0
    same = True
    for _ in range(ref_episodes):
        st_r, pool_r = copy_state(tmpl_state), copy_pool(tmpl_pool)
        t0 = time.perf_counter()
        episode_ref(spec, st_r, pool_r, rng_r, env_r, EPISODE_STEPS)
        total += time.perf_counter() - t0
        st_c, pool_c = copy_state(tmpl_state), copy_pool(tmpl_pool)
        run(*args, st_c, tmpl_state, pool_c, tmpl_pool, rng_c, env_c, EPISODE_STEPS, 0)
        episode_steps(*args, st_c, pool_c, rng_c, env_c, EPISODE_STEPS, np.empty(5),
                      np.empty(3), np.full(9, np.nan), np.zeros(6))
        same = same and _states_equal(st_c, st_r) and np.array_equal(rng_c, rng_r)
    out["reference"] = [total / (ref_episodes * EPISODE_STEPS) * 1e9]
    out["same_state"] = same
    out["pool_end"] = int(pool_r.n[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--core-steps", type=int, default=2_000_000)
    parser.add_argument("--ref-steps", type=int, default=20_000)
    parser.add_argument("--episodes", type=int, default=2_000)
    parser.add_argument("--ref-episodes", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load:.1f}; numba loops single-threaded")
    core = bench_core(args.repeats, args.core_steps, args.ref_steps)
    med = {k: float(np.median(v)) for k, v in core.items() if k != "same_state"}
    print(f"core   ({CORE_SPEC}, 3x6 arms, fixed pool of 6):")
    print(f"  compiled, select_inline/update_inline in an _nrt=False loop: median "
          f"{med['inline']:.1f} ns/step (min {min(core['inline']):.1f})")
    print(f"  compiled, select/update called from a plain @njit loop:     median "
          f"{med['call']:.1f} ns/step (min {min(core['call']):.1f})")
    print(f"  reference (plain Python): {med['reference']:.0f} ns/step; ratio reference/"
          f"compiled {med['reference'] / med['inline']:.0f}x; same end state: "
          f"{core['same_state']}")
    eps = bench_episodes(args.repeats, args.episodes, args.ref_episodes)
    med = {k: float(np.median(v)) for k, v in eps.items() if isinstance(v, list)}
    print(f"episodes ({EPISODE_SPEC}, T={EPISODE_STEPS}, re-clustering every 10 steps, pool "
          f"grows to ~{eps['pool_end']}):")
    print(f"  compiled: median {med['inline']:.0f} ns/step amortized (min "
          f"{min(eps['inline']):.0f})")
    ratio = med["reference"] / med["inline"]
    print(f"  reference: {med['reference']:.0f} ns/step; ratio {ratio:.0f}x; same end states: "
          f"{eps['same_state']}")


if __name__ == "__main__":
    main()
