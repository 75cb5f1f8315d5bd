"""`kernelband analyze` as a library: input → tables and figures → files.

``analyze_input`` is pure (an AnalysisInput in, an Analysis of DataFrames and PNG bytes out);
``write_analysis`` writes ``<name>.csv`` per table, ``tables.md`` with every table, and
``<name>.png`` per figure; ``run_analyze`` does load + analyze + write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics, plots
from analysis.inputs import TRACE, AnalysisInput, load_input
from analysis.regret import regret_bands, unit_curves
from analysis.slopes import classify_growth, fit_slope, v1_bound
from analysis.task_speedups import task_speedup_table, task_speedup_wide
from analysis.trace_features import covering_tables, lipschitz_table, validity_tables
from kbsim.strategies import N_STRATEGIES


@dataclass
class Analysis:
    """Everything analyze computed: named tables, named PNG figures, context and notes."""

    kind: str
    source: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, bytes] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def clusters_of(policy: str, default: int = 3) -> int:
    """K of a policy spec such as ``kernelband-v2:K=5`` (``default`` when not given)."""
    match = re.search(r"(?:^|[:,])K=(\d+)", policy)
    return int(match.group(1)) if match else default


def slope_table(
    results: pd.DataFrame, *, rng: np.random.Generator, n_boot: int
) -> tuple[pd.DataFrame, list[str]]:
    """Per (policy, env): log-log slope (raw, and with sqrt(ln t) divided out), growth, bound."""
    rows, notes = [], []
    finite = results[np.isfinite(results["cum_regret"].to_numpy(dtype=np.float64,
                                                                 na_value=np.nan))]
    for (policy, env), part in finite.groupby(["policy", "env"], sort=True):
        curves = unit_curves(part, env=str(env))
        try:
            raw = fit_slope(curves.t, curves.values, rng=rng, n_boot=n_boot)
            corrected = fit_slope(curves.t, curves.values, rng=rng, n_boot=n_boot, log_power=0.5)
        except ValueError as err:
            notes.append(f"slope of {policy} [{env}] not fitted: {err}")
            continue
        growth = classify_growth(curves.t, curves.values.mean(axis=0))
        t_end = float(curves.t[-1])
        r_end = float(curves.values[:, -1].mean())
        bound = float(v1_bound(np.array([t_end]), clusters_of(str(policy)), N_STRATEGIES)[0])
        rows.append({
            "policy": policy, "env": env, "unit": curves.unit, "n_units": curves.n_units,
            "t_min": raw.t_min, "t_max": raw.t_max, "slope": raw.slope, "ci_low": raw.ci_low,
            "ci_high": raw.ci_high, "slope_sqrt_ln_removed": corrected.slope,
            "ci_low_sqrt_ln_removed": corrected.ci_low,
            "ci_high_sqrt_ln_removed": corrected.ci_high, "growth": growth.kind,
            "log_coef": growth.log_coef, "regret_at_T": r_end, "v1_bound_at_T": bound,
            "regret_over_bound": r_end / bound if bound > 0 else float("nan"),
        })
    return pd.DataFrame(rows), notes


def _results_analysis(inp: AnalysisInput, rng: np.random.Generator, n_boot: int) -> Analysis:
    res = inp.results
    assert res is not None
    out = Analysis(kind=inp.kind, source=str(inp.path))
    out.context = {"replay parameters": inp.params, "policies": sorted(res["policy"].unique()),
                   "environments": sorted(res["env"].unique()),
                   "tasks": int(res["task_id"].nunique()), "seeds": int(res["seed"].nunique()),
                   "steps": int(res["step"].max() - res["step"].min() + 1)}
    out.tables["metrics"] = metrics.results_metrics(res)
    out.tables["task_speedups"] = task_speedup_table(res)
    out.tables["task_speedups_wide"] = task_speedup_wide(out.tables["task_speedups"])
    out.tables["strategies"] = metrics.strategy_table_results(res)
    out.tables["speedup_curves"] = metrics.speedup_curves_results(res)
    bands = regret_bands(res, rng=rng, n_boot=n_boot)
    if bands.empty:
        out.notes.append("no finite cum_regret in the results: regret curves are not estimable")
    else:
        out.tables["regret_bands"] = bands
        slopes, notes = slope_table(res, rng=rng, n_boot=n_boot)
        out.notes += notes
        out.tables["regret_slopes"] = slopes
        k = max([clusters_of(p) for p in res["policy"].unique()] or [3])
        out.figures["regret"] = plots.to_png(plots.regret_figure(bands, n_clusters=k,
                                                                 n_strategies=N_STRATEGIES))
        out.figures["regret_normalised"] = plots.to_png(plots.normalised_regret_figure(bands))
        if not slopes.empty:
            out.figures["regret_slopes"] = plots.to_png(plots.slopes_figure(slopes))
    out.figures["speedup"] = plots.to_png(plots.speedup_figure(out.tables["speedup_curves"]))
    out.figures["strategies"] = plots.to_png(plots.strategy_figure(out.tables["strategies"]))
    out.notes.append("Lipschitz, covering and cluster-validity checks need φ, which replay "
                     "results do not carry: run analyze on the trace for those")
    return out


def _trace_analysis(inp: AnalysisInput, rng: np.random.Generator) -> Analysis:
    steps, kernels = inp.steps, inp.kernels
    assert steps is not None and kernels is not None
    out = Analysis(kind=inp.kind, source=str(inp.path))
    manifest = inp.manifests[0] if inp.manifests else {}
    out.context = {"hardware": manifest.get("hardware", {}),
                   "proposer": manifest.get("proposer", {}),
                   "policy": manifest.get("policy", {}),
                   "tasks": int(steps["task_id"].nunique()), "attempts": int(len(steps)),
                   "kernels": int(len(kernels)),
                   "time": f"{manifest.get('start_time', '?')} → {manifest.get('end_time', '?')}"}
    if (kernels["timing_backend"] == "cpu-interpreter").any():
        out.notes.append("some timings come from the CPU interpreter: not GPU figures")
    out.notes.append("regret needs arm means, which a trace does not carry: replay it "
                     "(kernelband replay --trace DIR ...) and analyse the results for regret")
    out.tables["metrics"] = metrics.trace_metrics(steps)
    out.tables["strategies"] = metrics.strategy_table_trace(steps)
    out.tables["speedup_curves"] = metrics.speedup_curves_trace(steps)
    out.figures["speedup"] = plots.to_png(plots.speedup_figure(out.tables["speedup_curves"]))
    out.figures["strategies"] = plots.to_png(plots.strategy_figure(out.tables["strategies"]))
    lip = lipschitz_table(steps, kernels, rng=rng)
    if lip.empty:
        out.notes.append("too few (parent, strategy) samples for Lipschitz estimates")
        lipschitz = None
    else:
        out.tables["lipschitz"] = lip
        out.figures["lipschitz"] = plots.to_png(plots.lipschitz_figure(lip))
        lipschitz = float(np.nanmax(lip["lipschitz"]))
    cover, curves = covering_tables(steps, kernels, rng=rng, lipschitz=lipschitz)
    if cover.empty:
        out.notes.append("no task has enough correct kernels with φ for covering numbers")
    else:
        out.tables["covering"] = cover
        out.tables["covering_curves"] = curves
        out.figures["covering"] = plots.to_png(plots.covering_figure(curves))
    per_task, summary = validity_tables(steps, kernels, rng=rng)
    if summary.empty:
        out.notes.append("no task has enough parents with φ for cluster validity")
    else:
        out.tables["cluster_validity"] = summary
        out.tables["cluster_validity_per_task"] = per_task
        out.figures["cluster_validity"] = plots.to_png(plots.validity_figure(summary))
    return out


def analyze_input(inp: AnalysisInput, *, seed: int = 0, n_boot: int = 1000) -> Analysis:
    """Tables and figures for a loaded input (deterministic given ``seed``)."""
    rng = np.random.default_rng(seed)
    if inp.kind == TRACE:
        return _trace_analysis(inp, rng)
    return _results_analysis(inp, rng, n_boot)


def markdown_table(frame: pd.DataFrame, *, max_rows: int = 60, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table (first ``max_rows`` rows, floats to ``digits``)."""
    def cell(value: Any) -> str:
        if isinstance(value, float | np.floating):
            return "" if np.isnan(value) else f"{value:.{digits}g}"
        return str(value).replace("|", "\\|")

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |"
            for row in frame.head(max_rows).itertuples(index=False)]
    more = [f"\n({len(frame) - max_rows} more rows in the CSV)"] if len(frame) > max_rows else []
    return "\n".join([head, rule, *body, *more])


#: long tables that go to CSV only (their Markdown would be pages of numbers)
CSV_ONLY = {"regret_bands", "speedup_curves", "covering_curves", "cluster_validity_per_task",
            "pool_runs", "task_speedups", "sim2real_curves"}


def write_analysis(analysis: Analysis, out_dir: str | Path) -> list[Path]:
    """Write CSVs, tables.md and PNGs under ``out_dir`` (created); returns the files written."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    sections = [f"# kernelband analysis of `{analysis.source}` ({analysis.kind})\n"]
    for name, table in analysis.tables.items():
        path = root / f"{name}.csv"
        table.to_csv(path, index=False)
        written.append(path)
        if name not in CSV_ONLY:
            sections.append(f"## {name}\n\n{markdown_table(table)}\n")
    if analysis.notes:
        sections.append("## notes\n\n" + "\n".join(f"- {n}" for n in analysis.notes) + "\n")
    md = root / "tables.md"
    md.write_text("\n".join(sections), encoding="utf-8")
    written.append(md)
    for name, png in analysis.figures.items():
        path = root / f"{name}.png"
        path.write_bytes(png)
        written.append(path)
    return written


def run_analyze(input_path: str | Path, out_dir: str | Path, *, seed: int = 0,
                n_boot: int = 1000) -> Analysis:
    """Load ``input_path``, analyse it and write the results under ``out_dir``."""
    analysis = analyze_input(load_input(input_path), seed=seed, n_boot=n_boot)
    write_analysis(analysis, out_dir)
    return analysis
