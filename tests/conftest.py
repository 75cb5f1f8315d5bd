"""How the suite is split over pytest-xdist workers (`make test`: ``-n auto --dist loadgroup``).

Each test file runs whole on one worker, so its module fixtures are built once; the modules that
share a session fixture costing seconds (one uncached load of the TritonBench-G mini checkout,
``tests/live/conftest.py``) run on the same worker, so it is built once too; the modules that
start a local Ray instance run on one worker, so two instances never share the machine. Without
xdist the marks do nothing.
"""

from __future__ import annotations

import pytest

#: modules that share an expensive session fixture or a machine-wide service: each group runs
#: on one worker
SHARED_FIXTURE_GROUPS = {
    "tritonbench-mini-load": (
        "tests/live/test_eval_tritonbench.py",
        "tests/live/test_tasks_tritonbench.py",
        "tests/live/test_hostile_static_check.py",
    ),
    "local-ray-instance": (
        "tests/kbsim/test_replay_ray.py",
        "tests/live/test_ray_backend.py",
    ),
}
#: what each group's modules share (a word each of them uses)
SHARED_BY = {"tritonbench-mini-load": "tritonbench_mini", "local-ray-instance": "ray.init"}
_GROUP_OF = {path: group for group, paths in SHARED_FIXTURE_GROUPS.items() for path in paths}


def xdist_group_of(nodeid: str) -> str:
    """The worker group of a test: its module's shared-fixture group, else its module."""
    path = nodeid.split("::", 1)[0]
    return _GROUP_OF.get(path, path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item.nodeid)))
