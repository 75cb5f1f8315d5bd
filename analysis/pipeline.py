"""`kernelband analyze` as a library: input → tables and figures → files.

``analyze_input`` is pure (an AnalysisInput in, an Analysis of DataFrames and PNG bytes out);
``write_analysis`` writes ``<name>.csv`` per table, ``tables.md`` with every table, and
``<name>.png`` per figure; ``run_analyze`` does load + analyze + write.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import metrics, plots
from analysis.components import component_table
from analysis.fast_p import fast_p_table
from analysis.inputs import TRACE, AnalysisInput, load_input
from analysis.plots_verdict import verdict_figure
from analysis.regret import UnitCurves, regret_bands, unit_curves
from analysis.slopes import classify_growth, fit_slope, growth_verdict, v1_bound
from analysis.task_speedups import task_speedup_table, task_speedup_wide
from analysis.trace_features import covering_tables, lipschitz_table, validity_tables
from analysis.verdict import (
    final_runs,
    final_runs_from_summary,
    question_text,
    regret_verdicts,
    span_text,
    verdict_sentences,
    verdict_table,
)
from kbsim.strategies import N_STRATEGIES
from kbsim.trace.schema import K0_STRATEGY


@dataclass
class Analysis:
    """Everything analyze computed: named tables, named PNG figures, context and notes."""

    kind: str
    source: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, bytes] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: what the verdict answers (analysis.verdict.question_text's keys) and its sentences
    question: dict[str, Any] = field(default_factory=dict)
    verdict: list[str] = field(default_factory=list)


def clusters_of(policy: str, default: int = 3) -> int:
    """K of a policy spec such as ``kernelband-v2:K=5`` (``default`` when not given)."""
    match = re.search(r"(?:^|[:,])K=(\d+)", policy)
    return int(match.group(1)) if match else default


def _comparator_drift(part: pd.DataFrame, env: str, curves: UnitCurves,
                      t_min: float) -> tuple[float, float]:
    """Rise of the best arm's mean over [t_min, T] and the mean per-step regret there."""
    regret = curves.values.mean(axis=0)
    t = curves.t
    start = int(np.searchsorted(t, t_min))
    span = float(t[-1] - t[start])
    per_step = float(regret[-1] - regret[start]) / span if span > 0 else float("nan")
    best = part[np.isfinite(part["best_mean"].to_numpy(dtype=np.float64, na_value=np.nan))]
    if best.empty:
        return 0.0, per_step
    comp = unit_curves(best, value="best_mean", env=env)
    mean_best = comp.values.mean(axis=0)
    j0 = min(int(np.searchsorted(comp.t, t_min)), len(mean_best) - 1)
    return float(mean_best[-1] - mean_best[j0]), per_step


def slope_table(
    results: pd.DataFrame, *, rng: np.random.Generator, n_boot: int
) -> tuple[pd.DataFrame, list[str]]:
    """Per (policy, env): log-log slope (raw, and with sqrt(ln t) divided out), the growth
    verdict (``growth``: a rate only where the horizon can tell rates apart, else
    "inconclusive"; ``growth_reason`` says why), the best-fitting shape (``growth_fit``) and
    the v1 bound."""
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
        n_clusters = clusters_of(str(policy))
        n_arms = n_clusters * N_STRATEGIES
        rise, per_step = _comparator_drift(part, str(env), curves, raw.t_min)
        verdict = growth_verdict(raw, growth, horizon=t_end, n_arms=n_arms,
                                 comparator_rise=rise, regret_per_step=per_step)
        bound = float(v1_bound(np.array([t_end]), n_clusters, N_STRATEGIES)[0])
        rows.append({
            "policy": policy, "env": env, "unit": curves.unit, "n_units": curves.n_units,
            "t_min": raw.t_min, "t_max": raw.t_max, "slope": raw.slope, "ci_low": raw.ci_low,
            "ci_high": raw.ci_high, "slope_sqrt_ln_removed": corrected.slope,
            "ci_low_sqrt_ln_removed": corrected.ci_low,
            "ci_high_sqrt_ln_removed": corrected.ci_high, "growth": verdict.kind,
            "growth_reason": verdict.reason, "growth_cause": verdict.cause,
            "growth_fit": growth.kind, "n_arms": n_arms, "pulls_per_arm": t_end / n_arms,
            "comparator_rise": rise, "regret_per_step": per_step,
            "comparator_drifts": verdict.drifts,
            "log_coef": growth.log_coef, "regret_at_T": r_end, "v1_bound_at_T": bound,
            "regret_over_bound": r_end / bound if bound > 0 else float("nan"),
        })
    return pd.DataFrame(rows), notes


def _manifest(source: str) -> dict[str, Any]:
    """The manifest of the trace a replay read, where that path still holds one."""
    path = Path(source) / "manifest.json"
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def trace_question(manifest: dict[str, Any]) -> dict[str, Any]:
    """GPU and proposer of a trace manifest, as question keys (absent ones left out)."""
    hardware = manifest.get("hardware") or {}
    proposer = manifest.get("proposer") or {}
    out: dict[str, Any] = {}
    gpu = hardware.get("gpu_name") or hardware.get("gpu")
    if gpu:
        out["gpu"] = str(gpu)
    if proposer.get("kind"):
        model = proposer.get("model")
        out["proposer"] = f"{proposer['kind']}{f' ({model})' if model else ''}"
    return out


def _shown_path(path: str) -> str:
    """A trace path as a reader should see it: relative to the working folder when inside it
    (the report of `kernelband demo` says `traces/explore-h200`), else its folder name, so a
    report names no machine's absolute paths."""
    p = Path(path)
    if not p.is_absolute():
        return path
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return p.name


def results_question(res: pd.DataFrame, params: dict[str, Any]) -> dict[str, Any]:
    """What a replay compared: policies, environments, trace, GPU, proposer, tasks, T, seeds."""
    replay = params.get("_replay") or {}
    present = {str(e) for e in res["env"].unique()}  # not set(column): millions of rows
    question: dict[str, Any] = {
        "policies": list(dict.fromkeys(replay.get("policies") or sorted(res["policy"].unique()))),
        "envs": [e for e in ("tape", "fitted", "synthetic") if e in present]
                + sorted(present - {"tape", "fitted", "synthetic"}),
        "tasks": int(res["task_id"].nunique()),
        "steps": int(res["step"].max() - res["step"].min() + 1),
        "seeds": span_text(sorted(int(s) for s in res["seed"].unique())),
    }
    envs = replay.get("envs", [])
    instances = sorted({str(e["source"]) for e in envs
                        if e.get("source") and e.get("env") == "synthetic"})
    if instances:
        question["instance"] = ", ".join(instances)
    sources = sorted({str(e["source"]) for e in envs
                      if e.get("source") and e.get("env") != "synthetic"})
    if sources:
        question["trace"] = ", ".join(_shown_path(s) for s in sources)
        question.update(trace_question(_manifest(sources[0])))
    return question


def _results_analysis(inp: AnalysisInput, rng: np.random.Generator, n_boot: int,
                      seed: int = 0) -> Analysis:
    res = inp.results
    assert res is not None
    out = Analysis(kind=inp.kind, source=str(inp.path))
    out.context = {"replay parameters": inp.params, "policies": sorted(res["policy"].unique()),
                   "environments": sorted(res["env"].unique()),
                   "tasks": int(res["task_id"].nunique()),
                   "seeds": span_text(sorted(int(s) for s in res["seed"].unique())),
                   "steps": int(res["step"].max() - res["step"].min() + 1)}
    out.question = results_question(res, inp.params)
    stopped_at_once: list[str] = []
    if inp.summary is not None and not inp.summary.empty:
        # a run that stopped before its first step (no applicable (parent, strategy) pair:
        # DESIGN.md, not-applicable proposals) has no step rows but is a run all the same, its
        # best kernel k0: the per-episode summary holds every run, so the paired comparisons
        # read their final values from it
        runs = final_runs_from_summary(inp.summary)
        longest = inp.summary[inp.summary["horizon"] == inp.summary["horizon"].max()]
        for env, part in longest[longest["steps_run"] == 0].groupby("env", sort=True):
            stopped_at_once.append(
                f"{env}: {len(part)} run(s) stopped before their first step, nothing applicable "
                f"to k0 (most on {part['task_id'].value_counts().index[0]}); the verdict and "
                "the component table count them at k0's speedup")
    else:
        runs = final_runs(res)
    verdict, notes = verdict_table(runs, rng=rng, n_boot=max(n_boot, 200))
    notes = stopped_at_once + notes
    out.tables["verdict"] = verdict
    out.verdict = verdict_sentences(verdict)
    if not verdict.empty:
        out.figures["verdict"] = plots.to_png(verdict_figure(verdict))
    # full v2 beside variants of the components preset: each part's effect (its own random
    # stream, so the sections after it draw what they drew before)
    components = component_table(runs, rng=np.random.default_rng([seed, 1]),
                                 n_boot=max(n_boot, 200))
    if not components.empty:
        out.tables["components"] = components
    out.notes += notes
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
    # the policy's attempts: a k0 step (k0 written by the LLM proposer, NOTE D100) is none
    steps = steps[steps["strategy"] != K0_STRATEGY]
    out.tables["metrics"] = metrics.trace_metrics(steps)
    # torch.compile's time per task, as the live run measured it (the manifests' compile_ms)
    compile_ms: dict[str, float] = {}
    for one in inp.manifests or ():
        compile_ms.update(one.get("compile_ms") or {})
    fast = fast_p_table(steps, compile_ms or None)  # KernelBench tasks only
    if not fast.empty:
        out.tables["fast_p"] = fast
        if not compile_ms:
            out.notes.append("fast_p against torch.compile needs its time per task "
                             "(the manifest's compile_ms), which this trace does not record "
                             "(a run with --no-compile-timing: resume it without that flag "
                             "to time it): those columns are empty")
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
    return _results_analysis(inp, rng, n_boot, seed=seed)


def empty_columns(frame: pd.DataFrame) -> list[str]:
    """Columns with no value in any row (all null, NaN or blank)."""
    empty = []
    for name in frame.columns:
        values = frame[name]
        blank = values.isna() | values.astype(str).str.strip().eq("")
        if len(frame) and bool(blank.all()):
            empty.append(str(name))
    return empty


def markdown_table(frame: pd.DataFrame, *, max_rows: int = 60, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table (first ``max_rows`` rows, floats to ``digits``)."""
    def cell(value: Any) -> str:
        if isinstance(value, float | np.floating):
            return "" if np.isnan(value) else f"{value:.{digits}g}"
        return str(value).replace("|", "\\|")

    empty = empty_columns(frame)  # a column with nothing in it says nothing
    frame = frame.drop(columns=empty)
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |"
            for row in frame.head(max_rows).itertuples(index=False)]
    more = [f"\n({len(frame) - max_rows} more rows in the CSV)"] if len(frame) > max_rows else []
    if empty:
        more.append(f"\n(left out, empty for every row: {', '.join(empty)})")
    return "\n".join([head, rule, *body, *more])


def verdict_markdown(analysis: Analysis) -> str:
    """The verdict section of tables.md: the question, the sentences, the ranking table."""
    lines = ["## Verdict", ""]
    if analysis.question:
        lines += [question_text(analysis.question), ""]
    lines += [f"- {s}" for s in analysis.verdict]
    slopes = analysis.tables.get("regret_slopes")
    if slopes is not None and not slopes.empty:
        lines += ["", "Regret growth (pseudo-regret against the best arm of the current pool; "
                  "a rate is named only where the horizon can tell rates apart, see "
                  "analysis/slopes.py):", ""]
        lines += [f"- {s}" for s in regret_verdicts(slopes)]
    table = analysis.tables.get("verdict")
    if table is not None and not table.empty:
        view = table[["env", "rank", "policy", "geomean_speedup", "ci_low", "ci_high",
                      "in_words"]]
        lines += ["", "Geometric-mean best speedup over k0 at the last step, 95 % two-stage "
                  "bootstrap intervals (tasks, then seeds); ratios to the best are paired over "
                  "(task, seed). All columns in verdict.csv.", "",
                  markdown_table(view, max_rows=200)]
    return "\n".join(lines) + "\n"


#: long tables that go to CSV only (their Markdown would be pages of numbers)
CSV_ONLY = {"regret_bands", "speedup_curves", "covering_curves", "cluster_validity_per_task",
            "pool_runs", "task_speedups", "sim2real_curves"}


def write_analysis(analysis: Analysis, out_dir: str | Path) -> list[Path]:
    """Write CSVs, tables.md and PNGs under ``out_dir`` (created); returns the files written."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    sections = [f"# kernelband analysis of `{analysis.source}` ({analysis.kind})\n"]
    if analysis.verdict:
        sections.append(verdict_markdown(analysis))
    for name, table in analysis.tables.items():
        path = root / f"{name}.csv"
        table.to_csv(path, index=False)
        written.append(path)
        if name not in CSV_ONLY and name != "verdict":
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
