"""The replay sweep on Ray (issue 8): equal to the local backend's, chunk by chunk, and a chunk
whose worker process is killed mid-run is retried with an unchanged result."""

from __future__ import annotations

import os
import re
import signal
import threading
import time

import pandas as pd
import psutil
import pyarrow.dataset as ds
import pytest

ray = pytest.importorskip("ray")

from kbsim.envs.synthetic import build_synthetic  # noqa: E402
from kbsim.policies.spec import parse_policy  # noqa: E402
from kbsim.replay.ray_backend import plan_chunks, plan_episodes, run_sweep_ray  # noqa: E402
from kbsim.replay.sweep import run_sweep  # noqa: E402

POLICIES = ["kernelband-v2", "greedy", "kernelband-v1"]


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def env():
    return build_synthetic("default,tasks=3")


def _rows(path) -> pd.DataFrame:
    frame = ds.dataset(str(path), format="parquet").to_table().to_pandas()
    return frame.sort_values(["policy", "task_id", "seed", "step"]).reset_index(drop=True)


def test_sweep_equals_the_local_backend(tmp_path, ray_cluster, env):
    local = run_sweep(POLICIES, env, 12, 25, out=tmp_path / "local", chunk_episodes=7,
                      horizons=[10, 25])
    remote = run_sweep_ray(POLICIES, env, 12, 25, out=tmp_path / "ray", chunk_episodes=7,
                           horizons=[10, 25])
    # same chunking -> the same summary rows in the same order, and the same part files
    pd.testing.assert_frame_equal(local.summary, remote.summary)
    local_parts = sorted(p.name for p in (tmp_path / "local").glob("part-*.parquet"))
    assert local_parts == sorted(p.name for p in (tmp_path / "ray").glob("part-*.parquet"))
    assert len(local_parts) == len(POLICIES) * -(-3 * 12 // 7)
    for name in local_parts:
        assert ds.dataset(str(tmp_path / "local" / name)).to_table().equals(
            ds.dataset(str(tmp_path / "ray" / name)).to_table())
    # another chunking (default: by cluster size) gives the same rows, in memory too
    in_memory = run_sweep_ray(POLICIES, env, 12, 25, horizons=[10, 25])
    assert in_memory.out is None and in_memory.results is not None
    by_episode = ["policy", "horizon", "task_id", "seed"]
    pd.testing.assert_frame_equal(
        local.summary.sort_values(by_episode).reset_index(drop=True),
        in_memory.summary.sort_values(by_episode).reset_index(drop=True))
    pd.testing.assert_frame_equal(
        _rows(tmp_path / "local"),
        in_memory.results.to_pandas().sort_values(["policy", "task_id", "seed", "step"])
        .reset_index(drop=True))


def _chunk_workers() -> list[tuple[int, str]]:
    """(pid, process title) of the Ray workers running a replay chunk."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or []).strip()
        if cmdline.startswith("ray::kernelband_replay_"):
            found.append((proc.info["pid"], cmdline))
    return found


def _kill_first_chunk_worker(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first worker seen running a chunk of the sweep started after this call
    (titles name the sweep, so a worker still titled by an earlier sweep is left alone)."""
    earlier = {title for _, title in _chunk_workers()}
    while not stop.is_set() and not killed:
        for pid, title in _chunk_workers():
            if title in earlier:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.append(pid)
            return
        time.sleep(0.01)


def test_chunks_follow_the_local_order(env):
    plans = [plan_episodes(env, [3, 5]), plan_episodes(env, [1])]
    jobs = plan_chunks([parse_policy("greedy"), parse_policy("random")], plans, 4)
    # policy-major, then environment, then episode ranges; indices name the part files
    assert [(str(j.spec), j.env_index, j.lo, j.hi) for j in jobs] == [
        ("greedy", 0, 0, 4), ("greedy", 0, 4, 6), ("greedy", 1, 0, 3),
        ("random", 0, 0, 4), ("random", 0, 4, 6), ("random", 1, 0, 3),
    ]
    assert [j.index for j in jobs] == list(range(6))
    assert list(plans[0].ep_seed) == [3, 5, 3, 5, 3, 5]
    assert list(plans[0].ep_task) == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 0}, "steps must be >= 1"),
        ({"horizons": [50]}, "horizons must lie in 1..20"),
        ({"cpus_per_chunk": 0}, "cpus_per_chunk must be >= 1"),
        ({"max_retries": -1}, "max_retries must be >= 0"),
        ({"seeds": 0}, "seeds must be >= 1"),
        ({"chunk_episodes": 0}, "chunk_episodes must be >= 1"),
    ],
)
def test_bad_arguments_are_refused(ray_cluster, env, kwargs, message):
    args = {"policies": ["greedy"], "envs": env, "seeds": 2, "steps": 20, **kwargs}
    with pytest.raises(ValueError, match=message):
        run_sweep_ray(**args)


def test_the_cli_prints_the_local_table_and_writes_the_same_rows(tmp_path, ray_cluster):
    from click.testing import CliRunner

    from kernelband.cli import main

    args = ["replay", "--synthetic", "default,tasks=2", "--policy", "kernelband-v2",
            "--policy", "random", "--seeds", "6", "--steps", "15", "--no-progress"]
    local = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "local")])
    remote = CliRunner().invoke(main, [*args, "--backend", "ray", "--out", str(tmp_path / "ray")])
    assert local.exit_code == 0, local.output
    assert remote.exit_code == 0, remote.output
    table = [line for line in local.output.splitlines() if "results written" not in line]
    assert table == [line for line in remote.output.splitlines()
                     if "results written" not in line]
    pd.testing.assert_frame_equal(_rows(tmp_path / "local"), _rows(tmp_path / "ray"))
    refused = CliRunner().invoke(main, [*args, "--backend", "ray", "--threads", "2"])
    assert refused.exit_code == 1
    assert "--threads is for --backend local" in refused.output


def test_a_chunk_lost_beyond_its_retries_stops_the_sweep_naming_it(tmp_path, ray_cluster, env):
    # the killer races the chunks: a sweep whose chunks all ended before it struck (it found
    # none running, or struck a worker whose result was already back) is run again
    raised: RuntimeError | None = None
    for attempt in range(3):
        killed: list[int] = []
        stop = threading.Event()
        killer = threading.Thread(target=_kill_first_chunk_worker, args=(killed, stop))
        killer.start()
        try:
            # four chunks long enough for the killer to find one running, also when this
            # module's earlier tests left the Ray workers warm
            run_sweep_ray(["kernelband-v2"], env, 2000, 300, chunk_episodes=1500,
                          out=tmp_path / f"ray{attempt}", max_retries=0)
        except RuntimeError as exc:
            raised = exc
        finally:
            stop.set()
            killer.join()
        if raised is not None:
            break
    assert raised is not None and killed
    assert re.search(r"chunk \d+ \(kernelband-v2 on synthetic, episodes \d+\.\.\d+\) failed "
                     r"after 0 retries", str(raised))
    assert not (tmp_path / f"ray{attempt}" / "_summary.parquet").exists()


# last in the module: Ray reports the killed worker to the driver some time later, and that
# notice must not land in another test's captured output
def test_a_chunk_whose_worker_is_killed_is_retried_with_the_same_result(tmp_path, ray_cluster,
                                                                         env):
    # 4 chunks of ~0.7 CPU-s each (2-core machine), long enough for the killer, which looks
    # every 10 ms, to find one running (the workers are warm by now)
    kwargs = dict(policies=["kernelband-v2"], envs=env, seeds=500, steps=300,
                  chunk_episodes=375)
    local = run_sweep(**kwargs, out=tmp_path / "local")
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_first_chunk_worker, args=(killed, stop))
    killer.start()
    try:
        remote = run_sweep_ray(**kwargs, out=tmp_path / "ray", max_retries=2)
    finally:
        stop.set()
        killer.join()
    assert killed, "no chunk worker was seen running, so none was killed"
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == "zombie"
    pd.testing.assert_frame_equal(local.summary, remote.summary)
    pd.testing.assert_frame_equal(_rows(tmp_path / "local"), _rows(tmp_path / "ray"))
    assert not list((tmp_path / "ray").glob(".*.tmp"))
