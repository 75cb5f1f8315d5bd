"""Shared inputs for the live tests: one gold-vs-gold load of the TritonBench-G mini checkout
per session.

Loading the mini checkout from an empty cache starts check workers for each of its operators
(about 12 s on a 2-core machine), and four modules need that load: the adapter's tests, the
evaluator on TritonBench-G, candidate loading, and the static check's no-false-positive test
(through the evaluator's and the registry's own loads); all four are in one worker group
(tests/conftest.py), or each worker would build it again. Each used to pay for it, or to fill
the user's ``~/.cache/kernelband`` for the next one. The load runs once, into a cache of its
own; each module gets a copy of that cache, so what one module's tests write never reaches
another.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

TRITONBENCH_MINI = Path(__file__).parent / "fixtures" / "tritonbench_mini"


@dataclass(frozen=True)
class MiniLoad:
    """The uncached load of TRITONBENCH_MINI on the CPU (its tasks, skipped operators and the
    tasks' findings) and the gold-check cache it filled."""

    cache: Path
    tasks: list
    skipped: list
    findings: dict

    def cache_copy(self, dst: Path) -> Path:
        """A copy of the filled cache at `dst` (for ``KERNELBAND_CACHE_DIR``)."""
        shutil.copytree(self.cache, dst)
        return dst


@pytest.fixture(scope="session")
def tritonbench_mini_load(tmp_path_factory: pytest.TempPathFactory) -> MiniLoad:
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions

    cache = tmp_path_factory.mktemp("tritonbench-mini-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELBAND_CACHE_DIR", str(cache))
        loaded = load_tasks(f"tritonbench:{TRITONBENCH_MINI}", LoadOptions(device="cpu"))
    return MiniLoad(cache, loaded.tasks, loaded.skipped_pairs, loaded.findings)


@pytest.fixture(scope="module")
def tritonbench_mini_cache(tritonbench_mini_load: MiniLoad,
                           tmp_path_factory: pytest.TempPathFactory):
    """``KERNELBAND_CACHE_DIR`` set, for the module, to its own copy of the session's filled
    gold-check cache; yields that folder."""
    path = tritonbench_mini_load.cache_copy(tmp_path_factory.mktemp("gold-checks") / "cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERNELBAND_CACHE_DIR", str(path))
        yield path
