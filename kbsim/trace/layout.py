"""On-disk layout of a trace dataset: part-file names, superseded parts, atomic writes, manifest.

A dataset directory holds ``manifest.json``, ``steps/`` and ``kernels/``. Every part file is made
atomically (a hidden temp file, fsync, ``os.replace``, fsync of the directory), so a reader never
sees a half-written file and a ``kill -9`` at any instant loses at most the write in flight.

Part names encode which rows a file holds, so compaction needs no side file::

    part-00000007.parquet            rows of write number 7
    part-00000001-00000006.parquet   rows of writes 1..6, merged by compaction

A file whose range lies strictly inside another present file's range is *superseded*: readers
ignore it and writers delete it. Compaction writes the merged file first and deletes the parts it
replaces afterwards, so a kill in between leaves extra files that are ignored, never duplicates.
Temp files are named ``.part-*.parquet.tmp``: hidden, and not matched by a ``*.parquet`` glob.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

MANIFEST_NAME = "manifest.json"
TABLE_DIRS: tuple[str, ...] = ("steps", "kernels")
TMP_SUFFIX = ".tmp"

_PART_RE = re.compile(r"^part-(\d{8})(?:-(\d{8}))?\.parquet$")


@dataclass(frozen=True)
class PartFile:
    """One part file and the range of write numbers whose rows it holds."""

    path: Path
    first_seq: int
    last_seq: int


def part_name(first_seq: int, last_seq: int | None = None) -> str:
    """File name of the part holding writes first_seq..last_seq (one write if last_seq is None)."""
    if last_seq is None or last_seq == first_seq:
        return f"part-{first_seq:08d}.parquet"
    return f"part-{first_seq:08d}-{last_seq:08d}.parquet"


def scan_parts(table_dir: Path) -> tuple[list[PartFile], list[PartFile]]:
    """(live parts sorted by first write number, superseded parts) of one table directory.

    Files that are not part files (temp files, stray names) are in neither list.
    """
    if not table_dir.is_dir():
        return [], []
    parts: list[PartFile] = []
    for entry in os.scandir(table_dir):
        match = _PART_RE.match(entry.name)
        if match is None or not entry.is_file():
            continue
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        parts.append(PartFile(Path(entry.path), first, last))
    # sorted by (first asc, last desc), a part is covered exactly when some earlier part reaches
    # at least as far: that part starts no later and ends no earlier (names make ranges distinct)
    parts.sort(key=lambda p: (p.first_seq, -p.last_seq))
    live: list[PartFile] = []
    superseded: list[PartFile] = []
    furthest_last_seq = -1
    for part in parts:
        if part.last_seq <= furthest_last_seq:
            superseded.append(part)
        else:
            live.append(part)
            furthest_last_seq = part.last_seq
    return live, superseded


def stray_parquet_files(table_dir: Path) -> list[Path]:
    """`*.parquet` files that are not part files: globs would read them, the reader would not."""
    if not table_dir.is_dir():
        return []
    return sorted(
        Path(e.path)
        for e in os.scandir(table_dir)
        if e.name.endswith(".parquet") and _PART_RE.match(e.name) is None
    )


def stray_temp_files(table_dir: Path) -> list[Path]:
    """Temp files left by a killed writer (never complete, always safe to delete)."""
    if not table_dir.is_dir():
        return []
    return [
        Path(e.path)
        for e in os.scandir(table_dir)
        if e.name.startswith(".") and e.name.endswith(TMP_SUFFIX)
    ]


def fsync_dir(directory: Path) -> None:
    """Make renames and deletions inside `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _tmp_path(final: Path) -> Path:
    return final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}{TMP_SUFFIX}")


def atomic_write_bytes(final: Path, payload: bytes) -> None:
    """Write `payload` to `final` so that `final` is either absent/old or complete and durable."""
    tmp = _tmp_path(final)
    try:
        with open(tmp, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except BaseException:  # disk full, say: no partial file left behind
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(final.parent)


def to_disk(table: pa.Table) -> pa.Table:
    """`table` with its fixed-size list columns as variable-size lists, as they are stored.

    pyarrow before 26 cannot read a null entry of a fixed-size list column back from Parquet
    ("Expected all lists to be of size=3 but index 1 had size=0"), and the GPU machines we
    record on have such a pyarrow; variable-size lists read back everywhere, and
    `from_disk` restores the schema's fixed sizes.
    """
    fields = [pa.field(f.name, pa.list_(f.type.value_type), f.nullable, f.metadata)
              if pa.types.is_fixed_size_list(f.type) else f for f in table.schema]
    if all(a.type == b.type for a, b in zip(fields, table.schema, strict=True)):
        return table
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def from_disk(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` as read from a part file, with `schema`'s fixed-size list columns restored
    (ArrowInvalid if a list has the wrong length)."""
    fields = []
    for f in table.schema:
        index = schema.get_field_index(f.name)
        want = schema.field(index).type if index >= 0 else None
        fields.append(pa.field(f.name, want, f.nullable, f.metadata)
                      if want is not None and pa.types.is_fixed_size_list(want)
                      and not pa.types.is_fixed_size_list(f.type) else f)
    if all(a.type == b.type for a, b in zip(fields, table.schema, strict=True)):
        return table
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def atomic_write_parquet(final: Path, table: pa.Table) -> None:
    """Write `table` as one Parquet file at `final`, atomically and durably (fixed-size list
    columns stored as variable-size lists, see `to_disk`)."""
    tmp = _tmp_path(final)
    table = to_disk(table)
    try:
        with open(tmp, "wb") as handle:
            pq.write_table(table, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(final.parent)


def utc_now_iso() -> str:
    """Current time as an ISO 8601 string in UTC (the manifest's time format)."""
    return datetime.now(timezone.utc).isoformat()


def write_manifest(dataset_dir: Path, manifest: dict[str, Any]) -> None:
    """Write manifest.json atomically (pretty-printed, keys sorted, so diffs stay readable)."""
    payload = json.dumps(manifest, indent=2, sort_keys=True, default=str).encode() + b"\n"
    atomic_write_bytes(dataset_dir / MANIFEST_NAME, payload)


def read_manifest_raw(dataset_dir: Path) -> dict[str, Any]:
    """Parse manifest.json; raises OSError / json.JSONDecodeError (the reader words them)."""
    with open(dataset_dir / MANIFEST_NAME, encoding="utf-8") as handle:
        return json.load(handle)


def require_new_dataset(out: Path) -> None:
    """Refuse (FileExistsError, one sentence) a directory that already holds a dataset: a
    merge writes into a new one."""
    if (out / MANIFEST_NAME).exists() or any(scan_parts(out / n)[0] for n in ("steps", "kernels")):
        raise FileExistsError(f"{out} already holds a trace dataset; merge into a new directory")
