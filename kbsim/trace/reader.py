"""Load and validate trace datasets (schema v1); every problem is one sentence naming the file.

``load_trace(paths)`` reads one dataset directory or several into Arrow tables (pandas on request)
and raises ``TraceError`` on the first problem; ``validate_trace(paths)`` returns every problem
found, an empty list for a valid dataset. Parts superseded by a compaction are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kbsim.trace import checks
from kbsim.trace.layout import MANIFEST_NAME, from_disk, scan_parts, stray_parquet_files
from kbsim.trace.schema import (
    KERNELS_SCHEMA,
    MANIFEST_KEYS,
    OPTIONAL_COLUMNS,
    SCHEMA_VERSION,
    STEPS_SCHEMA,
)

PathLike = str | Path
Paths = PathLike | Sequence[PathLike]


class TraceError(ValueError):
    """A trace dataset that cannot be read as schema v1; `problems` holds every sentence found."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        message = self.problems[0]
        if len(self.problems) > 1:
            message += f" (and {len(self.problems) - 1} more problem(s))"
        super().__init__(message)


@dataclass
class TraceData:
    """One or more datasets loaded together.

    `manifests` holds one manifest per dataset directory, in the order given; `steps` and
    `kernels` concatenate every dataset's rows with exactly the schema v1 columns.
    """

    paths: list[Path]
    manifests: list[dict[str, Any]]
    steps: pa.Table
    kernels: pa.Table
    problems: list[str] = field(default_factory=list)

    @property
    def manifest(self) -> list[dict[str, Any]]:
        """Alias of `manifests` (DESIGN's name)."""
        return self.manifests

    @property
    def run_ids(self) -> list[str]:
        """Run ids listed by the manifests, in order, without repeats."""
        seen: dict[str, None] = {}
        for manifest in self.manifests:
            seen.update(dict.fromkeys(manifest.get("run_ids", [])))
        return list(seen)

    def steps_df(self) -> Any:
        """The steps table as a pandas DataFrame (nullable dtypes kept as Arrow-backed columns)."""
        return self.steps.to_pandas()

    def kernels_df(self) -> Any:
        """The kernels table as a pandas DataFrame."""
        return self.kernels.to_pandas()


def _as_paths(paths: Paths) -> list[Path]:
    if isinstance(paths, (str, Path)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def read_manifest(dataset_dir: PathLike) -> tuple[dict[str, Any] | None, list[str]]:
    """(manifest, problems) of one dataset; the manifest is None when it cannot be used at all."""
    dataset_dir = Path(dataset_dir)
    if not dataset_dir.is_dir():
        return None, [f"{dataset_dir}: no such directory"]
    manifest_path = dataset_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        return None, [f"{dataset_dir}: no manifest.json, so this is not a kernelband trace dataset"]
    try:
        with open(manifest_path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except json.JSONDecodeError as err:
        return None, [f"{manifest_path}: not valid JSON ({err.msg} at line {err.lineno})"]
    except (OSError, UnicodeDecodeError) as err:
        return None, [f"{manifest_path}: unreadable ({type(err).__name__})"]
    if not isinstance(manifest, dict):
        return None, [f"{manifest_path}: not a JSON object"]
    version = manifest.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        return None, [
            f"{manifest_path}: schema version {version} was written by a newer kernelband "
            f"(this one reads version {SCHEMA_VERSION}); upgrade kernelband to read it"
        ]
    if version != SCHEMA_VERSION or isinstance(version, bool):
        if "schema_version" not in manifest:
            return None, [f"{manifest_path}: manifest lacks required key 'schema_version'"]
        return None, [
            f"{manifest_path}: unknown schema version {version!r} "
            f"(this kernelband reads version {SCHEMA_VERSION})"
        ]
    problems = [
        f"{manifest_path}: manifest lacks required key {key!r}"
        for key in MANIFEST_KEYS
        if key not in manifest
    ]
    run_ids = manifest.get("run_ids", [])
    if not isinstance(run_ids, list) or not all(isinstance(r, str) for r in run_ids):
        problems.append(f"{manifest_path}: run_ids must be a list of strings")
    return manifest, problems


def _unreadable(exc: BaseException) -> str:
    """The problem sentence for a part file pyarrow cannot read, with pyarrow's own reason."""
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    return f"unreadable Parquet file (truncated or corrupt: {reason})"


def read_part_file(path: Path, table_name: str,
                   columns: Sequence[str] | None = None) -> pa.Table:
    """One part file (its `columns`, default all) in memory types: the schema's fixed-size
    lists restored (they are stored as variable-size lists: kbsim.trace.layout.to_disk); an
    optional column the file predates (`OPTIONAL_COLUMNS`) comes back as nulls."""
    with pq.ParquetFile(path) as file:
        return _read_open_part(file, table_name, columns)


def _read_open_part(file: pq.ParquetFile, table_name: str,
                    columns: Sequence[str] | None) -> pa.Table:
    """`read_part_file` of a part file already open: its footer is read once. A file is read
    with ``ParquetFile.read``, not ``pq.read_table``, which goes through Arrow's dataset layer
    for each file (the 153 step files of a 90-step live trace: 0.12 s against 0.28 s)."""
    schema = checks.SCHEMAS[table_name]
    stored = set(file.schema_arrow.names)
    wanted = list(columns) if columns is not None else list(schema.names)
    absent = [n for n in wanted if n not in stored and n in OPTIONAL_COLUMNS[table_name]]
    table = file.read(columns=[n for n in wanted if n not in absent]
                      if columns is not None or absent else None)
    for name in absent:
        table = table.append_column(schema.field(name),
                                    pa.nulls(table.num_rows, schema.field(name).type))
    return from_disk(table, schema)


def read_table_dir(
    table_dir: Path,
    table_name: str,
    *,
    columns: Sequence[str] | None = None,
    row_checks: bool = True,
) -> tuple[pa.Table, list[str]]:
    """(rows of every live part file, problems) of one table directory (`steps` or `kernels`).

    Only `columns` are read when given (schema checks still cover every column, from the
    footers); row-level checks need every column and run only when `columns` is None.
    """
    if columns is not None and not columns:
        raise ValueError("read at least one column (Arrow tables without columns lose their rows)")
    schema = checks.SCHEMAS[table_name]
    wanted = list(columns) if columns is not None else schema.names
    target = pa.schema([schema.field(name) for name in wanted], metadata=schema.metadata)
    live, _superseded = scan_parts(table_dir)
    tables: list[pa.Table] = []
    problems: list[str] = [
        f"{stray}: not named like a part file (part-NNNNNNNN.parquet), so Parquet globs would "
        f"read it but kbsim would not"
        for stray in stray_parquet_files(table_dir)
    ]
    for part in live:
        try:
            file = pq.ParquetFile(part.path)
        except (pa.ArrowException, OSError) as exc:
            problems.append(f"{part.path}: {_unreadable(exc)}")
            continue
        with file:
            file_problems = checks.schema_problems(file.schema_arrow, table_name)
            if file_problems:
                problems.extend(f"{part.path}: {p}" for p in file_problems)
                continue
            try:
                table = _read_open_part(file, table_name, wanted)
            except (pa.ArrowException, OSError) as exc:
                problems.append(f"{part.path}: {_unreadable(exc)}")
                continue
        table = table.select(wanted)
        if row_checks and columns is None:
            row_check = (
                checks.step_row_problems if table_name == "steps" else checks.kernel_row_problems
            )
            found = row_check(table)
        else:
            found = checks.required_null_problems(table, table_name)
        if found:
            problems.extend(f"{part.path}: {p}" for p in found)
            continue
        tables.append(table.cast(target))
    if not tables:
        return target.empty_table(), problems
    return pa.concat_tables(tables), problems


def _read_dataset(
    dataset_dir: Path,
    *,
    steps_columns: Sequence[str] | None,
    kernels_columns: Sequence[str] | None,
    full_checks: bool,
) -> tuple[dict[str, Any] | None, pa.Table | None, pa.Table | None, list[str]]:
    manifest, problems = read_manifest(dataset_dir)
    if manifest is None:
        return None, None, None, problems
    steps, step_problems = read_table_dir(
        dataset_dir / "steps", "steps", columns=steps_columns, row_checks=full_checks
    )
    kernels, kernel_problems = read_table_dir(
        dataset_dir / "kernels", "kernels", columns=kernels_columns, row_checks=full_checks
    )
    problems += step_problems + kernel_problems
    if step_problems or kernel_problems:
        return manifest, steps, kernels, problems
    kernels = checks.apply_kernel_upgrades(kernels)
    if steps.num_rows == 0:
        problems.append(f"{dataset_dir}: no steps recorded (empty dataset)")
        return manifest, steps, kernels, problems
    if "run_id" in steps.column_names and isinstance(manifest.get("run_ids"), list):
        listed = set(manifest["run_ids"])
        used = pc.unique(steps.column("run_id")).to_pylist()
        unlisted = sorted(r for r in used if r not in listed)
        if unlisted:
            problems.append(
                f"{dataset_dir / MANIFEST_NAME}: steps use run id {unlisted[0]!r} "
                f"that is not listed in the manifest's run_ids"
            )
    if full_checks:
        problems += [f"{dataset_dir}: {p}" for p in checks.duplicate_step_problems(steps)]
        problems += [f"{dataset_dir}: {p}" for p in checks.duplicate_kernel_problems(kernels)]
        problems += [f"{dataset_dir}: {p}" for p in checks.missing_kernel_problems(steps, kernels)]
    return manifest, steps, kernels, problems


def _load(
    paths: Paths,
    *,
    steps_columns: Sequence[str] | None = None,
    kernels_columns: Sequence[str] | None = None,
    full_checks: bool = True,
) -> TraceData:
    dirs = _as_paths(paths)
    if not dirs:
        raise TraceError(["no trace dataset given"])
    manifests: list[dict[str, Any]] = []
    steps_tables: list[pa.Table] = []
    kernels_tables: list[pa.Table] = []
    problems: list[str] = []
    run_owner: dict[str, Path] = {}
    for dataset_dir in dirs:
        manifest, steps, kernels, found = _read_dataset(
            dataset_dir,
            steps_columns=steps_columns,
            kernels_columns=kernels_columns,
            full_checks=full_checks,
        )
        problems += found
        if manifest is None or steps is None or kernels is None:
            continue
        for run_id in manifest.get("run_ids", []):
            if run_id in run_owner:
                problems.append(
                    f"{dataset_dir}: run id {run_id!r} also appears in {run_owner[run_id]}; "
                    f"combine them with `kernelband traces merge`"
                )
            run_owner.setdefault(run_id, dataset_dir)
        manifests.append(manifest)
        steps_tables.append(steps)
        kernels_tables.append(kernels)
    steps_all = pa.concat_tables(steps_tables) if steps_tables else STEPS_SCHEMA.empty_table()
    kernels_all = (
        pa.concat_tables(kernels_tables) if kernels_tables else KERNELS_SCHEMA.empty_table()
    )
    return TraceData(dirs, manifests, steps_all, kernels_all, problems)


def validate_trace(paths: Paths) -> list[str]:
    """Every problem of the dataset(s) at `paths`, one sentence each; [] when valid."""
    return _load(paths).problems


def load_trace(
    paths: Paths,
    *,
    steps_columns: Sequence[str] | None = None,
    kernels_columns: Sequence[str] | None = None,
) -> TraceData:
    """Load one dataset directory or several; raise TraceError if any is not valid schema v1.

    With `steps_columns` / `kernels_columns` only those columns are read (fast summaries);
    schema-level checks still run on every part file, row-level checks are then skipped.
    """
    full = steps_columns is None and kernels_columns is None
    data = _load(
        paths, steps_columns=steps_columns, kernels_columns=kernels_columns, full_checks=full
    )
    if data.problems:
        raise TraceError(data.problems)
    return data
