"""The verdict a replay report opens with: which policy finds faster kernels, by how much, how sure.

Per environment, from each run's best speedup over the task's starting kernel k0 at the last step
(a run is one policy × task × seed):

- each policy's **geometric mean** over tasks and seeds, with a 95 % percentile-bootstrap interval;
- the **best policy** (highest geometric mean), and each other policy's **paired ratio** to it:
  exp(mean over (task, seed) of log s_policy − log s_best), with its bootstrap interval. Pairing on
  (task, seed) removes the between-task spread (some tasks allow 3×, others 1.05×), which is what
  makes overlapping per-policy intervals still tell policies apart.

The bootstrap is two-stage: tasks are resampled with replacement (the tasks of a trace are a
sample of the kernels one might optimise), then seeds within each drawn task (replay
randomness). NOTE (D70): on every environment, where DESIGN.md has bands over seeds (synthetic,
fitted) or over tapes (tape): the verdict generalises over tasks, so tasks are resampled
everywhere (on a tape, a task's tapes are resampled with it), and seeds within them. Every
policy of an environment is evaluated on the same resamples, so the paired ratios are computed
draw by draw. The best policy is chosen by its point estimate; the intervals
are per comparison (95 % each, not adjusted for the number of policies compared), so a policy
whose interval includes 0 % is called *not distinguishable from* the best, never *equal to* it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.slopes import MIN_PULLS_PER_ARM

#: environments in the order a reader weighs them: the recorded data itself first
ENV_ORDER: tuple[str, ...] = ("tape", "fitted", "synthetic")

VERDICT_COLUMNS: tuple[str, ...] = (
    "env", "rank", "policy", "n_tasks", "n_seeds", "geomean_speedup", "ci_low", "ci_high",
    "best_policy", "ratio_to_best", "ratio_ci_low", "ratio_ci_high", "distinguishable",
    "in_words",
)


@dataclass(frozen=True)
class Bootstrap:
    """Two-stage resampling plan for a tasks × seeds matrix: ``task_idx[b, j]`` is the j-th task
    of draw b, ``seed_weight[b, j, s]`` the weight of seed s within it (rows sum to 1)."""

    task_idx: np.ndarray
    seed_weight: np.ndarray

    def means(self, matrix: np.ndarray) -> np.ndarray:
        """The bootstrap means (one per draw) of a tasks × seeds matrix."""
        per_task = np.einsum("bjs,bjs->bj", self.seed_weight, matrix[self.task_idx])
        return per_task.mean(axis=1)


def two_stage_bootstrap(n_tasks: int, n_seeds: int, *, n_boot: int,
                        rng: np.random.Generator) -> Bootstrap:
    """Resample tasks with replacement, then seeds with replacement within each drawn task.

    With one task only seeds are resampled; with one seed only tasks.
    """
    if n_tasks < 1 or n_seeds < 1:
        raise ValueError("need at least one task and one seed to bootstrap")
    task_idx = (rng.integers(0, n_tasks, size=(n_boot, n_tasks)) if n_tasks > 1
                else np.zeros((n_boot, 1), dtype=np.int64))
    counts = rng.multinomial(n_seeds, np.full(n_seeds, 1.0 / n_seeds), size=(n_boot, n_tasks))
    return Bootstrap(task_idx, counts.astype(np.float64) / n_seeds)


def final_runs(results: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, env, task_id, seed): best speedup over k0 at the run's last recorded step."""
    keys = ["policy", "env", "task_id", "seed"]
    if not results.index.is_unique:  # idxmax gives labels: they must name one row each
        results = results.reset_index(drop=True)
    last = results.groupby(keys, sort=True, observed=True)["step"].idxmax()
    return results.loc[last.to_numpy(), [*keys, "best_speedup"]].reset_index(drop=True)


def final_runs_from_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """The same from a sweep's per-episode summary (``_summary.parquet``): its longest horizon."""
    longest = summary[summary["horizon"] == summary["horizon"].max()]
    runs = longest[["policy", "env", "task_id", "seed", "final_best_speedup"]]
    return runs.rename(columns={"final_best_speedup": "best_speedup"}).reset_index(drop=True)


def _env_order(envs: list[str]) -> list[str]:
    known = [e for e in ENV_ORDER if e in envs]
    return known + sorted(e for e in envs if e not in ENV_ORDER)


def pct(value: float) -> str:
    """A percentage for prose: one decimal under 10 %, none above."""
    return f"{value:.1f}" if abs(value) < 9.95 else f"{value:.0f}"


def in_words(policy: str, best: str, ratio: float, lo: float, hi: float, level: int) -> str:
    """``kernelband-v2 is 10 % behind greedy [7 %, 13 %]`` (behind = 1 − ratio to the best)."""
    if policy == best:
        return f"{policy} is the best policy here"
    behind, behind_lo, behind_hi = (100 * (1 - ratio), 100 * (1 - hi), 100 * (1 - lo))
    text = (f"{policy} is {pct(behind)} % behind {best} "
            f"[{pct(behind_lo)} %, {pct(behind_hi)} %]")
    if hi >= 1.0:
        text += f": not distinguishable from {best} at {level} %"
    return text


def _env_table(part: pd.DataFrame, env: str, rng: np.random.Generator, n_boot: int,
               ci_level: float) -> tuple[pd.DataFrame, int]:
    wide = part.pivot_table(index=["task_id", "seed"], columns="policy", values="best_speedup",
                            aggfunc="first")
    complete = wide.dropna(axis=0, how="any")
    dropped = len(wide) - len(complete)
    logs = np.log(complete.clip(lower=np.finfo(float).tiny))
    # a tasks × seeds matrix needs every cell: keep the seeds that every task has
    seed_sets = [set(g.index.get_level_values("seed")) for _, g in logs.groupby(level="task_id")]
    common = sorted(set.intersection(*seed_sets)) if seed_sets else []
    kept = logs[logs.index.get_level_values("seed").isin(common)]
    dropped += len(logs) - len(kept)
    logs = kept
    if logs.empty:
        return pd.DataFrame(columns=list(VERDICT_COLUMNS)), dropped
    tasks = logs.index.get_level_values("task_id").unique()
    seeds = common
    logs = logs.sort_index()
    n_tasks, n_seeds = len(tasks), len(seeds)
    plan = two_stage_bootstrap(n_tasks, n_seeds, n_boot=n_boot, rng=rng)
    alpha = (1 - ci_level) / 2
    point = logs.mean(axis=0)
    best = str(point.idxmax())
    best_mat = logs[best].to_numpy().reshape(n_tasks, n_seeds)
    best_boot = plan.means(best_mat)
    level = round(100 * ci_level)
    rows = []
    for policy in point.sort_values(ascending=False, kind="stable").index:
        mat = logs[policy].to_numpy().reshape(n_tasks, n_seeds)
        boot = plan.means(mat)
        diff = boot - best_boot
        ratio = float(np.exp(point[policy] - point[best]))
        r_lo, r_hi = (np.exp(np.quantile(diff, [alpha, 1 - alpha])) if policy != best
                      else (1.0, 1.0))
        lo, hi = np.exp(np.quantile(boot, [alpha, 1 - alpha]))
        rows.append({
            "env": env, "rank": len(rows) + 1, "policy": policy, "n_tasks": n_tasks,
            "n_seeds": n_seeds, "geomean_speedup": float(np.exp(point[policy])),
            "ci_low": float(lo), "ci_high": float(hi), "best_policy": best,
            "ratio_to_best": ratio, "ratio_ci_low": float(r_lo), "ratio_ci_high": float(r_hi),
            "distinguishable": bool(policy != best and r_hi < 1.0),
            "in_words": in_words(str(policy), best, ratio, float(r_lo), float(r_hi), level),
        })
    return pd.DataFrame(rows, columns=list(VERDICT_COLUMNS)), dropped


def verdict_table(runs: pd.DataFrame, *, rng: np.random.Generator, n_boot: int = 2000,
                  ci_level: float = 0.95) -> tuple[pd.DataFrame, list[str]]:
    """Per environment, every policy ranked by geometric-mean best speedup, with intervals and
    its paired ratio to the best policy (see the module docstring); plus notes on dropped runs.

    ``runs`` has columns policy, env, task_id, seed, best_speedup (``final_runs``).
    """
    frames, notes = [], []
    for env in _env_order([str(e) for e in runs["env"].unique()]):
        table, dropped = _env_table(runs[runs["env"] == env], env, rng, n_boot, ci_level)
        if dropped:
            notes.append(f"verdict [{env}]: {dropped} (task, seed) cells left out because not "
                         f"every policy ran them (the comparison is paired)")
        frames.append(table)
    if not frames:
        return pd.DataFrame(columns=list(VERDICT_COLUMNS)), notes
    return pd.concat(frames, ignore_index=True), notes


def verdict_sentences(table: pd.DataFrame, *, focus: tuple[str, ...] = ("kernelband-v2",),
                      ci_level: float = 0.95) -> list[str]:
    """Plain sentences per environment: the best policy, how many are not distinguishable from
    it, and where the ``focus`` policies (the paper's) stand."""
    level = round(100 * ci_level)
    out = []
    for env, part in table.groupby("env", sort=False):
        top = part.iloc[0]
        ties = part[(part["policy"] != top["policy"]) & ~part["distinguishable"]]
        sentence = (f"[{env}] Best: {top['policy']}, geometric-mean speedup over k0 "
                    f"{top['geomean_speedup']:.3g}× [{top['ci_low']:.3g}, {top['ci_high']:.3g}] "
                    f"over {top['n_tasks']} task(s) × {top['n_seeds']} seed(s).")
        if len(part) > 1 and ties.empty:
            sentence += f" Every other policy is behind it at {level} %."
        elif len(part) > 1:
            names = ", ".join(ties["policy"].head(4)) + (", …" if len(ties) > 4 else "")
            sentence += (f" {len(ties)} of the other {len(part) - 1} policies are not "
                         f"distinguishable from it at {level} % ({names}).")
        out.append(sentence)
        for name in focus:
            row = part[part["policy"] == name]
            if not row.empty and name != top["policy"]:
                out.append(f"[{env}] {row['in_words'].iloc[0]}.")
    return out


def ranking_text(table: pd.DataFrame, *, top: int = 8) -> str:
    """A short ranking for the end of `kernelband replay` / `demo` (per environment)."""
    lines = []
    for env, part in table.groupby("env", sort=False):
        best = part.iloc[0]
        lines.append(f"ranking [{env}] by geometric-mean best speedup over k0 "
                     f"({best['n_tasks']} task(s) × {best['n_seeds']} seed(s), 95 % intervals):")
        for row in part.head(top).itertuples():
            vs = ("best" if row.policy == row.best_policy else
                  f"{pct(100 * (1 - row.ratio_to_best))} % behind "
                  f"[{pct(100 * (1 - row.ratio_ci_high))}, {pct(100 * (1 - row.ratio_ci_low))}]"
                  f"{'' if row.distinguishable else ', not distinguishable'}")
            lines.append(f"  {row.rank:>2}. {row.policy:<28} {row.geomean_speedup:7.3f}× "
                         f"[{row.ci_low:.3f}, {row.ci_high:.3f}]  {vs}")
        if len(part) > top:
            lines.append(f"  … {len(part) - top} more in the report")
    return "\n".join(lines)


def span_text(values: list | tuple | np.ndarray) -> str:
    """A readable summary of a list: ``0–99 (100)`` for consecutive integers, else the first
    few values and the count (``a, b, c, … (24)``)."""
    items = list(values)
    if not items:
        return "none"
    if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in items):
        ordered = sorted(set(int(v) for v in items))
        if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
            return f"{ordered[0]}–{ordered[-1]} ({len(ordered)})"
        items = ordered
    shown = ", ".join(str(v) for v in items[:8])
    return shown if len(items) <= 8 else f"{shown}, … ({len(items)})"


def question_text(question: dict) -> str:
    """The question a verdict answers, in one short paragraph (keys: policies, envs, trace,
    instance (synthetic), gpu, proposer, tasks, steps, seeds; missing keys are left out)."""
    parts = []
    policies = question.get("policies") or []
    if policies:
        parts.append(f"Which of {len(policies)} policies finds the fastest kernels")
    else:
        parts.append("Which policy finds the fastest kernels")
    where = []
    if question.get("trace"):
        where.append(f"on the trace {question['trace']}")
    if question.get("instance"):
        where.append(f"{'and ' if where else 'on '}the synthetic instance "
                     f"{question['instance']}")
    if question.get("gpu"):
        where.append(f"recorded on {question['gpu']}")
    if question.get("proposer"):
        where.append(f"with the {question['proposer']} proposer")
    text = " ".join([parts[0], *where]) + "?"
    setup = []
    if question.get("envs"):
        setup.append(f"replayed in the {' and '.join(question['envs'])} environment"
                     f"{'s' if len(question['envs']) > 1 else ''}")
    if question.get("tasks"):
        setup.append(f"{question['tasks']} task(s)")
    if question.get("steps"):
        setup.append(f"T = {question['steps']} attempts per run")
    if question.get("seeds") is not None:
        setup.append(f"seeds {question['seeds']}")
    if setup:
        text += " " + ", ".join(setup)[0].upper() + ", ".join(setup)[1:] + "."
    if policies:
        text += f" Policies: {policy_summary(policies)}."
    return text


def policy_summary(policies: list[str]) -> str:
    """Policies grouped by name: ``kernelband-v2 (12 settings), bon, greedy``."""
    groups: dict[str, int] = {}
    for spec in policies:
        name = str(spec).split(":", 1)[0]
        groups[name] = groups.get(name, 0) + 1
    return ", ".join(name if n == 1 else f"{name} ({n} settings)" for name, n in groups.items())


def ranking_from_summary(summary: pd.DataFrame, *, seed: int = 0, n_boot: int = 1000) -> str:
    """The short ranking of a sweep's per-episode summary (what `kernelband replay` prints)."""
    table, _ = verdict_table(final_runs_from_summary(summary), rng=np.random.default_rng(seed),
                             n_boot=n_boot)
    return ranking_text(table) if not table.empty else ""


def _names(part: pd.DataFrame, total: int) -> str:
    who = [f"{r.policy} [{r.env}]" for r in part.itertuples()]
    if len(who) == total and total > 4:
        return f"all {total} policy × environment pairs"
    return ", ".join(who[:4]) + (f" and {len(who) - 4} more" if len(who) > 4 else "")


def _span(values: pd.Series, fmt: str) -> str:
    low, high = float(values.min()), float(values.max())
    return format(low, fmt) if format(low, fmt) == format(high, fmt) else \
        f"{format(low, fmt)}–{format(high, fmt)}"


def regret_verdicts(slopes: pd.DataFrame, *, max_items: int = 12) -> list[str]:
    """Growth verdicts in words (analysis.slopes.growth_verdict): one line per failed criterion
    for the inconclusive ones, one on a drifting comparator, one per named rate."""
    if slopes.empty:
        return []
    lines, total = [], len(slopes)
    undecided = slopes[slopes["growth"] == "inconclusive"]
    for (t_max, arms), part in undecided[undecided["growth_cause"] == "pulls"].groupby(
            ["t_max", "n_arms"], sort=True):
        lines.append(f"No growth rate for {_names(part, total)}: inconclusive at T = {t_max:g} "
                     f"({arms} arms), {_span(part['pulls_per_arm'], '.1f')} pulls per arm on "
                     f"average, where a rate needs at least {MIN_PULLS_PER_ARM} "
                     f"(T ≥ {MIN_PULLS_PER_ARM * arms}).")
    for row in undecided[undecided["growth_cause"] != "pulls"].head(max_items).itertuples():
        lines.append(f"No growth rate for {row.policy} [{row.env}]: {row.growth_reason}.")
    drifting = slopes[slopes["comparator_drifts"]]
    if not drifting.empty:
        above = int((drifting["slope"] > 1).sum())
        share = 100 * drifting["comparator_rise"] / drifting["regret_per_step"]
        lines.append(
            f"For {_names(drifting, total)} the comparator (the best arm of the growing pool) "
            f"rose by {_span(drifting['comparator_rise'], '.2g')} over the fitted window, "
            f"{_span(share, '.0f')} % of the mean per-step regret there: R(t) chases a moving "
            f"target, which is what a slope above 1 reflects ({above} of these slopes exceed "
            f"1, up to {drifting['slope'].max():.2f}), so these slopes do not show that a "
            f"policy fails to learn.")
    for row in slopes[slopes["growth"] != "inconclusive"].head(max_items).itertuples():
        lines.append(f"{row.policy} [{row.env}]: {row.growth_reason}.")
    return lines
