"""One self-contained HTML report: plots embedded as base64 PNG, tables, run context, and a short
"how to read this" per section. No external assets (fonts, scripts, styles) are referenced.

Order: the verdict first (for replay results: the question, the ranking plot and the paired
differences against the best policy; analysis.report_verdict), where the results hold them the
component ablations (each part of KernelBand v2 against full v2; analysis.components), then
sim-to-real and the paper's metrics, the other sections, the notes, and the run's raw
parameters last, folded. A table column that is empty for every row is left out, and the page
names it.

``render_report(analysis)`` returns the HTML text (pure); ``run_report`` loads, analyses and
writes it. The page template is package data (``analysis/templates/report.html``).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from string import Template

import numpy as np
import pandas as pd

from analysis.components import components_html
from analysis.inputs import load_input
from analysis.pipeline import Analysis, analyze_input, empty_columns
from analysis.report_verdict import params_html, verdict_html
from analysis.verdict import regret_verdicts

#: section id -> (title, how to read it, figures, tables)
SECTIONS: list[tuple[str, str, str, list[str], list[str]]] = [
    ("sim2real", "Sim-to-real",
     "Does replay predict a real run? The policy of a live run (the policy trace) was replayed "
     "on the exploration trace for many seeds; per task, the black line is the real run's best "
     "speedup over the reference so far, the shaded band the 10-90 % range of replays and the "
     "coloured line their median. <b>predicted / real</b> at the last step above 1 means replay "
     "is optimistic; <b>mean abs log gap</b> averages |log(predicted median / real)| over steps "
     "(0.1 ≈ 10 %); <b>in band</b> is the share of steps where the real curve lies inside the "
     "band. One real run is one draw: a faithful fitted replay holds it inside its band most "
     "of the time; the tape band is narrow by construction (every seed reads a tape's "
     "outcomes in the same order), so judge the tape by its gap. On planted synthetic worlds a "
     "faithful replay's mean abs log gap is about 0.1 and a wrong one's about 0.3 "
     "(docs/benchmarks.md).",
     ["sim2real"], ["sim2real"]),
    ("metrics", "Paper-style metrics",
     "One row per policy. <b>Correct %</b>: runs with at least one correct kernel (for "
     "replays: at least one successful attempt; k0 does not count). <b>Fast@1</b>: "
     "runs whose best correct kernel beats the reference (for replays: beats the task's starting "
     "kernel k0). <b>Geomean speedup</b>: geometric mean of each run's best speedup. Higher is "
     "better in all three; compare policies at equal attempts and cost. For KernelBench tasks, "
     "<b>fast_p</b> per level: the percent of a level's problems whose best correct kernel is "
     "more than p times faster than eager PyTorch (and than torch.compile, where its times "
     "are known); fast_0 is the percent with a correct kernel.",
     [], ["metrics", "fast_p"]),
    ("task_speedups", "Per-task best speedup in replay",
     "For each policy and replay environment (rows) and task (columns): the geometric mean over "
     "seeds of the best speedup over the task's starting kernel k0 at the last step, with its "
     "95 % interval (normal approximation on log speedups). On a tape the seeds vary the "
     "policy's and the tape draws' randomness over one recorded dataset: the interval does not "
     "include the variability of recording the trace again. Per-seed quantiles are in "
     "task_speedups.csv.",
     [], ["task_speedups_wide"]),
    ("regret", "Regret",
     "The regret here is replay's <b>pseudo-regret</b>: at each step, the mean reward of the "
     "best (kernel, strategy) arm of the current pool minus that of the arm played, summed "
     "over steps (arm means: the recorded tapes' averages on a tape, the fitted model's on "
     "fitted, the planted truth on synthetic); lower is better. Bands are 95 % bootstrap "
     "intervals of the mean over independent units (seeds, or tasks for tape replays). On "
     "log-log axes a straight line of slope b means R(t) ∝ t^b: b ≈ 1 is linear (no "
     "learning), 0.5 is the minimax rate, and a curve that keeps bending down is logarithmic. "
     "<b>A growth rate is named only where the horizon can tell rates apart</b>: T at least "
     "10 pulls per (cluster, strategy) arm (T ≥ 180 for 18 arms), a comparator that does not "
     "drift, and a slope interval entirely above or below 0.9; otherwise the verdict is "
     "<i>inconclusive</i>, with the reason. In a growing pool the best arm improves as better "
     "kernels join, so per-step regret can rise with t: that, not a policy that learns "
     "nothing, is what a slope above 1 reflects. The dashed line is v1's stated bound "
     "K·|S|·√(8 T ln T); being far below it is expected (the bound is loose), crossing it "
     "would contradict the theorem. The normalised curves divide R(t) by √(t ln t) and by "
     "ln t: they go flat under those rates.",
     ["regret", "regret_normalised", "regret_slopes"], ["regret_slopes"]),
    ("pool", "Clusters versus pool size",
     "The paper's central claim: with K clusters fixed, clustered KernelBand's regret should not "
     "grow with the number of kernels n (β ≈ 0 in R(T) ∝ n^β), while a flat bandit over "
     "(kernel, strategy) pairs pays for every kernel (β > 0) until n·|S| exceeds what T can "
     "explore, where it saturates (so its β depends on T). Intervals resample seeds and pool "
     "sizes, so the scatter of each size's instance around the fitted line counts.",
     ["pool"], ["pool_beta", "pool_points"]),
    ("speedup", "Speedup over iterations and cost",
     "Geometric mean over runs of the best speedup found so far, against attempts (left; the "
     "paper's K-sweep figure) and against cumulative API cost (right). A curve above and to the "
     "left is a better policy.",
     ["speedup"], []),
    ("strategies", "Strategies",
     "Per strategy: the share of attempts that produced a correct kernel, and the share of runs "
     "whose best kernel came from that strategy.",
     ["strategies"], ["strategies"]),
    ("lipschitz", "Lipschitz constant in φ-space",
     "How fast a strategy's mean reward can change between kernels per unit of (z-scored) φ "
     "distance. The corrected maximum subtracts 3 noise standard errors per pair; the "
     "extreme-value estimate extrapolates the top of the slope distribution. Small L means "
     "kernels close in φ respond alike, which is what clustering on φ relies on.",
     ["lipschitz"], ["lipschitz"]),
    ("covering", "Covering and zooming dimension",
     "N(ε): how many balls of radius ε cover the correct kernels in z-scored φ-space; the slope "
     "of log N against log 1/ε is the covering dimension (filled markers: the radii used). The "
     "zooming dimension does the same for near-optimal kernels only; lower dimensions mean an "
     "easier bandit problem. Small pools give rough estimates.",
     ["covering"], ["covering"]),
    ("validity", "Cluster validity (K = 1..8)",
     "For each strategy, does its reward differ more between φ-clusters than within them? η² is "
     "the share of reward variance explained by cluster; the p-value (one-way ANOVA F test, "
     "combined over tasks with Fisher's method) is small when clusters matter. The silhouette "
     "measures how well separated the clusters are in φ itself (1 = perfectly, 0 = not at all).",
     ["cluster_validity"], ["cluster_validity"]),
]


#: figure name -> caption
CAPTIONS: dict[str, str] = {
    "regret": "Cumulative pseudo-regret per policy (log-log), with v1's bound dashed.",
    "regret_normalised": "Regret divided by √(t ln t) (left) and by ln t (right).",
    "regret_slopes": "Fitted log-log slope of R(t) per policy, with its 95 % bootstrap interval.",
    "pool": "Regret at fixed T against pool size n, with the fitted power law n^β per policy.",
    "speedup": "Best speedup so far against attempts and against API cost.",
    "sim2real": "Per task: the real run's best speedup so far (black) against replay's median "
                "and 10-90 % band over seeds, per environment.",
    "strategies": "Per-strategy success rate and share of best kernels.",
    "lipschitz": "Per-strategy Lipschitz estimates in z-scored φ-space.",
    "covering": "Covering numbers N(ε) per task; filled markers were used in the fit.",
    "cluster_validity": "Reward variance explained by clusters (left) and φ silhouette "
                        "(right) against K.",
}


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(alt)}</figcaption></figure>")


#: tables whose every row belongs on the page (one row per policy and environment)
_ALL_ROWS = {"task_speedups_wide": 400}


def _table(frame: pd.DataFrame, max_rows: int = 40) -> str:
    # a column with nothing in it says nothing: leave it out and say so
    empty = empty_columns(frame)
    shown = frame.drop(columns=empty).head(max_rows)
    text = shown.to_html(index=False, border=0, na_rep="", float_format=lambda v: f"{v:.4g}",
                         escape=True)
    more = (f"<p class='notes'>First {max_rows} of {len(frame)} rows; all in the CSV written "
            f"by <code>kernelband analyze</code>.</p>" if len(frame) > max_rows else "")
    if empty:
        more += (f"<p class='notes'>Left out, empty for every row here: "
                 f"{html.escape(', '.join(empty))}.</p>")
    return f"<div class='tablewrap'>{text}</div>{more}"


def _verdict(section: str, tables: dict[str, pd.DataFrame]) -> str:
    """One plain sentence summarising a section's evidence (empty where nothing is computed)."""
    parts: list[str] = []
    if section == "regret" and "regret_slopes" in tables:
        parts += regret_verdicts(tables["regret_slopes"])
    elif section == "pool" and "pool_beta" in tables:
        for row in tables["pool_beta"].itertuples():
            parts.append(f"{row.policy}: β = {row.beta:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}]")
    elif section == "sim2real" and "sim2real" in tables:
        summary = tables["sim2real"].query("task_id == 'geomean'")
        for row in summary.itertuples():
            parts.append(f"{row.env}: predicted / real at the last step {row.final_ratio:.2f} "
                         f"(geometric mean over tasks), mean |log gap| "
                         f"{row.mean_abs_log_gap:.3f}, real curve inside the 10-90 % band on "
                         f"{100 * row.in_band_frac:.0f} % of steps")
    elif section == "lipschitz" and "lipschitz" in tables:
        lip = tables["lipschitz"]
        top = lip.loc[lip["lipschitz"].idxmax()]
        parts.append(f"largest L = {top['lipschitz']:.3g} ({top['strategy']})")
    elif section == "covering" and "covering" in tables:
        dims = tables["covering"]["covering_dim"]
        parts.append(f"median covering dimension {np.nanmedian(dims):.2f} over {len(dims)} task(s)")
    elif section == "validity" and "cluster_validity" in tables:
        at3 = tables["cluster_validity"].query("k == 3")
        sig = int((at3["combined_p"] < 0.05).sum())
        parts.append(f"at K = 3, {sig} of {len(at3)} strategies have rewards that differ "
                     f"significantly between clusters (p < 0.05)")
    if not parts:
        return ""
    return "<ul class='verdict'>" + "".join(f"<li>{html.escape(p)}</li>" for p in parts) + "</ul>"


def _blocks(analysis: Analysis, prefix: str = "") -> tuple[list[str], list[str]]:
    """One analysis's sections (verdict, the SECTIONS that have content, notes, parameters)
    and their nav links, with element ids prefixed by `prefix` (several datasets on a page)."""
    blocks, nav = [], []
    verdict = verdict_html(analysis.question, analysis.verdict, analysis.tables.get("verdict"),
                           analysis.figures.get("verdict"))
    if verdict:
        blocks.append(verdict.replace("id='verdict", f"id='{prefix}verdict"))
        nav.append(f"<a href='#{prefix}verdict'>Verdict</a>")
    components = components_html(analysis.tables.get("components"), prefix)
    if components:  # why the verdict came out so: each part of KernelBand against full v2
        blocks.append(components)
        nav.append(f"<a href='#{prefix}components'>Components</a>")
    for key, heading, howto, figures, tables in SECTIONS:
        figs = [f for f in figures if f in analysis.figures]
        tabs = [t for t in tables if t in analysis.tables]
        if not figs and not tabs:
            continue
        body = [f"<section id='{prefix}{key}'><h2>{html.escape(heading)}</h2>",
                f"<div class='howto'><b>How to read this:</b> {howto}</div>",
                _verdict(key, analysis.tables)]
        body += [_img(analysis.figures[f], CAPTIONS.get(f, f.replace("_", " "))) for f in figs]
        for t in tabs:
            body.append(f"<h3>{html.escape(t.replace('_', ' '))}</h3>"
                        f"{_table(analysis.tables[t], _ALL_ROWS.get(t, 40))}")
        body.append("</section>")
        blocks.append("".join(body))
        nav.append(f"<a href='#{prefix}{key}'>{html.escape(heading)}</a>")
    if analysis.notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in analysis.notes)
        blocks.append(f"<section id='{prefix}notes'><h2>Notes</h2><ul class='notes'>{items}"
                      "</ul></section>")
        nav.append(f"<a href='#{prefix}notes'>Notes</a>")
    context = {"input": analysis.source, "input kind": analysis.kind, **analysis.context}
    blocks.append(params_html(context).replace("id='context'", f"id='{prefix}context'", 1))
    nav.append(f"<a href='#{prefix}context'>Run parameters</a>")
    return blocks, nav


def render_report(analysis: Analysis, *, title: str | None = None, heading: str | None = None,
                  parts: Sequence[tuple[str, str, Analysis]] = ()) -> str:
    """The report page for ``analysis`` as HTML text.

    Several datasets on one page: ``analysis`` comes first (under ``heading``, if given), then
    each of ``parts`` (key, heading, analysis) under its heading, its element ids prefixed by
    its key; the navigation bar links every dataset's sections.
    """
    blocks, nav = _blocks(analysis)
    if heading is not None:
        blocks.insert(0, f"<section id='dataset-main' class='dataset'><h1>"
                         f"{html.escape(heading)}</h1></section>")
        nav.insert(0, f"<b><a href='#dataset-main'>{html.escape(heading)}</a>:</b>")
    for key, part_heading, part in parts:
        more, links = _blocks(part, prefix=f"{key}-")
        blocks.append(f"<section id='dataset-{key}' class='dataset'><h1>"
                      f"{html.escape(part_heading)}</h1></section>")
        blocks += more
        nav.append(f"<br><b><a href='#dataset-{key}'>{html.escape(part_heading)}</a>:</b>")
        nav += links
    template = Template(
        resources.files("analysis").joinpath("templates/report.html").read_text(encoding="utf-8")
    )
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page_title = title or f"kernelband report: {Path(analysis.source).name}"
    return template.substitute(
        title=html.escape(page_title),
        subtitle=html.escape(f"{analysis.kind} · {analysis.source} · generated {now}"),
        nav=" ".join(nav),
        body="\n".join(blocks),
        footer="Generated by kernelband report (KernelBand, Ran et al., arXiv 2511.18868). "
               "Self-contained: every figure is embedded.",
    )


def run_report(input_path: str | Path | None, out_path: str | Path, *, seed: int = 0,
               n_boot: int = 1000, extra: Analysis | None = None) -> Path:
    """Analyse ``input_path`` and write the HTML report to ``out_path``; returns the path.

    ``extra`` (e.g. the cluster-versus-pool experiment) is merged in; with no input the report
    holds ``extra`` alone.
    """
    if input_path is None:
        if extra is None:
            raise ValueError("nothing to report: give an input or an experiment")
        analysis = extra
    else:
        analysis = analyze_input(load_input(input_path), seed=seed, n_boot=n_boot)
        if extra is not None:
            analysis.tables.update(extra.tables)
            analysis.figures.update(extra.figures)
            label = extra.source
            analysis.context.update({f"{label}: {k}": v for k, v in extra.context.items()})
            analysis.notes += extra.notes
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(analysis), encoding="utf-8")
    return out
