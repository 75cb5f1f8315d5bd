"""Vectorised checks of trace tables: each returns problems as one-sentence strings.

Used by the reader (per part file and per dataset) and by the writer (on every appended row or
batch), so a row the writer accepts is a row the reader accepts.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from kbsim.trace.schema import (
    KERNELS_SCHEMA,
    OPTIONAL_COLUMNS,
    SCHEMA_VERSION,
    STATUSES,
    STEPS_SCHEMA,
)

SCHEMAS: dict[str, pa.Schema] = {"steps": STEPS_SCHEMA, "kernels": KERNELS_SCHEMA}


def _same_type(stored: pa.DataType, wanted: pa.DataType) -> bool:
    """Equal, or a variable-size list standing for a fixed-size one (how vectors are stored,
    kbsim.trace.layout.to_disk; files written before that hold the fixed-size type)."""
    if stored == wanted:
        return True
    return (pa.types.is_fixed_size_list(wanted) and pa.types.is_list(stored)
            and stored.value_type == wanted.value_type)


def schema_problems(actual: pa.Schema, table_name: str) -> list[str]:
    """Column-level problems of a part file's schema against schema v1 (missing, unknown, type)."""
    expected = SCHEMAS[table_name]
    problems: list[str] = []
    version = (actual.metadata or {}).get(b"kernelband.schema_version")
    if version is not None and version.isdigit() and int(version) > SCHEMA_VERSION:
        return [
            f"written by a newer kernelband (schema version {int(version)}; "
            f"this one reads version {SCHEMA_VERSION})"
        ]
    for field in expected:
        index = actual.get_field_index(field.name)
        if index < 0 and field.name in OPTIONAL_COLUMNS[table_name]:
            continue  # written before the column existed: read as nulls
        if index < 0:
            problems.append(f"missing column '{field.name}' required by schema v1 {table_name}")
        elif not _same_type(actual.field(index).type, field.type):
            problems.append(
                f"column '{field.name}' has type {actual.field(index).type}, "
                f"but schema v1 {table_name} says {field.type}"
            )
    for name in actual.names:
        if expected.get_field_index(name) < 0:
            problems.append(f"unknown column '{name}' (not in schema v1 {table_name})")
    return problems


def _first_step(table: pa.Table, mask: pa.ChunkedArray | pa.Array) -> str:
    row = table.filter(mask).slice(0, 1).select(["run_id", "task_id", "step"]).to_pylist()[0]
    return f"run_id={row['run_id']!r}, task_id={row['task_id']!r}, step={row['step']}"


def _count(mask: pa.ChunkedArray | pa.Array) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def required_null_problems(table: pa.Table, table_name: str) -> list[str]:
    """Null values in columns schema v1 marks as required."""
    problems = []
    for field in SCHEMAS[table_name]:
        if not field.nullable and field.name in table.column_names:
            nulls = table.column(field.name).null_count
            if nulls:
                problems.append(f"column '{field.name}' has {nulls} null value(s) but is required")
    return problems


def step_row_problems(steps: pa.Table, *, nulls_checked: bool = False) -> list[str]:
    """Row-level problems of a steps table holding every schema v1 column.

    `nulls_checked` skips the required-column null check (rows built by kbsim.trace.rows).
    """
    problems = [] if nulls_checked else required_null_problems(steps, "steps")
    if problems:
        return problems  # the checks below assume required columns are filled
    status = steps.column("status")
    unknown = pc.invert(pc.is_in(status, value_set=pa.array(STATUSES)))
    if _count(unknown):
        bad = steps.filter(unknown).column("status")[0].as_py()
        first = _first_step(steps, unknown)
        problems.append(
            f"unknown status {bad!r} in {_count(unknown)} row(s) (first: {first}); "
            f"allowed: {', '.join(STATUSES)}"
        )
    negative_step = pc.less(steps.column("step"), 0)
    if _count(negative_step):
        problems.append(
            f"{_count(negative_step)} row(s) have a negative step "
            f"(first: {_first_step(steps, negative_step)})"
        )
    is_ok = pc.equal(status, "ok")
    child_ms = steps.column("child_ms")
    bad_ms = pc.and_(
        is_ok,
        pc.fill_null(pc.invert(pc.and_(pc.is_finite(child_ms), pc.greater(child_ms, 0.0))), True),
    )
    if _count(bad_ms):
        problems.append(
            f"{_count(bad_ms)} 'ok' row(s) have a missing, NaN or non-positive child_ms "
            f"(first: {_first_step(steps, bad_ms)})"
        )
    no_child = pc.and_(is_ok, pc.is_null(steps.column("child_id")))
    if _count(no_child):
        problems.append(
            f"{_count(no_child)} 'ok' row(s) have no child_id "
            f"(first: {_first_step(steps, no_child)})"
        )
    reward = steps.column("reward")
    bad_reward = pc.invert(pc.and_(pc.is_finite(reward), pc.less_equal(reward, 1.0)))
    if _count(bad_reward):
        value = steps.filter(bad_reward).column("reward")[0].as_py()
        problems.append(
            f"{_count(bad_reward)} row(s) have a reward that is NaN, infinite or above 1 "
            f"(first: {_first_step(steps, bad_reward)}, reward={value})"
        )
    return problems


def kernel_row_problems(kernels: pa.Table, *, nulls_checked: bool = False) -> list[str]:
    """Row-level problems of a kernels table holding every schema v1 column."""
    problems = [] if nulls_checked else required_null_problems(kernels, "kernels")
    if problems:
        return problems
    ms = kernels.column("ms")
    bad_ms = pc.and_(
        kernels.column("correct"),
        pc.fill_null(pc.invert(pc.and_(pc.is_finite(ms), pc.greater(ms, 0.0))), True),
    )
    if _count(bad_ms):
        first = kernels.filter(bad_ms).slice(0, 1).to_pylist()[0]
        problems.append(
            f"{_count(bad_ms)} correct kernel(s) have a missing, NaN or non-positive ms "
            f"(first: task_id={first['task_id']!r}, kernel_id={first['kernel_id']!r})"
        )
    return problems


def duplicate_step_problems(steps: pa.Table) -> list[str]:
    """Steps recorded more than once under the same (run_id, task_id, step)."""
    keys = ["run_id", "task_id", "step"]
    counts = steps.select(keys).group_by(keys).aggregate([("step", "count")])
    dupes = counts.filter(pc.greater(counts.column("step_count"), 1))
    if dupes.num_rows == 0:
        return []
    row = dupes.slice(0, 1).to_pylist()[0]
    return [
        f"step (run_id={row['run_id']!r}, task_id={row['task_id']!r}, step={row['step']}) "
        f"is recorded {row['step_count']} times ({dupes.num_rows} duplicated step(s) in all)"
    ]


def apply_kernel_upgrades(kernels: pa.Table) -> pa.Table:
    """Drop every row of a kernel that a later row of the same kernel supersedes.

    A kernel is recorded again in two cases, and the row that says more wins: a live run
    appends a kernel's row with its profile when the policy later asks for its hardware
    signature (`TraceWriter.update_kernel_profile`): the profiled row supersedes; and a kernel
    whose evaluation the machine stopped (a worker killed by the system) is recorded as
    incorrect, then evaluated again by a resumed run (NOTE D90): a correct row supersedes an
    incorrect one. Rows are ranked (correct, profiled); in each kernel's group the rows below
    the group's best rank are dropped, so true duplicates (equal rank) stay for
    `duplicate_kernel_problems` to report.
    """
    keys = ["task_id", "kernel_id"]
    ranked = [c for c in ("correct", "profiled") if c in kernels.column_names]
    if kernels.num_rows == 0 or not ranked or not set(keys) <= set(kernels.column_names):
        return kernels
    counts = kernels.select(keys).group_by(keys).aggregate([("kernel_id", "count")])
    repeated = counts.filter(pc.greater(counts.column("kernel_id_count"), 1))
    if repeated.num_rows == 0:
        return kernels
    rows = pa.array(range(kernels.num_rows), type=pa.int64())
    table = kernels.select([*keys, *ranked]).append_column("_row", rows)
    members = table.join(repeated.select(keys), keys=keys, join_type="inner").to_pylist()
    best: dict[tuple[str, str], tuple[bool, ...]] = {}
    for row in members:
        key, rank = (row["task_id"], row["kernel_id"]), tuple(bool(row[c]) for c in ranked)
        best[key] = max(best.get(key, rank), rank)
    superseded = [row["_row"] for row in members
                  if tuple(bool(row[c]) for c in ranked) < best[(row["task_id"],
                                                                 row["kernel_id"])]]
    if not superseded:
        return kernels
    keep = pc.invert(pc.is_in(rows, value_set=pa.array(superseded, type=pa.int64())))
    return kernels.filter(keep)


def duplicate_kernel_problems(kernels: pa.Table) -> list[str]:
    """Kernels recorded more than once under the same (task_id, kernel_id)."""
    keys = ["task_id", "kernel_id"]
    counts = kernels.select(keys).group_by(keys).aggregate([("kernel_id", "count")])
    dupes = counts.filter(pc.greater(counts.column("kernel_id_count"), 1))
    if dupes.num_rows == 0:
        return []
    row = dupes.slice(0, 1).to_pylist()[0]
    return [
        f"kernel (task_id={row['task_id']!r}, kernel_id={row['kernel_id']!r}) "
        f"is recorded {row['kernel_id_count']} times"
    ]


def missing_kernel_problems(steps: pa.Table, kernels: pa.Table) -> list[str]:
    """'ok' steps whose child kernel is absent from the kernels table."""
    ok = steps.filter(pc.equal(steps.column("status"), "ok")).select(["task_id", "child_id"])
    known = kernels.select(["task_id", "kernel_id"]).rename_columns(["task_id", "child_id"])
    missing = ok.join(known, keys=["task_id", "child_id"], join_type="left anti")
    if missing.num_rows == 0:
        return []
    row = missing.slice(0, 1).to_pylist()[0]
    return [
        f"{missing.num_rows} 'ok' step(s) name a child kernel missing from the kernels table "
        f"(first: task_id={row['task_id']!r}, child_id={row['child_id']!r})"
    ]
