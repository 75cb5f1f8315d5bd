"""How the suite is split over pytest-xdist workers (`make test`: ``-n auto --dist loadgroup``).

Each test file runs whole on one worker, so its module fixtures are built once; the modules that
share a session fixture costing seconds (one uncached load of the TritonBench-G mini checkout,
``tests/live/conftest.py``) run on the same worker, so it is built once too; the modules that
start a local Ray instance run on one worker, so two instances never share the machine. Without
xdist the marks do nothing.

The controller fills numba's cache (`kbsim.replay.warm`: each engine worker and step-by-step
entry point compiled once, its groups in processes of their own); the workers start when the
first group ends and collect while the other goes on, and no test is scheduled before the fill
ends, so a worker loads what it needs instead of each compiling it the first time it meets it.
`KB_TEST_WARM=0` skips it. The workers get the longest groups first (`LONGEST_FIRST`), so the
run does not end on one long test while the other workers have nothing left. ``-n auto``
starts one worker more than there are CPUs, and that one runs only the modules that mostly
wait (`WAITING`), beside the others.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

import pytest

#: modules that share an expensive session fixture or a machine-wide service: each group runs
#: on one worker
SHARED_FIXTURE_GROUPS = {
    "tritonbench-mini-load": (
        "tests/live/test_eval_tritonbench.py",
        "tests/live/test_tasks_tritonbench.py",
        "tests/live/test_hostile_static_check.py",
        "tests/live/test_candidate_loading.py",
        "tests/live/test_tritonbench_sanitize.py",
    ),
    "local-ray-instance": (
        "tests/kbsim/test_replay_ray.py",
        "tests/live/test_ray_backend.py",
    ),
}
#: what each group's modules share (a word each of them uses)
SHARED_BY = {"tritonbench-mini-load": "tritonbench_mini", "local-ray-instance": "ray.init"}
_GROUP_OF = {path: group for group, paths in SHARED_FIXTURE_GROUPS.items() for path in paths}

#: the groups that took longest (seconds of their tests, `make test` on the 2-core machine,
#: 2026-11-27: 79 s down to 10 s), handed to the workers first, longest first; the rest follow,
#: most tests first. Only the order: xdist's own (most tests first) left the 74 s kill loop, a
#: single test, for the very end, one worker running it while the other had nothing left
LONGEST_FIRST = (
    "local-ray-instance",
    "tritonbench-mini-load",
    "tests/live/test_live_kills.py",
    "tests/live/test_record_runs.py",
    "tests/analysis/test_demo_sim2real.py",
    "tests/live/test_gpu_lock.py",
    "tests/live/test_host_memory.py",
    "tests/live/test_runner_live.py",
    "tests/live/test_kernelbench_llm_k0.py",
    "tests/live/test_eval_isolated.py",
    "tests/live/test_hostile_kernels.py",
    "tests/live/test_eval_sandbox.py",
    "tests/live/test_kernelbench_k0.py",
    "tests/kbsim/test_policies_equivalence.py",
    "tests/live/test_proposers_builtin.py",
    "tests/kbsim/test_replay_compile.py",
    "tests/kbsim/test_trace_kill.py",
    "tests/analysis/test_report.py",
    "tests/live/test_kernelbench_compile_timing.py",
    "tests/live/test_eval_cli.py",
    "tests/cli/test_tasks_tritonbench_cli.py",
    "tests/analysis/test_regret_engine.py",
    "tests/live/test_kernelbench_eval.py",
    "tests/live/test_live_tape_exact.py",
    "tests/live/test_failure_kinds.py",
    "tests/test_worker_groups.py",
    "tests/live/test_hostile_runner.py",
    "tests/kbsim/test_replay_warm.py",
)


#: modules whose tests mostly wait (on sleeps, time limits, the processes they watch): 72 s of
#: wall time for 18 CPU-seconds, run serially on the 2-core machine (2026-11-27), and the
#: sandbox's time limits and hostile candidates, 31 s for 15 (2026-11-28: beside another module
#: that waits, the machine was a fifth idle for 23 s). With more xdist workers than CPUs, the
#: last-numbered is theirs alone (`GroupScheduling`): the CPU they leave idle goes to the other
#: workers instead of leaving one core idle while one of them sleeps
WAITING = (
    "tests/live/test_gpu_lock.py",
    "tests/live/test_eval_isolated.py",
    "tests/live/test_device_gate.py",
    "tests/live/test_host_memory.py",
    "tests/live/test_profile_backfill.py",
    "tests/live/test_hostile_kernels.py",
    "tests/live/test_faulty_endpoints.py",
    "tests/live/test_proposers_openai.py",
    "tests/live/test_profiler_ncu.py",
    "tests/live/test_eval_sandbox.py",
)


def cpus() -> int:
    """The CPUs this process may run on (``KB_TEST_CPUS``: that many instead, to test the
    waiting lane on any machine)."""
    if os.environ.get("KB_TEST_CPUS"):
        return int(os.environ["KB_TEST_CPUS"])
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def xdist_group_of(nodeid: str) -> str:
    """The worker group of a test: its module's shared-fixture group, else its module."""
    path = nodeid.split("::", 1)[0]
    return _GROUP_OF.get(path, path)


def schedule_order(groups: list[str]) -> list[str]:
    """The order in which the groups (one entry per test) go to the workers: `LONGEST_FIRST`,
    then the other groups with the most tests first, each group's tests in their own order."""
    rank = {group: i for i, group in enumerate(LONGEST_FIRST)}
    tests = Counter(groups)
    first = {group: i for i, group in reversed(list(enumerate(groups)))}
    return sorted(groups, key=lambda g: (rank.get(g, len(rank)), -tests[g], first[g]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item.nodeid)))
    if hasattr(config, "workerinput"):  # an xdist worker: the scheduler reads this order
        groups = [xdist_group_of(item.nodeid) for item in items]
        order = {group: i for i, group in enumerate(dict.fromkeys(schedule_order(groups)))}
        items.sort(key=lambda item: order[xdist_group_of(item.nodeid)])


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collecting imported (torch, numba, pandas, matplotlib...: ~300,000 objects) lives to
    the end of the session: frozen (`gc.freeze`), the garbage collector's full passes leave it
    out. In the workers of `make test` those passes had taken ~7 % of their CPU; frozen, about
    half as much (tests/analysis, tests/kbsim and tests/cli on two workers: 5.3 CPU-s of
    collections against 10.8)."""
    gc.freeze()


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With ``--dist loadgroup``: work units of one `xdist_group_of` group each.

    xdist's own loadgroup scheduling finds a test's group in a suffix its worker appends to the
    test id (``item._nodeid``); pytest 9 keeps the id elsewhere, so that suffix never reached
    the controller and every test was scheduled on its own: module fixtures and the session's
    TritonBench-G mini load were built again on each worker, two Ray instances could run at
    once. xdist's scope scheduling (``loadfile``'s, with this grouping) does what was meant.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the workers' collection order: `schedule_order`

    class GroupScheduling(LoadScopeScheduling):
        """xdist's scope scheduling, a scope per `xdist_group_of` group, with a waiting lane
        when there are more workers than CPUs: the last-numbered worker runs only the `WAITING`
        modules, the others everything else first (then what is left of `WAITING`)."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid)

        def _lane(self) -> object | None:
            """The worker numbered last (gw2 of three), whatever order they started in."""
            nodes = self.nodes
            if len(nodes) <= cpus():
                return None
            return max(nodes, key=lambda node: int(node.workerinput["workerid"][2:]))

        def _next_scope(self, node: object) -> str | None:
            if node is self._lane():
                return next((scope for scope in self.workqueue if scope in WAITING), None)
            return next((scope for scope in self.workqueue if scope not in WAITING),
                        next(iter(self.workqueue), None))

        def _assign_work_unit(self, node) -> None:  # type: ignore[no-untyped-def]
            scope = self._next_scope(node)
            if scope is None:  # nothing for the waiting lane now
                return
            work_unit = self.workqueue.pop(scope)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(nodeid)
                                    for nodeid, done in work_unit.items() if not done])

        def _reschedule(self, node) -> None:  # type: ignore[no-untyped-def]
            if node.shutting_down:
                return
            if self._next_scope(node) is None:  # nothing left this worker takes
                node.shutdown()
                return
            if self._pending_of(self.assigned_work.get(node, {})) > 2:
                return
            self._assign_work_unit(node)

    return GroupScheduling(config, log)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per CPU and one more for the `WAITING` modules' lane (capped by
    ``--maxprocesses``)."""
    return cpus() + 1


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers this session starts (0: none, or this is a worker)."""
    if hasattr(config, "workerinput"):
        return 0
    workers = getattr(config.option, "numprocesses", None) or 0
    limit = getattr(config.option, "maxprocesses", None)
    return min(int(workers), int(limit)) if limit else int(workers)


#: engine workers the fill leaves out: no test replays them (kernelband-v1 on the fitted
#: environment alone: ~6 CPU-s of compiling for nothing); a test that comes to need one
#: compiles it where it runs, slower, never wrong
FILL_LEAVES_OUT = (("v1", ("fitted",)),)


#: the controller's fill of numba's cache (`pytest_sessionstart`): its processes' pool, a future
#: per group, when it started
_FILL: tuple[ProcessPoolExecutor, list[Future], float] | None = None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # tryfirst: before xdist starts its workers (its own hook runs last)
    global _FILL
    workers = _xdist_workers(session.config)
    if workers and os.environ.get("KB_TEST_WARM", "1") != "0":
        from kbsim.replay.warm import GROUPS, start_warm_cache

        # a process per group, at most one per CPU: ~53 and ~47 s side by side; the workers
        # start when the shorter group ends, and collect (~10 CPU-s each) on the core it
        # leaves while the other goes on; no test is scheduled before that one ends too
        # (`pytest_xdist_node_collection_finished`)
        started = time.perf_counter()
        pool, futures = start_warm_cache(processes=min(len(GROUPS), cpus()),
                                         leave_out=FILL_LEAVES_OUT)
        wait(futures, return_when=FIRST_COMPLETED)
        _FILL = pool, futures, started


def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """On the controller, as each worker reports its collection, before any test is scheduled:
    the first report waits for numba's cache fill to end (and raises what it raised)."""
    global _FILL
    fill, _FILL = _FILL, None
    if fill is None:
        return
    pool, futures, started = fill
    with pool:
        groups = [future.result()[0] for future in futures]
    print(f"numba cache filled: {', '.join(groups)} in {time.perf_counter() - started:.0f} s "
          f"({len(futures)} processes; the workers started meanwhile)", file=sys.stderr,
          flush=True)
