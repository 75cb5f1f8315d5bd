"""Cold-start guard (issue #16): a replay compiles the policy family and environment it runs,
nothing else, and says so on one line while it compiles; a sweep of several families compiles
the others in helper processes meanwhile.

The replay runs in a fresh process with an empty numba cache (NUMBA_CACHE_DIR in tmp_path), so
what it compiles is what a first run of this kbsim version compiles; numba's compile events
name every function compiled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbsim.envs.data import ENV_KINDS
from kbsim.envs.registry import ENVIRONMENTS
from kbsim.policies.spec import (
    FAMILY_FLAT,
    FAMILY_NAMES,
    FAMILY_V1,
    FAMILY_V2,
    POLICY_NAMES,
    parse_policy,
    policy_family,
)
from kbsim.replay import chunks

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numba.core.event as ev
    from kbsim.envs.registry import build_env
    from kbsim.replay.sweep import run_sweep
    from kbsim.trace.synthetic_trace import synthetic_tables

    policies, env_names = sys.argv[1].split(","), sys.argv[2].split("+")
    source = ("default,tasks=2" if env_names == ["synthetic"]
              else synthetic_tables(n_steps=120, n_tasks=2, seed=0))
    envs = [build_env(name, source) for name in env_names]
    said = []
    with ev.install_recorder("numba:compile") as rec:
        result = run_sweep(policies, envs, 2, 5, say=said.append)
    compiled = sorted({e.data["dispatcher"].py_func.__module__ + "."
                       + e.data["dispatcher"].py_func.__qualname__
                       for _, e in rec.buffer if e.is_start})
    print(json.dumps({"compiled": compiled, "said": said, "rows": len(result.summary)}))
""")

# modules whose compiled functions belong to one policy family or one environment only
# (kbsim.policies._kmeans serves both clustered families)
_FAMILY_MODULES = {
    FAMILY_V2: ("kbsim.policies._v2.",),
    FAMILY_V1: ("kbsim.policies._v1.",),
    FAMILY_FLAT: ("kbsim.policies._flat.",),
}
_ENV_MODULES = {
    "synthetic": ("kbsim.envs.synthetic.",),
    "tape": ("kbsim.envs.tape.",),
    "fitted": ("kbsim.envs.fitted.",),
}


def _cold_replay(tmp_path: Path, policy: str, env_name: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, policy, env_name], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("policy", "env_name", "worker"), [
    ("random", "tape", "flat_tape"),
    # tape and fitted together: one worker for both (engine.RECORDED), never synthetic
    ("random", "tape+fitted", "flat_recorded"),
])
def test_cold_replay_compiles_only_its_family_and_environment(tmp_path: Path, policy: str,
                                                               env_name: str, worker: str) -> None:
    # the flat family is the cheapest to compile (~5-10 s cold), and any other family's or
    # environment's code shows up as a stray
    report = _cold_replay(tmp_path, policy, env_name)
    compiled = report["compiled"]
    family = policy_family(parse_policy(policy).kind)
    strays = [name for name in compiled
              for fam, prefixes in _FAMILY_MODULES.items() if fam != family
              for prefix in prefixes if name.startswith(prefix)]
    strays += [name for name in compiled
               for other, prefixes in _ENV_MODULES.items() if other not in env_name.split("+")
               for prefix in prefixes if name.startswith(prefix)]
    assert not strays, f"a cold {policy} replay on {env_name} compiled {strays}"
    workers = [name for name in compiled if ".run_worker_" in name]
    # one engine worker: this (family, env) pair
    assert workers == [f"kbsim.replay.engine.run_worker_{worker}"], compiled
    assert worker.startswith(FAMILY_NAMES[family])
    assert report["rows"] == 2 * 2 * len(env_name.split("+"))  # 2 tasks x 2 seeds per env
    # one line while compiling, with the expected time
    assert len(report["said"]) == 1
    assert report["said"][0].startswith("compiling the replay engine (first run of this "
                                        "version, about ")


def test_every_policy_has_a_family_and_every_env_kind_a_registry_entry() -> None:
    families = {policy_family(kind) for kind in range(len(POLICY_NAMES))}
    assert families == {FAMILY_V2, FAMILY_V1, FAMILY_FLAT}
    assert {name: entry.kind for name, entry in ENVIRONMENTS.items()} == ENV_KINDS


@pytest.mark.skipif(chunks._spare_cpus() < 1, reason="needs a second CPU for the helper")
def test_a_cold_sweep_of_two_families_compiles_the_second_in_a_helper(tmp_path: Path) -> None:
    """`prepare_workers`: this process compiles the first family's worker while a helper
    process compiles the other's into numba's disk cache, from which this process loads it."""
    report = _cold_replay(tmp_path, "random,kernelband-v1", "tape")
    compiled = report["compiled"]
    workers = [name for name in compiled if ".run_worker_" in name]
    assert workers == ["kbsim.replay.engine.run_worker_flat_tape"], compiled
    assert not [name for name in compiled if name.startswith("kbsim.policies._v1.")], compiled
    # the helper's work, found in the cache folder this process loaded it from
    assert list((tmp_path / "numba").rglob("*run_worker_v1_tape*.nbi")), "no v1 worker cached"
    assert report["rows"] == 2 * 2 * 2  # 2 policies x 2 tasks x 2 seeds
    assert len(report["said"]) == 1 and report["said"][0].endswith(", 2 processes)")


def test_a_helper_that_fails_says_how(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('no such family'); sys.exit(3)"
    log = (tmp_path / "log").open("w+b")
    helper = chunks._Helper(subprocess.Popen([sys.executable, "-c", code], stderr=log), log)
    assert helper.failure() == "exit 3: no such family"
    helper.close()
    assert log.closed


def test_a_helper_still_compiling_past_its_time_is_ended(tmp_path: Path) -> None:
    log = (tmp_path / "log").open("w+b")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stderr=log)
    helper = chunks._Helper(proc, log)
    assert helper.failure(timeout_s=1.0) == "still compiling after 1 s"
    assert proc.poll() is not None and log.closed
