"""Component ablations: what each part of KernelBand v2 does to the best speedup it finds.

The ``components`` preset (`kbsim.replay.presets.COMPONENTS`) replays full KernelBand v2 beside
variants that change one part at a time (masks off; K = 1, no clustering; the arm chosen
uniformly among open arms; the parent rule ``fastest`` or ``speed`` instead of the authors'
headroom softmax) and the converse (greedy's parent, the fastest kernel, under a UCB over the
strategies), with greedy for reference. Per environment, each variant's **effect** is the
paired ratio of its geometric-mean best speedup over k0 to full v2's, on the same (task,
seed) runs, minus one, with the verdict's two-stage bootstrap interval (`analysis.verdict`:
tasks resampled, then seeds within each task; 95 % per comparison, not adjusted for the
number of variants). A positive effect means the variant finds faster kernels than full v2,
so the part it changes costs KernelBand that much on these traces; a negative one that the
part helps; an interval that includes 0 is no measurable effect.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import pandas as pd

from analysis.verdict import ENV_ORDER, final_runs_from_summary, pct, two_stage_bootstrap
from kbsim.replay.presets import COMPONENT_BASELINE, COMPONENTS

COMPONENT_COLUMNS: tuple[str, ...] = (
    "env", "policy", "change", "part", "n_tasks", "n_seeds", "geomean_speedup", "ci_low",
    "ci_high", "effect_pct", "effect_ci_low", "effect_ci_high", "measurable", "in_words",
)


def effect_words(change: str, part: str, effect: float, lo: float, hi: float,
                 level: int) -> str:
    """One sentence: ``the headroom parent rule costs 7.0 % [3.1 %, 11 %] (parent = the
    fastest member of the cluster finds faster kernels)``; effects in percent."""
    span = f"[{pct(lo)} %, {pct(hi)} %]"
    if lo > 0.0:
        return (f"{part} costs {pct(effect)} % {span}: with {change}, v2 finds faster kernels")
    if hi < 0.0:
        return (f"{part} helps: with {change}, v2 finds {pct(-effect)} % slower kernels "
                f"[{pct(-hi)} %, {pct(-lo)} %]")
    return (f"{part}: no measurable effect at {level} % (with {change}: "
            f"{'+' if effect >= 0 else ''}{pct(effect)} % {span})")


def _env_components(part: pd.DataFrame, env: str, rng: np.random.Generator, n_boot: int,
                    ci_level: float) -> pd.DataFrame:
    wide = part.pivot_table(index=["task_id", "seed"], columns="policy", values="best_speedup",
                            aggfunc="first")
    variants = [p for p in COMPONENTS if p in wide.columns and p != COMPONENT_BASELINE]
    if COMPONENT_BASELINE not in wide.columns or not variants:
        return pd.DataFrame(columns=list(COMPONENT_COLUMNS))
    wide = wide[[COMPONENT_BASELINE, *variants]].dropna(axis=0, how="any")
    seed_sets = [set(g.index.get_level_values("seed")) for _, g in wide.groupby(level="task_id")]
    common = sorted(set.intersection(*seed_sets)) if seed_sets else []
    wide = wide[wide.index.get_level_values("seed").isin(common)].sort_index()
    if wide.empty:
        return pd.DataFrame(columns=list(COMPONENT_COLUMNS))
    logs = np.log(wide.clip(lower=np.finfo(float).tiny))
    n_tasks = int(logs.index.get_level_values("task_id").nunique())
    n_seeds = len(common)
    plan = two_stage_bootstrap(n_tasks, n_seeds, n_boot=n_boot, rng=rng)
    alpha = (1 - ci_level) / 2
    level = round(100 * ci_level)

    def matrix(policy: str) -> np.ndarray:
        return logs[policy].to_numpy().reshape(n_tasks, n_seeds)

    base_boot = plan.means(matrix(COMPONENT_BASELINE))
    rows = []
    for policy in [COMPONENT_BASELINE, *variants]:
        change, what = COMPONENTS[policy]
        boot = plan.means(matrix(policy))
        lo, hi = np.exp(np.quantile(boot, [alpha, 1 - alpha]))
        point = float(np.exp(logs[policy].mean()))
        if policy == COMPONENT_BASELINE:
            effect, e_lo, e_hi, measurable = 0.0, 0.0, 0.0, False
            words = "full KernelBand v2: the baseline of this table"
        else:
            ratio = float(np.exp(logs[policy].mean() - logs[COMPONENT_BASELINE].mean()))
            r_lo, r_hi = np.exp(np.quantile(boot - base_boot, [alpha, 1 - alpha]))
            effect, e_lo, e_hi = 100 * (ratio - 1), 100 * (r_lo - 1), 100 * (r_hi - 1)
            measurable = bool(e_lo > 0.0 or e_hi < 0.0)
            words = effect_words(change, what, effect, e_lo, e_hi, level)
        rows.append({
            "env": env, "policy": policy, "change": change, "part": what,
            "n_tasks": n_tasks, "n_seeds": n_seeds, "geomean_speedup": point,
            "ci_low": float(lo), "ci_high": float(hi), "effect_pct": effect,
            "effect_ci_low": float(e_lo), "effect_ci_high": float(e_hi),
            "measurable": measurable, "in_words": words,
        })
    return pd.DataFrame(rows, columns=list(COMPONENT_COLUMNS))


def component_table(runs: pd.DataFrame, *, rng: np.random.Generator, n_boot: int = 2000,
                    ci_level: float = 0.95) -> pd.DataFrame:
    """Per environment, full KernelBand v2 and every component variant found in ``runs``
    (columns policy, env, task_id, seed, best_speedup: `analysis.verdict.final_runs`) with
    its effect against full v2 (see the module docstring). Empty when ``runs`` lacks full v2
    or every variant."""
    envs = [str(e) for e in runs["env"].unique()]
    order = [e for e in ENV_ORDER if e in envs] + sorted(e for e in envs if e not in ENV_ORDER)
    frames = [_env_components(runs[runs["env"] == env], env, rng, n_boot, ci_level)
              for env in order]
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=list(COMPONENT_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def component_table_from_summary(summary: pd.DataFrame, *, seed: int = 0,
                                 n_boot: int = 2000) -> pd.DataFrame:
    """`component_table` of a sweep's per-episode summary (its longest horizon)."""
    return component_table(final_runs_from_summary(summary), rng=np.random.default_rng(seed),
                           n_boot=n_boot)


def _effect(row: Any, baseline: str) -> str:
    """A variant's effect against full v2 with its interval, or `baseline` for full v2."""
    if row.policy == COMPONENT_BASELINE:
        return baseline
    return (f"{'+' if row.effect_pct >= 0 else ''}{pct(row.effect_pct)} % "
            f"[{pct(row.effect_ci_low)}, {pct(row.effect_ci_high)}]")


def component_text(table: pd.DataFrame) -> str:
    """The component table as text (what `kernelband replay --preset components` prints)."""
    lines = []
    for env, part in table.groupby("env", sort=False):
        first = part.iloc[0]
        lines.append(f"components [{env}]: each variant's geometric-mean best speedup over k0 "
                     f"against full kernelband-v2, paired on ({first['n_tasks']} task(s) × "
                     f"{first['n_seeds']} seed(s)), 95 % intervals:")
        for row in part.itertuples():
            effect = _effect(row, "baseline")
            lines.append(f"  {row.change:<44} {row.geomean_speedup:7.3f}× "
                         f"[{row.ci_low:.3f}, {row.ci_high:.3f}]  {effect}")
        for row in part.itertuples():
            if row.policy != COMPONENT_BASELINE:
                lines.append(f"  - {row.in_words}")
    return "\n".join(lines)


def component_markdown(table: pd.DataFrame) -> str:
    """The component table in Markdown, one table per environment, then the sentences."""
    out = []
    for env, part in table.groupby("env", sort=False):
        out += [f"**{env}** ({part.iloc[0]['n_tasks']} tasks × {part.iloc[0]['n_seeds']} "
                "seeds)", "",
                "| variant (one change to full v2) | policy spec | geomean best speedup "
                "[95 %] | effect vs full v2 [95 %] |", "| --- | --- | --- | --- |"]
        for row in part.itertuples():
            effect = _effect(row, "—")
            out.append(f"| {row.change} | `{row.policy}` | {row.geomean_speedup:.3f}× "
                       f"[{row.ci_low:.3f}, {row.ci_high:.3f}] | {effect} |")
        out.append("")
        out += [f"- {row.in_words}." for row in part.itertuples()
                if row.policy != COMPONENT_BASELINE]
        out.append("")
    return "\n".join(out)


COMPONENTS_HOWTO = (
    "Full KernelBand v2 beside variants that change one part at a time, replayed on the same "
    "tasks and seeds (preset <code>components</code>). <b>effect</b> is each variant's "
    "geometric-mean best speedup over k0 divided by full v2's, paired on (task, seed), minus "
    "one, with a 95 % two-stage bootstrap interval (tasks, then seeds). A positive effect: "
    "the variant finds faster kernels, so the part it changes costs KernelBand that much on "
    "this data; negative: the part helps; an interval across 0: no measurable effect. "
    "Greedy (always the fastest kernel, uniform strategy) is shown for reference."
)


def components_html(table: pd.DataFrame | None, prefix: str = "") -> str:
    """The report's component section (empty string without a table)."""
    if table is None or table.empty:
        return ""
    envs = list(dict.fromkeys(table["env"]))
    said = "".join(f"<li>[{html.escape(str(r.env))}] {html.escape(r.in_words)}</li>"
                   for r in table.itertuples() if r.policy != COMPONENT_BASELINE)
    head = "<th>variant (one change to full v2)</th><th>policy</th>" + "".join(
        f"<th>{html.escape(env)}: speedup [95 %]</th><th>{html.escape(env)}: effect vs v2</th>"
        for env in envs)
    by_key = {(r.env, r.policy): r for r in table.itertuples()}
    body = []
    for policy in dict.fromkeys(table["policy"]):
        first = table[table["policy"] == policy].iloc[0]
        cells = [f"<td>{html.escape(first['change'])}</td><td><code>{html.escape(policy)}"
                 "</code></td>"]
        for env in envs:
            row = by_key.get((env, policy))
            if row is None:
                cells.append("<td>not run</td><td>not run</td>")
                continue
            if policy == COMPONENT_BASELINE:
                effect, css = "baseline", "best"
            else:
                effect = (f"{'+' if row.effect_pct >= 0 else ''}{pct(row.effect_pct)} % "
                          f"[{pct(row.effect_ci_low)}, {pct(row.effect_ci_high)}]")
                css = "behind" if row.measurable else "tied"
            cells.append(f"<td>{row.geomean_speedup:.3g}× [{row.ci_low:.3g}, "
                         f"{row.ci_high:.3g}]</td><td class='{css}'>{html.escape(effect)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f"<section id='{prefix}components'><h2>What each part of KernelBand does</h2>"
            f"<ul class='verdict'>{said}</ul><div class='tablewrap'>"
            f"<table id='{prefix}components-table' class='verdict-table'><thead><tr>{head}"
            f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
            f"<details class='howto'><summary><b>How to read this</b></summary>"
            f"{COMPONENTS_HOWTO}</details></section>")
