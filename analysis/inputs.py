"""Read what analysis works on: a trace dataset or a directory of replay results (the I/O edge).

Detection: a directory with ``manifest.json`` and a ``steps/`` folder is a trace dataset (read
with ``kbsim.trace.reader.load_trace``); a directory holding Parquet files whose columns include
every RESULTS_SCHEMA column is a replay-results directory (read with pyarrow.dataset). JSON files
beside the results (the replay's parameters, if written) are kept as ``params``. Anything else is
an ``InputError`` with one sentence saying why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kbsim.trace.schema import RESULTS_SCHEMA

TRACE = "trace"
RESULTS = "results"


class InputError(ValueError):
    """The input path cannot be analysed; the message is one sentence."""


@dataclass
class AnalysisInput:
    """A loaded input: replay ``results`` or trace ``steps`` + ``kernels``, plus metadata."""

    kind: str
    path: Path
    results: pd.DataFrame | None = None
    steps: pd.DataFrame | None = None
    kernels: pd.DataFrame | None = None
    manifests: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    #: a replay's per-episode summary (``_summary.parquet``), where the results folder has one:
    #: it also holds the runs that stopped before their first step, which have no step rows
    summary: pd.DataFrame | None = None


def _results_files(path: Path) -> list[Path]:
    found = []
    for part in sorted(path.rglob("*.parquet")):
        if part.name.startswith("."):
            continue
        try:
            names = set(pq.read_schema(part).names)
        except (pa.ArrowException, OSError):
            continue
        if set(RESULTS_SCHEMA.names) <= names:
            found.append(part)
    return found


def detect_kind(path: str | Path) -> str:
    """"trace" or "results"; InputError when the path is neither."""
    root = Path(path)
    if not root.exists():
        raise InputError(f"{root}: no such file or directory")
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (give a trace dataset or a results directory)")
    if (root / "manifest.json").is_file() and (root / "steps").is_dir():
        return TRACE
    if _results_files(root):
        return RESULTS
    raise InputError(
        f"{root}: neither a trace dataset (manifest.json + steps/) nor replay results "
        f"(Parquet files with the results columns)"
    )


def _read_params(root: Path) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for candidate in sorted(root.glob("*.json")):
        try:
            with open(candidate, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError):
            continue
        if isinstance(loaded, dict):
            params[candidate.stem] = loaded
    return params


def _load_trace_tables(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    try:
        from kbsim.trace.reader import TraceError, load_trace
    except ImportError:  # the reader is optional for analysis: read the part files directly
        return _read_trace_directly(root)
    try:
        data = load_trace(root)
    except TraceError as err:
        raise InputError(str(err)) from None
    return data.steps_df(), data.kernels_df(), list(data.manifests)


def _read_trace_directly(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    with open(root / "manifest.json", encoding="utf-8") as handle:
        manifest = json.load(handle)
    tables = []
    for name in ("steps", "kernels"):
        files = sorted(str(p) for p in (root / name).glob("part-*.parquet"))
        if not files:
            raise InputError(f"{root / name}: no part files")
        tables.append(ds.dataset(files, format="parquet").to_table().to_pandas())
    return tables[0], tables[1], [manifest]


def load_input(path: str | Path) -> AnalysisInput:
    """Detect and load ``path`` (see the module docstring)."""
    root = Path(path)
    kind = detect_kind(root)
    if kind == TRACE:
        steps, kernels, manifests = _load_trace_tables(root)
        return AnalysisInput(kind, root, steps=steps, kernels=kernels, manifests=manifests)
    files = _results_files(root)
    try:
        table = ds.dataset([str(f) for f in files], format="parquet").to_table(
            columns=RESULTS_SCHEMA.names
        )
    except (pa.ArrowException, OSError) as err:
        raise InputError(f"{root}: results files cannot be read together ({err})") from None
    results = table.to_pandas()
    if results.empty:
        raise InputError(f"{root}: the results files hold no rows")
    summary_file = root / "_summary.parquet"
    summary = pq.read_table(summary_file).to_pandas() if summary_file.is_file() else None
    return AnalysisInput(kind, root, results=results, params=_read_params(root), summary=summary)
