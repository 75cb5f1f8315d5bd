"""Parse ``ncu --csv --page raw`` output into per-launch rows and duration-weighted means."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from live.profiler.metrics import NCU_METRICS


@dataclass(frozen=True)
class Launch:
    """One profiled kernel launch: its name and our fields (NaN where ncu gave nothing)."""

    kernel_name: str
    values: dict[str, float]


def _number(text: str) -> float:
    text = text.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan", "(!)"):
        return math.nan
    try:
        return float(text)
    except ValueError:
        return math.nan


def parse_raw_csv(text: str) -> list[Launch]:
    """Launches in ncu's raw CSV page; lines before the header (``==PROF==``, program output)
    are skipped, and the units row after the header is ignored."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header = rows[0]
    by_metric = {metric: field for field, metric in NCU_METRICS.items()}
    name_col = header.index("Kernel Name") if "Kernel Name" in header else None
    launches = []
    for row in rows[1:]:
        if len(row) != len(header) or not row[0].strip().isdigit():
            continue  # the units row, or a truncated line
        values = {by_metric[col]: _number(cell) for col, cell in zip(header, row, strict=True)
                  if col in by_metric}
        name = row[name_col] if name_col is not None else ""
        launches.append(Launch(kernel_name=name, values=values))
    return launches


def duration_weighted(launches: list[Launch]) -> dict[str, float]:
    """Each field's mean over launches, weighted by ``gpu__time_duration`` (equal weights
    where durations are missing); fields absent from every launch are left out."""
    if not launches:
        return {}
    weights = [lc.values.get("duration_ns", math.nan) for lc in launches]
    if not all(math.isfinite(w) and w > 0 for w in weights):
        weights = [1.0] * len(launches)
    fields = sorted({key for lc in launches for key in lc.values})
    out: dict[str, float] = {}
    for field in fields:
        pairs = [(lc.values.get(field, math.nan), w) for lc, w in zip(launches, weights,
                                                                      strict=True)]
        pairs = [(v, w) for v, w in pairs if math.isfinite(v)]
        if pairs:
            total = sum(w for _, w in pairs)
            out[field] = sum(v * w for v, w in pairs) / total
    return out
