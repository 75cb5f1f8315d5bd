"""Our eager reference timings of KernelBench against the authors' published ones, per problem.

Reads our timings from ``kernelband tasks check --out FILE`` (the reference timings: per task
``ref_ms``) or from ``kernelband tasks check --json`` output run with ``--out`` (its ``checks``
list), several files merged (pieces of a run), and the authors' from the dataset's
``results/timing/<HARDWARE>/baseline_time_torch.json`` (per level, per problem file: ``mean``
ms and ``min`` ms over 100 wall-clock trials after 3 warm-ups, PyTorch 2.5). Prints the ratio
ours / published per level (median and quartiles) and a table per problem; ``--json FILE``
writes the same.

**Only where the shapes match.** The problem sizes changed between dataset versions (the
``changelog/`` folder: ``original_files.txt`` lists level 1 as first released, v0.1 enlarged the
problems and renamed two of them, later files list each problem they changed as ``Updated
LevelN/<file>``). A published timing is compared when:

- the published file name is the problem's current file name at the same level (a renamed
  problem is another problem);
- the timings are of v0.1 or later: their level-1 names include a name v0.1 introduced (one not
  in ``original_files.txt`` but in the current level 1). Older timings predate the enlarged
  sizes, for which the changelog has no per-problem list, so nothing is compared;
- no changelog version after the timings' one updated the problem. The timings' version is the
  oldest one at or after v0.1 (``--timings-version`` names another).

**Only where our timing repeated.** A problem whose timing CV (``timing_cv`` of the reference
timings) is over ``--max-cv`` (5 %) is not compared: its time is not a property of the GPU (a
timing that shared the device, say).

Example (after ``kernelband tasks check --tasks kernelbench:KB --device cuda --out ref.json``)::

    python benchmarks/kernelbench_published.py --ours ref.json --kernelbench KB
    python benchmarks/kernelbench_published.py --ours ref.json --kernelbench KB \\
        --hardware H100_PCIe_LambdaLabs --stat min --json eager-vs-published.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PREFIX = "kernelbench/"
LEVELS = ("level1", "level2", "level3")
#: the dataset version that enlarged the problem sizes and renamed two level-1 problems
ENLARGED = "v0.1"
#: the start of the reason a problem whose timing did not repeat is left out
NOT_REPEATED = "our timing did not repeat"
_UPDATED = re.compile(r"updated\s+level\s*(\d)\s*/\s*(\S+?\.py)", re.IGNORECASE)


@dataclass(frozen=True)
class Row:
    """One problem: our eager time, the published one, and whether they are comparable."""

    level: str
    problem: str  # the file name, ``19_ReLU.py``
    ours_ms: float | None
    published_ms: float | None
    matched: bool
    why: str  # why not compared ("" when compared)

    @property
    def ratio(self) -> float | None:
        if self.matched and self.ours_ms and self.published_ms:
            return self.ours_ms / self.published_ms
        return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name))


@dataclass(frozen=True)
class Changelog:
    """What the dataset's ``changelog/`` says: the level-1 names as first released, and per
    version the problems it updated (``(level, file)``)."""

    original_level1: frozenset[str]
    updates: dict[str, frozenset[tuple[str, str]]]

    @classmethod
    def read(cls, folder: Path) -> Changelog:
        original: set[str] = set()
        listing = folder / "original_files.txt"
        if listing.is_file():
            raw = listing.read_bytes()
            encoding = "utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"
            original = {line.strip() for line in raw.decode(encoding).splitlines()
                        if line.strip()}
        updates = {}
        for path in sorted(folder.glob("v*")):
            if path.is_file():
                found = _UPDATED.findall(path.read_text(encoding="utf-8", errors="replace"))
                updates[path.name] = frozenset((f"level{lv}", name) for lv, name in found)
        return cls(frozenset(original), updates)

    def versions(self) -> list[str]:
        return sorted(self.updates, key=_version_key)


def timings_version(published: Mapping[str, Mapping[str, Any]], current_level1: Iterable[str],
                    changelog: Changelog) -> str | None:
    """The dataset version the published timings were made on, as far as the names say:
    `ENLARGED` or the oldest version after it when a level-1 name of theirs is one that
    `ENLARGED` introduced; None when they carry only names of the first release."""
    introduced = set(current_level1) - changelog.original_level1
    if not changelog.original_level1 or not introduced & set(published.get("level1", {})):
        return None
    later = [v for v in changelog.versions() if _version_key(v) >= _version_key(ENLARGED)]
    return later[0] if later else ENLARGED


def changed_after(version: str, changelog: Changelog) -> dict[tuple[str, str], str]:
    """(level, file) -> the first version after `version` that updated it."""
    changed: dict[tuple[str, str], str] = {}
    for name in changelog.versions():
        if _version_key(name) > _version_key(version):
            for key in changelog.updates[name]:
                changed.setdefault(key, name)
    return changed


def match(ours: Mapping[str, float | None], published: Mapping[str, Mapping[str, Any]],
          current: Mapping[str, Iterable[str]], changelog: Changelog, *, stat: str = "mean",
          version: str | None = None, cv: Mapping[str, float | None] | None = None,
          max_cv: float = 0.05) -> list[Row]:
    """One `Row` per problem we timed (`ours`: ``level/file stem`` -> ms). `current`: level ->
    the dataset's current file names; `version`: the timings' version (None: inferred); `cv`:
    our timing CV per problem (from `read_cv`), a problem over `max_cv` not compared."""
    version = version or timings_version(published, current.get("level1", ()), changelog)
    changed = changed_after(version, changelog) if version else {}
    rows = []
    for name, ms in sorted(ours.items(), key=lambda kv: _problem_order(kv[0])):
        level, stem = name.split("/", 1)
        problem = f"{stem}.py"
        entry = published.get(level, {}).get(problem)
        theirs = float(entry[stat]) if entry and entry.get(stat) is not None else None
        why = ""
        spread = (cv or {}).get(name)
        if ms is None:
            why = "not timed here"
        elif spread is not None and spread > max_cv:
            why = f"{NOT_REPEATED} (CV {spread:.1%} > {max_cv:.0%})"
        elif entry is None:
            why = "not in the published timings"
        elif theirs is None:
            why = f"published timing has no {stat}"
        elif version is None:
            why = f"published timings predate {ENLARGED}'s problem sizes"
        elif (level, problem) in changed:
            why = f"updated in {changed[(level, problem)]}, after the timings ({version})"
        rows.append(Row(level, problem, ms, theirs, not why, why))
    return rows


def _problem_order(name: str) -> tuple[str, int, str]:
    level, stem = name.split("/", 1)
    number = re.match(r"\d+", stem)
    return level, int(number.group()) if number else 0, stem


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def summary(rows: list[Row]) -> list[dict[str, Any]]:
    """Per level and over all: problems timed, compared, and the ratio's quartiles."""
    out = []
    for level in (*LEVELS, "all"):
        part = [r for r in rows if level in ("all", r.level)]
        if not part:
            continue
        ratios = sorted(r.ratio for r in part if r.ratio is not None)
        record: dict[str, Any] = {"level": level, "timed": sum(r.ours_ms is not None for r in part),
                                  "compared": len(ratios)}
        if ratios:
            q1, q2, q3 = _quartiles(ratios)
            record.update(q1=q1, median=q2, q3=q3, min=ratios[0], max=ratios[-1])
        out.append(record)
    return out


def _task_records(path: Path) -> dict[str, dict[str, Any]]:
    """Task name -> its record, from a reference-timings file or ``tasks check --json``."""
    data = json.loads(path.read_text())
    if isinstance(data.get("tasks"), dict):
        return dict(data["tasks"])
    if isinstance(data.get("checks"), list):
        return {c["task_id"]: c for c in data["checks"]}
    raise ValueError(f"{path}: neither reference timings (tasks check --out) nor "
                     "tasks check --json output with checks")


def read_ours(path: Path) -> tuple[dict[str, float | None], str | None]:
    """``level/stem`` -> our eager ms, and the timing backend, from a reference-timings file
    or ``tasks check --json`` output."""
    records = _task_records(path)
    ours: dict[str, float | None] = {}
    backends = set()
    for task, record in records.items():
        if not task.startswith(PREFIX):
            continue
        ok = record.get("status", "ok") == "ok"
        ms = record.get("ref_ms")
        ours[task[len(PREFIX):]] = float(ms) if ok and ms is not None else None
        backends.add(record.get("timing_backend"))
    backend = next(iter(backends)) if len(backends) == 1 else None
    return ours, backend


def read_cv(path: Path) -> dict[str, float | None]:
    """``level/stem`` -> our timing's CV (``timing_cv``; None where the file has none)."""
    return {task[len(PREFIX):]: (float(r["timing_cv"]) if r.get("timing_cv") is not None
                                 else None)
            for task, r in _task_records(path).items() if task.startswith(PREFIX)}


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def render(rows: list[Row], stats: list[dict[str, Any]], hardware: str, stat: str) -> str:
    lines = [f"eager reference: ours / published ({hardware}, {stat}), where the shapes match",
             "", f"{'level':<8} {'timed':>5} {'compared':>8} {'q1':>7} {'median':>7} "
             f"{'q3':>7} {'min':>7} {'max':>7}"]
    for s in stats:
        lines.append(f"{s['level']:<8} {s['timed']:>5} {s['compared']:>8} "
                     f"{_fmt(s.get('q1')):>7} {_fmt(s.get('median')):>7} {_fmt(s.get('q3')):>7} "
                     f"{_fmt(s.get('min')):>7} {_fmt(s.get('max')):>7}")
    lines += ["", f"{'problem':<60} {'ours ms':>9} {'theirs ms':>9} {'ratio':>6}  note"]
    for r in rows:
        lines.append(f"{r.level + '/' + r.problem[:-3]:<60} {_fmt(r.ours_ms):>9} "
                     f"{_fmt(r.published_ms):>9} {_fmt(r.ratio, '.2f'):>6}  {r.why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare our eager KernelBench reference timings with the authors' "
                    "published ones, per problem where the shapes match.",
        epilog="See the module docstring for how shapes are matched.")
    parser.add_argument("--ours", type=Path, nargs="+", required=True,
                        help="kernelband tasks check --out FILE (or its --json output); "
                        "several files (pieces of a run) are merged")
    parser.add_argument("--kernelbench", type=Path, required=True,
                        help="the dataset folder: level1-3, changelog/, results/timing/")
    parser.add_argument("--hardware", default="H100_Modal",
                        help="folder under results/timing/ [H100_Modal]")
    parser.add_argument("--stat", choices=("mean", "min"), default="mean",
                        help="the published statistic to compare with [mean]")
    parser.add_argument("--timings-version", default=None,
                        help="the dataset version of the published timings [inferred]")
    parser.add_argument("--max-cv", type=float, default=0.05,
                        help="compare only problems whose timing CV is at most this [0.05]")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)

    root = args.kernelbench
    timing = root / "results" / "timing" / args.hardware / "baseline_time_torch.json"
    if not timing.is_file():
        parser.error(f"{timing} not found")
    published = json.loads(timing.read_text())
    current = {lv: sorted(p.name for p in (root / lv).glob("*.py")) for lv in LEVELS
               if (root / lv).is_dir()}
    changelog = Changelog.read(root / "changelog")
    ours: dict[str, float | None] = {}
    cv: dict[str, float | None] = {}
    backends = set()
    for path in args.ours:
        part, backend = read_ours(path)
        ours.update(part)
        cv.update(read_cv(path))
        backends.add(backend)
    backend = next(iter(backends)) if len(backends) == 1 else None
    if backend not in (None, "cuda"):
        print(f"note: our timings are {backend}, not GPU figures", file=sys.stderr)
    version = args.timings_version or timings_version(published, current.get("level1", ()),
                                                      changelog)
    rows = match(ours, published, current, changelog, stat=args.stat, version=version, cv=cv,
                 max_cv=args.max_cv)
    stats = summary(rows)
    print(render(rows, stats, args.hardware, args.stat))
    print(f"\npublished timings taken as dataset {version or 'before ' + ENLARGED}")
    noisy = sum(r.why.startswith(NOT_REPEATED) for r in rows)
    if noisy:
        print(f"{noisy} problem(s) left out: our timing's CV over {args.max_cv:.0%} (was the "
              "GPU shared while timing?)")
    if args.json is not None:
        args.json.write_text(json.dumps({
            "hardware": args.hardware, "stat": args.stat, "timings_version": version,
            "max_cv": args.max_cv,
            "ours": [str(p) for p in args.ours], "timing_backend": backend, "summary": stats,
            "problems": [{**asdict(r), "ratio": r.ratio} for r in rows]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
