"""Live collection on Ray (issue 8), on CPU: the "GPU actors" are CPU actors (``num_gpus=0``,
Triton interpreter), the same code path. A run whose actor is killed mid-run completes with the
same decisions as an uninterrupted local run: the lost candidate is re-queued, never lost or
counted twice."""

from __future__ import annotations

import os
import threading

import pytest

ray = pytest.importorskip("ray")

from kbsim.trace.reader import load_trace, validate_trace  # noqa: E402
from live.backends.ray_pool import RayEvaluatorPool  # noqa: E402
from live.evaluator import Evaluator, EvaluatorConfig  # noqa: E402
from live.proposers import make_proposer  # noqa: E402
from live.runner import RunConfig  # noqa: E402
from live.runner.runner import LiveRunner  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="CPU runs need TRITON_INTERPRET=1"
)

#: the columns of a step that depend on choices and outcomes, not on measured times
DECISION_COLUMNS = ["task_id", "step", "cluster", "parent_id", "strategy", "child_id", "status",
                    "logging_propensity", "prompt_tokens", "completion_tokens"]
TASKS = "softmax,transpose"
STEPS = 5


def decisions(path):
    steps = load_trace(path).steps_df()
    return steps.sort_values(["task_id", "step"])[DECISION_COLUMNS].reset_index(drop=True)


def config(out) -> RunConfig:
    return RunConfig(out=str(out), tasks=TASKS, policy="explore", steps=STEPS, seed=3,
                     device="cpu", profile="off", in_flight=2)


@pytest.fixture(scope="module")
def ray_cluster():
    # 8 logical CPUs (scheduling tokens on this 2-core machine): the shared pool's two actors
    # reserve one each, the lost-actor test's replacement a third, and the CLI test starts two
    # more beside them (with 4, its second actor waited forever for a free token)
    ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def local_trace(tmp_path_factory):
    """The uninterrupted reference run, on the local evaluator."""
    out = tmp_path_factory.mktemp("local") / "t"
    with Evaluator(EvaluatorConfig(TASKS, device="cpu", workers=1, timeout_s=60,
                                   static_check=True)) as ev:
        LiveRunner(config(out), make_proposer("mutate"), show_progress=False,
                   evaluator=ev).run()
    return out


@pytest.fixture(scope="module")
def pool(ray_cluster):
    """Two CPU "GPU actors", shared by the tests (starting actors is the slow part)."""
    with RayEvaluatorPool(EvaluatorConfig(TASKS, device="cpu", timeout_s=60, static_check=True),
                          actors=2, profile=False) as pool:
        yield pool


class KillOnSubmit:
    """Installed as `pool._submit`: kills the actor that received the `kill_at`-th evaluate
    call, right after sending it (the call is then in flight on a dead actor)."""

    def __init__(self, pool: RayEvaluatorPool, kill_at: int) -> None:
        self.submit = pool._submit
        self.kill_at = kill_at
        self.sent = 0
        self.killed: list[object] = []
        self.lock = threading.Lock()

    def __call__(self, slot, method, args):
        ref = self.submit(slot, method, args)
        if method == "evaluate":
            with self.lock:
                self.sent += 1
                kill = self.sent == self.kill_at
            if kill:
                ray.kill(slot.handle, no_restart=True)
                self.killed.append(slot.handle)
        return ref


def _ray_run(out, pool) -> None:
    LiveRunner(config(out), make_proposer("mutate"), show_progress=False, evaluator=pool,
               device_lock=False).run()


def _counts(pool) -> dict[str, int]:
    return dict(vars(pool.stats))


def test_two_actors_give_the_local_decisions(tmp_path, pool, local_trace):
    assert pool.device == "cpu"
    assert pool.device_info["gpu_actors"] == 2
    assert pool.device_info["backend"] == "ray"
    before = _counts(pool)
    _ray_run(tmp_path / "t", pool)
    assert pool.stats.actors_lost == before["actors_lost"]
    assert pool.stats.calls >= before["calls"] + 2  # both tasks' k0 at least
    assert validate_trace(tmp_path / "t") == []
    assert decisions(tmp_path / "t").equals(decisions(local_trace))
    manifest = load_trace(tmp_path / "t").manifests[0]
    assert manifest["hardware"]["gpu_actors"] == 2


def test_an_actor_killed_mid_run_is_replaced_and_its_candidate_requeued(tmp_path, pool,
                                                                        local_trace,
                                                                        monkeypatch):
    killer = KillOnSubmit(pool, kill_at=4)
    monkeypatch.setattr(pool, "_submit", killer)
    before = _counts(pool)
    _ray_run(tmp_path / "t", pool)
    assert len(killer.killed) == 1
    assert pool.stats.actors_lost == before["actors_lost"] + 1
    assert pool.stats.requeued == before["requeued"] + 1
    assert pool.stats.given_up == before["given_up"]
    assert pool.stats.actors_started == before["actors_started"] + 1  # the replacement
    assert validate_trace(tmp_path / "t") == []
    trace = load_trace(tmp_path / "t")
    steps = trace.steps_df()
    # every step exactly once, and the decisions of the uninterrupted local run
    # (not_applicable attempts are rows of their own that spend no step: issue #18)
    assert (steps["status"] != "not_applicable").sum() == 2 * STEPS
    assert not steps.duplicated(["task_id", "step"]).any()
    assert decisions(tmp_path / "t").equals(decisions(local_trace))
    # each evaluated kernel recorded once (the killed call's result was never used)
    kernels = trace.kernels_df()
    assert not kernels.duplicated(["task_id", "kernel_id"]).any()
    local_kernels = load_trace(local_trace).kernels_df()
    assert sorted(kernels["kernel_id"]) == sorted(local_kernels["kernel_id"])


def test_a_call_that_loses_every_actor_is_given_up_as_a_runtime_error(pool, monkeypatch):
    from live.tasks.registry import resolve_task

    k0 = resolve_task("builtin", "softmax").k0
    monkeypatch.setattr(pool, "_submit", KillOnSubmit(pool, kill_at=1))
    monkeypatch.setattr(pool, "max_attempts", 1)
    before = _counts(pool)
    result = pool.evaluate("softmax", k0, seed=0)
    assert result.status == "runtime_error"
    assert "evaluator actor lost 1 times" in result.error
    assert pool.stats.given_up == before["given_up"] + 1
    # the pool goes on: the next call is served by a live actor
    again = pool.evaluate("softmax", k0, seed=0)
    assert again.status == "ok" and again.correct


def test_the_pool_and_its_profiler_meet_the_runner_s_interfaces(pool):
    from live.evaluator import CandidateEvaluator
    from live.profiler.interface import KernelProfiler

    assert isinstance(pool, CandidateEvaluator) and isinstance(pool.profiler, KernelProfiler)


def test_profile_calls_go_to_an_actor(pool):
    from live.tasks.registry import resolve_task

    k0 = resolve_task("builtin", "softmax").k0
    # the pool was built with profile=False, and on CPU ncu is unavailable anyway: a value says so
    assert not pool.profiler.available
    result = pool.profile("softmax", k0)
    assert result.profiled is False
    assert result.task_id == "softmax" and result.error


@pytest.mark.slow
def test_the_cli_runs_live_on_ray(tmp_path, ray_cluster, local_trace):
    from click.testing import CliRunner

    from kernelband.cli import main

    result = CliRunner().invoke(main, [
        "live", "--tasks", TASKS, "--policy", "explore", "--steps", str(STEPS), "--seed", "3",
        "--device", "cpu", "--profile", "off", "--in-flight", "2", "--proposer", "mutate",
        "--backend", "ray", "--actors", "2", "--out", str(tmp_path / "t"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert decisions(tmp_path / "t").equals(decisions(local_trace))
    assert load_trace(tmp_path / "t").manifests[0]["hardware"]["backend"] == "ray"


@pytest.fixture(scope="module")
def pool_2w(ray_cluster):
    """One actor with two evaluator workers (a threaded actor sharing its device through a
    `GpuLock`, as on a GPU)."""
    with RayEvaluatorPool(EvaluatorConfig(TASKS, device="cpu", workers=2, timeout_s=60,
                                          static_check=True), actors=1, profile=False) as pool:
        yield pool


def test_an_actor_with_two_workers_runs_two_calls_at_once_and_gives_the_local_decisions(
        tmp_path, pool_2w, local_trace):
    assert pool_2w.device_info["workers_per_actor"] == 2
    assert pool_2w._slots[0].info["workers"] == 2
    # the actor's GPU lock batches timings like the local runner's (NOTE D81), and its checks
    # step aside for them (NOTE D97)
    patience = {"timing_batch": 2, "timing_patience_s": 15.0, "workers": 2, "step_aside": True}
    assert pool_2w.gpu_lock_info == patience
    # two calls at once are both served (by the one actor's two workers)
    from live.tasks.registry import resolve_task

    codes = {name: resolve_task("builtin", name).k0 for name in TASKS.split(",")}
    results: dict[str, object] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(
        n, pool_2w.evaluate(n, codes[n], seed=0))) for n in codes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert all(r.status == "ok" and r.correct for r in results.values())
    _ray_run(tmp_path / "t", pool_2w)
    assert validate_trace(tmp_path / "t") == []
    assert decisions(tmp_path / "t").equals(decisions(local_trace))
    assert load_trace(tmp_path / "t").manifests[0]["gpu_lock"] == patience
    # profiling (unavailable on CPU) answers one value per kernel, through the batch path
    batch = pool_2w.profile_many("softmax", list(codes.values()))
    assert [r.profiled for r in batch] == [False, False]


def test_a_lost_actor_with_two_workers_is_replaced_once_and_its_calls_requeued(
        tmp_path, pool_2w, local_trace, monkeypatch):
    killer = KillOnSubmit(pool_2w, kill_at=4)
    monkeypatch.setattr(pool_2w, "_submit", killer)
    before = _counts(pool_2w)
    _ray_run(tmp_path / "t", pool_2w)
    assert len(killer.killed) == 1
    # one actor lost, one replacement, however many of its calls were in flight
    assert pool_2w.stats.actors_lost == before["actors_lost"] + 1
    assert pool_2w.stats.actors_started == before["actors_started"] + 1
    assert pool_2w.stats.requeued >= before["requeued"] + 1
    assert pool_2w.stats.given_up == before["given_up"]
    steps = load_trace(tmp_path / "t").steps_df()
    assert (steps["status"] != "not_applicable").sum() == 2 * STEPS
    assert not steps.duplicated(["task_id", "step"]).any()
    assert decisions(tmp_path / "t").equals(decisions(local_trace))
    # the dead actor's other free entry was dropped: the replacement serves both workers' calls
    assert not any(slot.lost for slot in pool_2w._slots)


def test_workers_per_actor_follow_eval_workers_or_the_tasks_in_flight():
    from live.backends.ray_live import actor_workers

    def cfg(**kw):
        return RunConfig(out="unused", tasks=TASKS, device=kw.pop("device", "cuda"), **kw)

    big = {"GPU": 2.0, "CPU": 32.0}
    assert actor_workers(cfg(in_flight=15), actors=2, cluster=big) == 8
    assert actor_workers(cfg(in_flight=8), actors=2, cluster=big) == 4
    assert actor_workers(cfg(in_flight=1), actors=2, cluster=big) == 1
    assert actor_workers(cfg(in_flight=40), actors=1, cluster=big) == 8
    assert actor_workers(cfg(in_flight=15), actors=None, cluster=big) == 8  # one per GPU
    # 8 GPUs, 24 CPUs: 3 workers each, or some actors would never be scheduled
    assert actor_workers(cfg(in_flight=64), actors=None, cluster={"GPU": 8, "CPU": 24}) == 3
    assert actor_workers(cfg(in_flight=8, eval_workers=3), actors=2, cluster=big) == 3
    assert actor_workers(cfg(in_flight=8, device="cpu"), actors=2, cluster=big) == 1


def test_a_task_goes_back_to_the_actor_that_served_it_and_lost_entries_are_dropped():

    from live.backends.ray_pool import _Slot
    from live.evaluator.affinity import AffinityQueue

    pool = object.__new__(RayEvaluatorPool)  # only the free-place bookkeeping
    pool._idle = AffinityQueue()
    pool.ready_timeout_s = 0.05
    a, b = _Slot(0, handle=None), _Slot(1, handle=None)
    pool._idle.put(a, "softmax")
    pool._idle.put(b, "transpose")
    pool._idle.put(b, "transpose")
    assert pool._next_free(prefer="transpose") is b  # its inputs are on b's workers
    b.lost = True
    assert pool._next_free(prefer="transpose") is a  # b's last entry is dropped on the way
    assert len(pool._idle) == 0
    with pytest.raises(RuntimeError, match="no evaluator actor became free"):
        pool._next_free()
