"""`kbsim.replay.warm`: a cache filled ahead of use serves a replay on real data, which then
compiles nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_WARM = "from kbsim.replay.warm import warm_cache; warm_cache(1, groups=('flat',), " \
        "env_sets=(('tape',), ('synthetic',)), leave_out=[('flat', ['synthetic'])])"

_REPLAY = textwrap.dedent("""
    import json
    import numba.core.event as ev
    from kbsim.envs.recorded import load_tables
    from kbsim.envs.registry import build_env
    from kbsim.replay.sweep import run_sweep

    env = build_env("tape", load_tables(["traces/explore-h200"]))
    with ev.install_recorder("numba:compile") as rec:
        result = run_sweep(["greedy", "random"], [env], 2, 5)
    compiled = sorted({e.data["dispatcher"].__name__ for _, e in rec.buffer if e.is_start})
    print(json.dumps({"compiled": compiled, "rows": len(result.summary)}))
""")


def test_a_warmed_cache_serves_a_replay_of_a_shipped_trace(tmp_path: Path) -> None:
    # the warm-up builds its environments from synthetic tables; the worker it compiles must be
    # the one a replay of real trace data runs (same argument types), or the replay compiles;
    # the worker it is told to leave out, it leaves out
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    warm = subprocess.run([sys.executable, "-c", _WARM], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr[-3000:]
    assert list((tmp_path / "numba").rglob("engine.run_worker_flat_tape-*.nbi"))
    assert not list((tmp_path / "numba").rglob("engine.run_worker_flat_synthetic-*.nbi"))
    replay = subprocess.run([sys.executable, "-c", _REPLAY], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert replay.returncode == 0, replay.stderr[-3000:]
    report = json.loads(replay.stdout.strip().splitlines()[-1])
    assert report["compiled"] == []
    assert report["rows"] > 0


def test_workers_of_an_unknown_family_or_environment_are_one_sentence() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for item in ("v9=tape", "v1=tape+bogus", "v1=", "v1=tape+synthetic"):
        proc = subprocess.run([sys.executable, "-m", "kbsim.replay.warm", "--workers", item],
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert f"--workers {item!r}: expected FAMILY=ENVS" in proc.stderr
        assert "Traceback" not in proc.stderr
