"""Durable, append-only writer of trace datasets (schema v1).

Every flush writes one new part file per table atomically (kbsim.trace.layout), kernels before
steps and the manifest before both, so at every instant the directory on disk is a valid dataset:
a ``kill -9`` loses at most the rows not yet flushed, duplicates nothing and leaves no half-written
file. With the default ``flush_every=1`` each ``append_step`` / ``append_kernel`` is durable when
it returns (the live loop records one attempt at a time); bulk writers raise ``flush_every`` or use
``append_steps`` / ``append_kernels`` with whole tables.

Append a step's child kernel before the step itself: a valid dataset never has an ``ok`` step
whose child is missing from the kernels table.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kbsim.trace import checks
from kbsim.trace.layout import (
    MANIFEST_NAME,
    TABLE_DIRS,
    atomic_write_parquet,
    fsync_dir,
    part_name,
    scan_parts,
    stray_temp_files,
    utc_now_iso,
    write_manifest,
)
from kbsim.trace.reader import TraceError, read_manifest, read_part_file, read_table_dir
from kbsim.trace.rows import conform_table, rows_to_table
from kbsim.trace.schema import KERNELS_SCHEMA, SCHEMA_VERSION, STEPS_SCHEMA

_SCHEMAS = {"steps": STEPS_SCHEMA, "kernels": KERNELS_SCHEMA}
_LOCK_NAME = ".writer.lock"


def _default_manifest() -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "hardware": {},
        "proposer": {},
        "policy": {},
        "tasks": [],
        "run_ids": [],
        "start_time": utc_now_iso(),
        "end_time": None,
    }


def _key_tuples(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of a small key table as tuples (for set membership)."""
    return list(zip(*(column.to_pylist() for column in table.columns), strict=True))


def _union(first: Sequence[str], second: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


class TraceWriter:
    """Append steps and kernels to the dataset directory `path`.

    `manifest` gives hardware, proposer, policy, tasks and run ids (missing keys get defaults;
    run ids and task ids seen in appended rows are added automatically). With `resume=True` an
    existing dataset is reopened and appended to (a missing one is created); otherwise `path`
    must not hold a dataset yet. One writer per dataset at a time (an advisory lock enforces it).
    Part files are compacted into one when a table holds more than `compact_every` of them.
    """

    def __init__(
        self,
        path: str | Path,
        manifest: Mapping[str, Any] | None = None,
        *,
        resume: bool = False,
        flush_every: int = 1,
        compact_every: int = 256,
    ) -> None:
        if flush_every < 1 or compact_every < 2:
            raise ValueError("flush_every must be >= 1 and compact_every >= 2")
        self.path = Path(path)
        self.flush_every = flush_every
        self.compact_every = compact_every
        self._pending: dict[str, list[pa.Table]] = {"steps": [], "kernels": []}
        self._pending_rows = 0
        self._closed = False
        exists = (self.path / MANIFEST_NAME).exists() or any(
            scan_parts(self.path / name)[0] for name in TABLE_DIRS
        )
        if exists and not resume:
            raise FileExistsError(
                f"{self.path} already holds a trace dataset; pass resume=True to append to it"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        for name in TABLE_DIRS:
            (self.path / name).mkdir(exist_ok=True)
        self._lock_fd = os.open(self.path / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise RuntimeError(f"{self.path} is open in another TraceWriter") from None
        try:
            self._open(dict(manifest or {}), exists)
        except BaseException:
            os.close(self._lock_fd)
            raise

    # -- opening ---------------------------------------------------------------------------

    def _open(self, manifest: dict[str, Any], exists: bool) -> None:
        given_version = manifest.get("schema_version", SCHEMA_VERSION)
        if given_version != SCHEMA_VERSION:
            raise ValueError(
                f"manifest schema_version must be {SCHEMA_VERSION}, got {given_version!r}"
            )
        for key in ("run_ids", "tasks"):
            values = manifest.get(key, [])
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"manifest {key} must be a list of strings, got {values!r}")
        if exists:
            existing, problems = read_manifest(self.path)
            if existing is None or problems:
                raise TraceError(problems)
            self._remove_leftovers()
            merged = {**_default_manifest(), **manifest, **existing}
            merged["run_ids"] = _union(existing.get("run_ids", []), manifest.get("run_ids", []))
            merged["tasks"] = _union(existing.get("tasks", []), manifest.get("tasks", []))
            merged["end_time"] = None
            self.manifest = merged
        else:
            self.manifest = {**_default_manifest(), **manifest}
            self.manifest["end_time"] = None
        self._next_seq = {name: self._max_seq(name) + 1 for name in TABLE_DIRS}
        self._step_keys: set[tuple[str, str, int]] = set()
        self._kernel_keys: set[tuple[str, str]] = set()
        #: the kernels recorded as incorrect so far (a correct row may still supersede one)
        self._kernel_incorrect: set[tuple[str, str]] = set()
        self._kernel_rows: dict[tuple[str, str], dict[str, Any]] = {}
        if exists:
            steps = self._read_existing("steps", ["run_id", "task_id", "step"])
            self._step_keys = set(_key_tuples(steps))
            kernels = self._read_existing("kernels", ["task_id", "kernel_id", "correct"])
            rows = _key_tuples(kernels)
            self._kernel_keys = {(task_id, kernel_id) for task_id, kernel_id, _ in rows}
            # a kernel with any correct row (D90: recorded correct again) is settled
            self._kernel_incorrect = self._kernel_keys - {
                (task_id, kernel_id) for task_id, kernel_id, correct in rows if correct}
        self._manifest_dirty = False
        write_manifest(self.path, self.manifest)

    def _max_seq(self, table_name: str) -> int:
        live, _ = scan_parts(self.path / table_name)
        return max((part.last_seq for part in live), default=0)

    def _remove_leftovers(self) -> None:
        """Delete temp files and superseded parts a killed writer may have left behind."""
        for name in TABLE_DIRS:
            table_dir = self.path / name
            _live, superseded = scan_parts(table_dir)
            leftovers = stray_temp_files(table_dir) + [p.path for p in superseded]
            for leftover in leftovers:
                leftover.unlink(missing_ok=True)
            if leftovers:
                fsync_dir(table_dir)

    def _read_existing(self, table_name: str, columns: Sequence[str] | None) -> pa.Table:
        table, problems = read_table_dir(
            self.path / table_name, table_name, columns=columns, row_checks=False
        )
        if problems:
            raise TraceError(problems)
        return table

    # -- appending -------------------------------------------------------------------------

    def _note_ids(self, run_ids: Sequence[str], task_ids: Sequence[str]) -> None:
        new_runs = [r for r in run_ids if r not in self.manifest["run_ids"]]
        new_tasks = [t for t in task_ids if t not in self.manifest["tasks"]]
        if new_runs or new_tasks:
            self.manifest["run_ids"] = _union(self.manifest["run_ids"], new_runs)
            self.manifest["tasks"] = _union(self.manifest["tasks"], new_tasks)
            self._manifest_dirty = True

    def set_compile_ms(self, task_id: str, ms: float) -> None:
        """Record `task_id`'s ``torch.compile`` time (ms, its baseline for KernelBench's
        ``fast_p``) in the manifest's ``compile_ms``; written with the next flush."""
        self._check_open()
        self.manifest.setdefault("compile_ms", {})[task_id] = float(ms)
        self._manifest_dirty = True
        self.flush()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"TraceWriter for {self.path} is closed")

    def append_step(self, row: Mapping[str, Any]) -> None:
        """Record one attempt; durable on return when flush_every == 1. ValueError on a bad row."""
        self.append_steps([row])

    def append_steps(self, rows: pa.Table | Sequence[Mapping[str, Any]]) -> None:
        """Record many attempts at once (a table with schema v1 step columns, or row dicts)."""
        self._check_open()
        if isinstance(rows, pa.Table):
            table = conform_table(rows, STEPS_SCHEMA, "steps")
        else:
            table = rows_to_table(rows, STEPS_SCHEMA, "steps")
        if table.num_rows == 0:
            return
        problems = checks.step_row_problems(table, nulls_checked=not isinstance(rows, pa.Table))
        if problems:
            raise ValueError(f"steps rejected: {problems[0]}")
        keys = _key_tuples(table.select(["run_id", "task_id", "step"]))
        batch_keys: set[tuple[Any, ...]] = set()
        for key in keys:
            if key in self._step_keys or key in batch_keys:
                run_id, task_id, step = key
                where = "already recorded" if key in self._step_keys else "given twice"
                raise ValueError(
                    f"steps rejected: step (run_id={run_id!r}, task_id={task_id!r}, step={step}) "
                    f"is {where}"
                )
            batch_keys.add(key)
        self._step_keys.update(keys)
        self._note_ids(
            pc.unique(table.column("run_id")).to_pylist(),
            pc.unique(table.column("task_id")).to_pylist(),
        )
        self._enqueue("steps", table)

    def append_kernel(self, row: Mapping[str, Any]) -> bool:
        """Record one kernel; False (and nothing written) if (task_id, kernel_id) is known,
        unless it was recorded incorrect and this row is correct (see `append_kernels`)."""
        return self.append_kernels([row]) == 1

    def append_kernels(self, rows: pa.Table | Sequence[Mapping[str, Any]]) -> int:
        """Record kernels not seen before (by (task_id, kernel_id)); returns how many rows were
        written. NOTE (D90): a kernel recorded as incorrect is recorded again when a row says
        it is correct (its first evaluation was stopped by the machine, a worker killed by the
        system, and a resumed run evaluated it again); readers keep the correct row
        (`checks.apply_kernel_upgrades`)."""
        self._check_open()
        if isinstance(rows, pa.Table):
            table = conform_table(rows, KERNELS_SCHEMA, "kernels")
        else:
            table = rows_to_table(rows, KERNELS_SCHEMA, "kernels")
        problems = checks.kernel_row_problems(table, nulls_checked=not isinstance(rows, pa.Table))
        if problems:
            raise ValueError(f"kernels rejected: {problems[0]}")
        keys = _key_tuples(table.select(["task_id", "kernel_id"]))
        keep = []
        for key, correct in zip(keys, table.column("correct").to_pylist(), strict=True):
            upgrade = key in self._kernel_incorrect and bool(correct)
            keep.append(key not in self._kernel_keys or upgrade)
            if keep[-1]:
                self._kernel_rows.pop(key, None)  # the row now on record is this one
            self._kernel_keys.add(key)
            if correct:
                self._kernel_incorrect.discard(key)
            elif keep[-1]:
                self._kernel_incorrect.add(key)
        if not isinstance(rows, pa.Table):
            # kept for update_kernel_profile (live runs append kernels one dict at a time)
            for key, row, new in zip(keys, rows, keep, strict=True):
                if new:
                    self._kernel_rows[key] = dict(row)
        if not any(keep):
            return 0
        table = table.filter(pa.array(keep)) if not all(keep) else table
        self._enqueue("kernels", table)
        return table.num_rows

    def update_kernel_profile(
        self,
        task_id: str,
        kernel_id: str,
        *,
        hw_sig: Sequence[float],
        profile9: Sequence[float | None] | None,
        profiler: str,
    ) -> bool:
        """Record the profile of a kernel already written without one; False if it had one.

        The kernel's row is appended again with `hw_sig`, `profile9`, `profiled=True` and
        `profiler`; readers keep the profiled row (`checks.apply_kernel_upgrades`), so a kill
        between the two appends leaves the unprofiled row, never a duplicate.
        """
        self._check_open()
        key = (task_id, kernel_id)
        if key not in self._kernel_keys:
            raise KeyError(f"kernel (task_id={task_id!r}, kernel_id={kernel_id!r}) is not in "
                           "this dataset; append it before recording its profile")
        row = self._kernel_rows.get(key)
        if row is None:
            on_disk = checks.apply_kernel_upgrades(self.existing_kernels()).to_pylist()
            row = next((r for r in on_disk if (r["task_id"], r["kernel_id"]) == key), None)
        if row is None or row.get("profiled"):
            return False
        upgraded = {**row, "hw_sig": list(hw_sig),
                    "profile9": list(profile9) if profile9 is not None else None,
                    "profiled": True, "profiler": profiler}
        self._kernel_rows[key] = upgraded
        self._enqueue("kernels", rows_to_table([upgraded], KERNELS_SCHEMA, "kernels"))
        return True

    def _enqueue(self, table_name: str, table: pa.Table) -> None:
        self._pending[table_name].append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= self.flush_every:
            self.flush()

    # -- writing ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Make every appended row durable: manifest, then kernels, then steps, each atomic."""
        if self._manifest_dirty:
            write_manifest(self.path, self.manifest)
            self._manifest_dirty = False
        for name in ("kernels", "steps"):
            pending = self._pending[name]
            if not pending:
                continue
            table = pa.concat_tables(pending).combine_chunks() if len(pending) > 1 else pending[0]
            seq = self._next_seq[name]
            atomic_write_parquet(self.path / name / part_name(seq), table)
            self._next_seq[name] = seq + 1
            self._pending[name] = []
        self._pending_rows = 0
        for name in TABLE_DIRS:
            if len(scan_parts(self.path / name)[0]) > self.compact_every:
                self.compact(name)

    def compact(self, table_name: str | None = None) -> None:
        """Merge each table's part files into one, crash-safely (see kbsim.trace.layout)."""
        for name in [table_name] if table_name else list(TABLE_DIRS):
            table_dir = self.path / name
            live, superseded = scan_parts(table_dir)
            for part in superseded:
                part.path.unlink(missing_ok=True)
            if len(live) < 2:
                continue
            merged = pa.concat_tables([read_part_file(p.path, name) for p in live])
            merged = merged.cast(_SCHEMAS[name])
            if name == "kernels":
                # profiles recorded later settle into one row per kernel
                merged = checks.apply_kernel_upgrades(merged)
            first_seq, last_seq = live[0].first_seq, max(p.last_seq for p in live)
            # the merged file lands first; until the old parts are gone it supersedes them
            atomic_write_parquet(table_dir / part_name(first_seq, last_seq), merged)
            for part in live:
                part.path.unlink(missing_ok=True)
            fsync_dir(table_dir)

    def remember_kernels(self, rows: list[dict[str, Any]]) -> None:
        """Hold these on-disk kernel rows in memory, so `update_kernel_profile` on many of them
        does not re-read the kernels table each time (a profiling pass over a whole trace)."""
        for row in rows:
            key = (row["task_id"], row["kernel_id"])
            if key in self._kernel_keys:
                self._kernel_rows.setdefault(key, dict(row))

    def existing_steps(self) -> pa.Table:
        """Every step on disk (appended rows are included once flushed)."""
        return self._read_existing("steps", None)

    def existing_kernels(self) -> pa.Table:
        """Every kernel on disk (appended rows are included once flushed)."""
        return self._read_existing("kernels", None)

    def close(self, *, end_time: str | None = "now") -> None:
        """Flush, stamp `end_time` in the manifest and release the dataset. Idempotent.

        `end_time` "now" stamps the current UTC time; any other value is written as given
        (merge keeps its inputs' end time, None for a run that never finished).
        """
        if self._closed:
            return
        try:
            self.flush()
            self.manifest["end_time"] = utc_now_iso() if end_time == "now" else end_time
            write_manifest(self.path, self.manifest)
        finally:
            self._closed = True
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def compact_dataset(path: str | Path) -> tuple[int, int]:
    """Merge the part files of the dataset at `path` into one per table, in place.

    A live run writes a part per flush (hundreds over a long run); every reader opens them all
    and a repository stores each. The rows are kept as they are (kernels' later profiles settle
    into one row each, as a reader sees them), and so is the manifest's ``end_time``: a run in
    progress stays one. Returns the number of live part files (both tables) before and after.
    """
    path = Path(path)
    manifest, problems = read_manifest(path)
    if manifest is None or problems:
        raise TraceError(problems or [f"{path}: no manifest.json: not a trace dataset"])
    before = sum(len(scan_parts(path / name)[0]) for name in TABLE_DIRS)
    writer = TraceWriter(path, resume=True)
    try:
        writer.compact()
    finally:
        writer.close(end_time=manifest.get("end_time"))
        (path / _LOCK_NAME).unlink(missing_ok=True)
    after = sum(len(scan_parts(path / name)[0]) for name in TABLE_DIRS)
    return before, after
