"""The shares of a run in `record_runs.py`: jobs ``NAME@K/N`` and ``profile:NAME@K/N``.

Each share works in its own copy of the run (``WORK/NAME@KofN``) with ``--shard K/N``; shares
of one run run side by side, nothing else of the run beside them; once they have ended, their
copies are merged (``kernelband traces merge-shards``) into ``WORK/NAME``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def parse_job(name: str) -> tuple[str, str, str | None]:
    """``[KIND:]RUN[@K/N]`` -> (kind, run, shard or None); kind ``live`` when none is given."""
    kind, _, rest = name.rpartition(":")
    run, at, shard = rest.partition("@")
    if at:
        from live.runner.shard import parse_shard

        try:
            parse_shard(shard)
        except ValueError as exc:
            raise SystemExit(f"job {name!r}: {exc}") from None
    return kind or "live", run, shard if at else None


def shard_folder(work: Path, run: str, shard: str) -> Path:
    """The copy of run `run` that the job of share `shard` (``K/N``) works in."""
    return work / f"{run}@{shard.replace('/', 'of')}"


def check_shards(names: list[str]) -> None:
    """A run's live jobs of one call (and its profile jobs) are either one job of the whole
    run or the distinct shares of one count N: their copies start from one point and merge."""
    groups: dict[tuple[str, str], list[str | None]] = {}
    for name in names:
        kind, run, shard = parse_job(name)
        groups.setdefault((kind, run), []).append(shard)
    for (kind, run), shards in groups.items():
        counts = {s.split("/")[1] if s else None for s in shards}
        if len(shards) > 1 and (None in counts or len(counts) > 1
                                or len(set(shards)) < len(shards)):
            raise SystemExit(f"the {kind} jobs of run {run} ({', '.join(map(str, shards))}) "
                             "must be one job or distinct shares K/N of one N")


def clashes(name: str, running: Any) -> bool:
    """Whether job `name` must wait for `running` (a job with ``run``, ``kind`` and ``shard``):
    two jobs of one run never run at once,
    except shares of one kind (``NAME@0/2`` beside ``NAME@1/2``, each on its own copy)."""
    kind, run_name, shard = parse_job(name)
    if run_name != running.run:
        return False
    return shard is None or running.shard is None or kind != running.kind or (
        shard == running.shard)


def merge_copies(copies: list[Path], target: Path, env: dict[str, str]) -> dict[str, Any]:
    """Merge the `copies` that hold a trace into `target` (replacing it: staged beside it,
    then renamed; the copies removed), the Nsight Compute caches of both kept. Returns
    ``{"copies": n}``, with ``"error"`` (and nothing changed) if the merge was refused."""
    copies = [c for c in copies if (c / "manifest.json").is_file()]
    record: dict[str, Any] = {"copies": len(copies)}
    if not copies:
        record["error"] = "no copy holds a trace"
        return record
    staged = target.with_name(f"{target.name}.merging")
    shutil.rmtree(staged, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "kernelband.cli", "traces", "merge-shards",
                           *map(str, copies), "--out", str(staged)], capture_output=True,
                          text=True, cwd=ROOT, env=env)
    if done.returncode != 0:
        record["error"] = (done.stdout + done.stderr).strip().splitlines()[-1:]
        shutil.rmtree(staged, ignore_errors=True)
        return record
    for cache in [target / ".profile-cache", *(c / ".profile-cache" for c in copies)]:
        if cache.is_dir():
            shutil.copytree(cache, staged / ".profile-cache", dirs_exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    staged.rename(target)
    for copy in copies:
        shutil.rmtree(copy, ignore_errors=True)
    return record
