"""tests/conftest.py: how the suite is split over pytest-xdist workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    LONGEST_FIRST,
    SHARED_BY,
    SHARED_FIXTURE_GROUPS,
    WAITING,
    schedule_order,
    xdist_group_of,
)

ROOT = Path(__file__).resolve().parents[1]


def test_modules_sharing_a_session_fixture_run_on_one_worker():
    for group, paths in SHARED_FIXTURE_GROUPS.items():
        assert {xdist_group_of(f"{path}::test_x") for path in paths} == {group}


def test_any_other_test_runs_with_its_own_module():
    assert xdist_group_of("tests/kbsim/test_rng.py::test_a[1]") == "tests/kbsim/test_rng.py"
    assert xdist_group_of("tests/kbsim/test_rng.py::test_b") == "tests/kbsim/test_rng.py"


def test_every_grouped_module_exists_and_uses_what_its_group_shares():
    assert set(SHARED_BY) == set(SHARED_FIXTURE_GROUPS)
    for group, paths in SHARED_FIXTURE_GROUPS.items():
        for path in paths:
            assert SHARED_BY[group] in (ROOT / path).read_text(), path


def test_every_module_using_the_mini_load_is_in_its_group():
    """A module outside the group that asks for the session's mini load builds it again on its
    own worker (~14 s alone, 30 CPU s or more under load)."""
    users = {str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
             if path != Path(__file__).resolve()
             and any(name in path.read_text()
                     for name in ("tritonbench_mini_load", "tritonbench_mini_cache"))}
    assert users and users <= set(SHARED_FIXTURE_GROUPS["tritonbench-mini-load"])


#: the cheapest `WAITING` module (~1 s of tests), and two ordinary ones with many tests each
WAITING_MODULE = "tests/live/test_profiler_ncu.py"
OTHER_MODULES = ("tests/kbsim/test_rng.py", "tests/kbsim/test_trace_merge.py")


@pytest.fixture(scope="module")
def nested_run() -> dict[str, list[str]]:
    """`make test`'s ``-n N --dist loadgroup`` (tests/conftest.py's scheduler) on two CPUs said
    and three workers, over `WAITING_MODULE` and `OTHER_MODULES`: module -> the worker of each
    of its tests, in order."""
    assert WAITING_MODULE in WAITING
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "3", "--dist",
         "loadgroup", WAITING_MODULE, *OTHER_MODULES],
        cwd=ROOT, env={**os.environ, "KB_TEST_WARM": "0", "KB_TEST_CPUS": "2",
                       "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    ran = re.findall(r"^\[(gw\d+)\].* (?:PASSED|SKIPPED) ([^:]+)::", proc.stdout, re.M)
    return {path: [w for w, p in ran if p == path] for path in (WAITING_MODULE, *OTHER_MODULES)}


def test_xdist_runs_a_module_on_one_worker(nested_run: dict[str, list[str]]) -> None:
    """Every test of a module on the same worker, not spread test by test."""
    for path in OTHER_MODULES:
        assert len(nested_run[path]) > 5 and len(set(nested_run[path])) == 1, nested_run


def test_the_worker_past_the_cpus_runs_only_the_modules_that_wait(
        nested_run: dict[str, list[str]]) -> None:
    """With more workers than CPUs (two CPUs said, three workers), the last worker runs the
    `WAITING` modules and nothing else, and the others everything else."""
    assert set(nested_run[WAITING_MODULE]) == {"gw2"}, nested_run
    assert all(nested_run[path] and "gw2" not in nested_run[path] for path in OTHER_MODULES), \
        nested_run


def test_the_longest_groups_go_first_then_the_groups_with_most_tests():
    groups = ["tests/a.py", "tests/b.py", "tests/b.py", "tests/live/test_live_kills.py",
              "local-ray-instance", "tests/c.py", "local-ray-instance"]
    assert schedule_order(groups) == [
        "local-ray-instance", "local-ray-instance", "tests/live/test_live_kills.py",
        "tests/b.py", "tests/b.py", "tests/a.py", "tests/c.py"]


def test_every_group_named_longest_first_exists():
    for group in LONGEST_FIRST:
        assert group in SHARED_FIXTURE_GROUPS or (ROOT / group).is_file(), group
    for module in WAITING:  # and each module of the waiting lane, in no shared group
        assert (ROOT / module).is_file() and xdist_group_of(f"{module}::t") == module, module
