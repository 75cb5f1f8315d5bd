"""Throughput of a resumable live run, piece by piece, from its ``evaluations.jsonl``.

A run recorded in resumable pieces (``benchmarks/record_runs.py``) leaves one
JSON line per evaluation with its finish time and where its latency went. This splits the
lines into pieces at gaps of more than ``--gap`` seconds and prints, per piece, as Markdown:
evaluations, their span and rate, statuses, and the median latency and waits (GPU lock,
mid-check returns, the worker's set-up), so that two configurations run back to back can be
compared side by side. The trace's own step counts come from ``kernelband traces validate``.

    python benchmarks/live_pieces.py DIR [--gap 60 | --starts T1,T2,...] [--json out.json]

Runs on any CPU (it reads JSON lines only).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import statistics
import sys
from pathlib import Path
from typing import Any

WAITS = ("eval_latency_s", "timing_wait_s", "shared_wait_s", "yield_wait_s", "setup_s",
         "check_s", "longest_shape_s", "source_check_s", "timing_s")


def read_evaluations(folder: Path) -> list[dict[str, Any]]:
    """The run's evaluation records in finish order (raises on a folder without them)."""
    path = folder / "evaluations.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: is {folder} a live run's --out folder?")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["finished"])


def split_pieces(rows: list[dict[str, Any]], gap_s: float) -> list[list[dict[str, Any]]]:
    """Consecutive records whose finish times are at most `gap_s` apart, as pieces."""
    pieces: list[list[dict[str, Any]]] = []
    last = None
    for row in rows:
        at = dt.datetime.fromisoformat(row["finished"])
        if last is None or (at - last).total_seconds() > gap_s:
            pieces.append([])
        pieces[-1].append(row)
        last = at
    return pieces


def split_at(rows: list[dict[str, Any]], starts: list[dt.datetime]
             ) -> list[list[dict[str, Any]]]:
    """Records split at the pieces' start times (UTC): a piece's evaluations are those that
    finished from its start to the next one's (a long evaluation can leave a gap of minutes
    inside one piece, and a short load none between two)."""
    cuts = sorted(starts)
    pieces: list[list[dict[str, Any]]] = [[] for _ in cuts]
    for row in rows:
        at = dt.datetime.fromisoformat(row["finished"])
        index = sum(1 for c in cuts if c <= at) - 1
        if index >= 0:
            pieces[index].append(row)
    return [p for p in pieces if p]


def summarize_piece(piece: list[dict[str, Any]]) -> dict[str, Any]:
    """One piece's figures: count, span, rate, statuses and median waits."""
    first = dt.datetime.fromisoformat(piece[0]["finished"])
    end = dt.datetime.fromisoformat(piece[-1]["finished"])
    span = (end - first).total_seconds()
    medians = {}
    for key in WAITS:
        values = [r[key] for r in piece if r.get(key) is not None]
        medians[key] = statistics.median(values) if values else None
    return {"from": piece[0]["finished"], "to": piece[-1]["finished"],
            "evaluations": len(piece), "span_s": span,
            "per_s": len(piece) / span if span > 0 else None,
            "statuses": dict(collections.Counter(r["status"] for r in piece)),
            "median": medians}


def markdown(pieces: list[dict[str, Any]]) -> str:
    head = ["piece (UTC)", "evaluations", "span s", "evaluations/s", "ok",
            *[f"median {k.removesuffix('_s')} s" for k in WAITS]]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for p in pieces:
        cells = [f"{p['from'][11:19]}-{p['to'][11:19]}", str(p["evaluations"]),
                 f"{p['span_s']:.0f}", "-" if p["per_s"] is None else f"{p['per_s']:.3f}",
                 str(p["statuses"].get("ok", 0))]
        cells += ["-" if p["median"][k] is None else f"{p['median'][k]:.2f}" for k in WAITS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a live run's --out folder")
    parser.add_argument("--gap", type=float, default=60.0,
                        help="seconds without a finished evaluation that end a piece [60]")
    parser.add_argument("--starts", help="split at these UTC start times instead of at gaps "
                        "(comma-separated ISO times, e.g. 2026-11-25T06:52:20,...)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    try:
        rows = read_evaluations(args.folder)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.starts:
        try:
            starts = [dt.datetime.fromisoformat(t.strip()).replace(tzinfo=dt.timezone.utc)
                      for t in args.starts.split(",")]
        except ValueError as exc:
            print(f"error: --starts: {exc}", file=sys.stderr)
            return 2
        parts = split_at(rows, starts)
    else:
        parts = split_pieces(rows, args.gap)
    pieces = [summarize_piece(p) for p in parts] if rows else []
    print(markdown(pieces))
    if args.json:
        args.json.write_text(json.dumps(pieces, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
