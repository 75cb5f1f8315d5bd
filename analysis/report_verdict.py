"""The report's opening section (the verdict) and its closing one (run parameters, folded).

``verdict_html`` renders: the question in one paragraph, the verdict in sentences, and side by
side the dot-and-whisker figure and the ranking table (paired ratios to the best policy, in
words). ``params_html`` renders the raw run parameters as readable rows inside ``<details>``:
lists of consecutive integers become ranges, long lists their first items and a count.
"""

from __future__ import annotations

import base64
import html
from typing import Any

import numpy as np
import pandas as pd

from analysis.verdict import pct, question_text, span_text

VERDICT_HOWTO = (
    "Each run (policy × task × seed) ends with the best kernel it found; its speedup over the "
    "task's starting kernel k0 is averaged geometrically over tasks and seeds. Intervals are "
    "95 % two-stage bootstrap intervals (tasks resampled, then seeds within each task). The "
    "<b>vs best</b> column pairs each policy with the best one on the same (task, seed) "
    "runs: the per-policy intervals overlap because tasks differ a lot, the paired ones "
    "remove that spread. Grey: not distinguishable from the best at 95 % (per comparison, "
    "not adjusted for the number of policies)."
)


def _cell_vs_best(row: pd.Series) -> tuple[str, str]:
    """Text and CSS class of one policy's 'vs best' cell."""
    if row["policy"] == row["best_policy"]:
        return "best", "best"
    behind = 100 * (1 - row["ratio_to_best"])
    lo, hi = 100 * (1 - row["ratio_ci_high"]), 100 * (1 - row["ratio_ci_low"])
    text = f"{pct(behind)} % behind [{pct(lo)}, {pct(hi)}]"
    return text, "behind" if row["distinguishable"] else "tied"


def verdict_table_html(table: pd.DataFrame) -> str:
    """One row per policy (ordered by the first environment), per environment its geometric
    mean [interval] and its paired ratio to that environment's best policy."""
    envs = list(dict.fromkeys(table["env"]))
    order = list(table[table["env"] == envs[0]].sort_values("rank")["policy"])
    order += [p for p in dict.fromkeys(table["policy"]) if p not in order]
    by_key = {(r["env"], r["policy"]): r for _, r in table.iterrows()}
    head = "<th>#</th><th>policy</th>" + "".join(
        f"<th>{html.escape(str(env))}: speedup [95 %]</th>"
        f"<th>{html.escape(str(env))}: vs best "
        f"({html.escape(str(table[table['env'] == env]['best_policy'].iloc[0]))})</th>"
        for env in envs)
    rows = []
    for i, policy in enumerate(order, start=1):
        cells = [f"<td>{i}</td><td>{html.escape(str(policy))}</td>"]
        for env in envs:
            row = by_key.get((env, policy))
            if row is None:
                cells.append("<td>not run</td><td>not run</td>")
                continue
            text, css = _cell_vs_best(row)
            cells.append(f"<td>{row['geomean_speedup']:.3g}× [{row['ci_low']:.3g}, "
                         f"{row['ci_high']:.3g}]</td><td class='{css}'>{html.escape(text)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (f"<table id='verdict-table' class='verdict-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def verdict_html(question: dict[str, Any], sentences: list[str], table: pd.DataFrame | None,
                 figure: bytes | None) -> str:
    """The verdict section (empty string when there is no verdict to give)."""
    if table is None or table.empty:
        return ""
    said = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    image = ""
    if figure is not None:
        data = base64.b64encode(figure).decode("ascii")
        image = (f"<figure id='verdict-figure'><img alt='Geometric-mean best speedup per "
                 f"policy with 95 % intervals' src='data:image/png;base64,{data}'>"
                 f"<figcaption>Geometric-mean best speedup over k0 at the last step, 95 % "
                 f"intervals, best at the top.</figcaption></figure>")
    return (
        "<section id='verdict'><h2>Verdict</h2>"
        f"<p class='question'>{html.escape(question_text(question))}</p>"
        f"<ul class='verdict'>{said}</ul>"
        f"<div class='verdict-grid'>{image}<div class='tablewrap'>"
        f"{verdict_table_html(table)}</div></div>"
        f"<details class='howto'><summary><b>How to read this</b></summary>{VERDICT_HOWTO}"
        "</details></section>"
    )


def readable(value: Any) -> str:
    """A parameter value as a short readable string (ranges and counts for long lists)."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {readable(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple | np.ndarray):
        items = list(value)
        if items and all(isinstance(v, dict) for v in items):
            # a value the previous item already showed (every task again) is not repeated
            shown = [readable({k: ("same as above" if i and items[i - 1].get(k) == v
                                   and isinstance(v, list | dict) else v)
                               for k, v in item.items()}) for i, item in enumerate(items)]
            return " | ".join(shown)
        if items and all(isinstance(v, str) for v in items) and len(items) <= 30:
            return ", ".join(items)
        return span_text(items)
    return str(value)


def _flatten(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts become 'outer › inner' keys, so long parameter sets read as rows."""
    flat: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix} › {key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name))
        else:
            flat[name] = value
    return flat


def params_html(context: dict[str, Any]) -> str:
    """The run's raw parameters as readable rows, folded in ``<details>``."""
    rows = "".join(f"<tr><td><b>{html.escape(str(key))}</b></td>"
                   f"<td>{html.escape(readable(value))}</td></tr>"
                   for key, value in _flatten(context).items())
    return ("<section id='context'><h2>Run: hardware and parameters</h2>"
            "<details><summary>Raw parameters of the run (hardware, replay settings, trace "
            "manifest): where the data came from. GPU figures are only comparable on the same "
            "hardware and proposer.</summary>"
            f"<div class='tablewrap'><table class='kv'>{rows}</table></div></details></section>")
