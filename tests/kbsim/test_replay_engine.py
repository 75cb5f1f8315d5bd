"""The replay engine: determinism whatever the thread count or chunking, invariants per step."""

from __future__ import annotations

import numba
import numpy as np
import pyarrow.dataset as ds
import pytest

from kbsim.envs.synthetic import build_synthetic
from kbsim.replay.sweep import SUMMARY_COLUMNS, run_sweep
from kbsim.trace.schema import RESULTS_SCHEMA

POLICIES = ["kernelband-v2", "kernelband-v1", "ucb-flat", "thompson", "greedy"]


@pytest.fixture(scope="module")
def env():
    return build_synthetic("default,tasks=3,seed=3")


@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def test_results_do_not_depend_on_thread_count_or_chunking(env, restore_threads) -> None:
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba was started with a single thread")
    one = run_sweep(POLICIES, env, 6, 40, threads=1)
    two = run_sweep(POLICIES, env, 6, 40, threads=2)
    small_chunks = run_sweep(POLICIES, env, 6, 40, threads=2, chunk_episodes=4)
    assert one.results.equals(two.results)
    assert one.results.equals(small_chunks.results)
    assert one.summary.equals(two.summary)


def test_per_step_invariants_on_a_growing_synthetic_pool(env) -> None:
    frame = run_sweep(POLICIES, env, 4, 50).results.to_pandas()
    assert len(frame) == len(POLICIES) * 3 * 4 * 50
    assert (frame["regret"] >= -1e-12).all()  # the chosen arm is never better than the best
    for _, episode in frame.groupby(["policy", "task_id", "seed"]):
        assert (np.diff(episode["cum_regret"]) >= -1e-12).all()
        assert (np.diff(episode["best_speedup"]) >= 0).all()
        assert np.array_equal(episode["pool_size"], 1 + np.cumsum(episode["success"]))
        assert np.array_equal(episode["tokens"], 3000 * np.arange(1, 51))
        assert (episode["parent"] < episode["pool_size"]).all()
    assert (frame["best_speedup"] >= 1.0).all()


def test_fixed_pool_never_grows_and_clustered_policy_beats_random() -> None:
    env = build_synthetic("fixed-pool,pool=60,K=3,seed=1,tasks=2")
    result = run_sweep(["kernelband-v2", "random"], env, 10, 120)
    frame = result.results.to_pandas()
    assert (frame["pool_size"] == 60).all()
    regret = result.summary.groupby("policy")["cum_regret"].mean()
    assert regret["kernelband-v2"] < regret["random"]


def test_out_dir_reads_as_one_results_dataset_with_a_summary(env, tmp_path) -> None:
    out = tmp_path / "out"
    result = run_sweep(["kernelband-v2", "bon"], env, 3, 20, out=out, chunk_episodes=4)
    dataset = ds.dataset(out, format="parquet")
    table = dataset.to_table()
    assert table.schema.equals(RESULTS_SCHEMA, check_metadata=False)
    assert table.num_rows == 2 * 3 * 3 * 20
    assert (out / "_summary.parquet").exists() and (out / "_replay.json").exists()
    assert tuple(result.summary.columns) == SUMMARY_COLUMNS


def test_a_shorter_horizon_is_exactly_the_prefix_of_a_longer_episode(env) -> None:
    long = run_sweep(["kernelband-v2", "eps-greedy"], env, 4, 40, horizons=[20, 40]).summary
    short = run_sweep(["kernelband-v2", "eps-greedy"], env, 4, 20).summary
    at20 = long[long.horizon == 20].reset_index(drop=True)
    cols = ["final_best_speedup", "cum_regret", "tokens", "cost_usd"]
    assert np.allclose(at20[cols].to_numpy(float), short[cols].to_numpy(float), rtol=0, atol=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"policies": ["nope"]}, "unknown policy 'nope'"),
        ({"policies": ["kernelband-v2:K=0"]}, "parameter K"),
        ({"seeds": 0}, "seeds must be >= 1"),
        ({"steps": 0}, "steps must be >= 1"),
        ({"horizons": [50]}, "horizons must lie in 1..40"),
    ],
)
def test_bad_sweep_arguments_get_one_clear_sentence(env, kwargs, message) -> None:
    args = {"policies": ["random"], "seeds": 2, "steps": 40} | kwargs
    with pytest.raises(ValueError, match=message):
        run_sweep(args.pop("policies"), env, args.pop("seeds"), args.pop("steps"), **args)
