"""A run's tasks split over several processes (``--shard K/N``), one share each.

Share K of N holds the tasks at positions p with ``p % N == K`` of the task names sorted, so
every process given the same task list computes the same shares, whatever order the task
source loads them in. A task's episode depends only on the run's seed and the task
(`kbsim.rng.policy_rng`, the proposer's ``seed`` and ``sample_index``), never on the other
tasks of its process, so the shares merged (`kbsim.trace.shards.merge_shards`) are the run one
process would have recorded.
"""

from __future__ import annotations

from collections.abc import Iterable


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` -> ``(K, N)`` with ``0 <= K < N``; ValueError in one sentence otherwise."""
    index, sep, count = str(text).partition("/")
    try:
        k, n = int(index), int(count)
    except ValueError:
        k = n = -1
    if not sep or n < 1 or not 0 <= k < n:
        raise ValueError(f"shard must be K/N with 0 <= K < N (e.g. 0/2), got {text!r}")
    return k, n


def shard_names(names: Iterable[str], shard: str | None) -> list[str]:
    """The names of share `shard` (``"K/N"``; None: all of them), sorted."""
    ordered = sorted(names)
    if shard is None:
        return ordered
    k, n = parse_shard(shard)
    return [name for p, name in enumerate(ordered) if p % n == k]
