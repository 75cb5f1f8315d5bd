"""Sim-to-real check: does replay on an exploration trace predict a real policy run?

Given an *exploration trace* (a logging policy such as ``explore``) and a *policy trace* (a live
run of, say, KernelBand v2 on the same tasks, proposer and GPU), replay the policy trace's own
policy spec (``manifest["policy"]["spec"]``) on the exploration trace's tape and fitted
environments for N seeds over T steps (T = the policy trace's longest task), and compare, per
task, the predicted best-speedup-so-far curve with the real one.

Speedups are relative to the reference implementation, timed as each trace recorded it: the real
curve at attempt t is ``ref_ms / best_ms`` where best_ms is the fastest of the steps' parents
(correct kernels already in the pool) and correct children over attempts 1..t, and ref_ms is the
task's median ``ref_ms`` over the trace's rows. The live runner re-times the reference at every
attempt; taking the row's own ref_ms (as ``speedup_vs_ref`` does) lets one noisy timing set the
best (the H100 trace's first layernorm row has ref_ms 0.326 against a median of 0.198: 1.60x for
a kernel that is 1.03x). Replay reports speedups over the task's k0; they are converted with the
exploration trace's own median reference: ``best_speedup * median(ref_ms) / k0_ms``. Where
either trace lacks reference timings for a task, both sides are speedups over their own k0
(basis ``k0``).

Per (environment, task): the median and 10-90 % band over seeds of the predicted curve; the
final-step log ratio ``log(predicted median / real)``; the mean absolute log gap over steps; the
fraction of steps where the real curve lies within the band; and a ``geomean`` row over tasks
(mean log ratios, i.e. geometric means of the ratios). A task with several real runs uses the
median real curve. Tasks present in only one trace are listed, never silently dropped.

Not-applicable proposals (issue #18): a policy trace whose manifest says
``"not_applicable_rule": "unavailable"`` was recorded under the rule of DESIGN.md (a
``not_applicable`` attempt spends no step); its not-applicable rows are left out of the real
curve's steps and the replay treats recorded ``not_applicable`` outcomes as unavailable actions.
A policy trace without that key was recorded before the rule (``traces/policy-v2-h200``): its
not-applicable rows were steps that failed, and the replay uses the same old rule
(``not_applicable="failure"`` on the tape and fitted environments), so that it predicts the run
that was actually made. `run_sim2real(..., not_applicable=...)` overrides the choice.

Signature timing (issue 15): a policy trace recorded with ``--profile reps`` (manifest
``signatures.mode``) showed its policy each representative's roofline signature until Nsight
Compute's came back; the replay models that delay by drawing it from the run's recorded delays
(``signature-reveals.jsonl``; `kbsim.envs.reveal`, ``delays``), with the exploration trace's
``roofline_sig`` as the signature shown meanwhile. A policy trace without that record
(``traces/policy-v2-h200``, recorded before it existed) is predicted with signatures seen at
once, and so is one whose exploration trace has no ``roofline_sig`` (said in the notes).
`run_sim2real(..., reveal=...)` overrides the choice (``at-once``, ``delays``, ``lag:N``).

NOTE (D60): the bands are over replay seeds, also on the tape (DESIGN.md: tape bands from a
bootstrap of the tapes). Every seed reads a tape's recorded outcomes in the same order, so a
tape band is narrow by construction: judge the tape by its gap more than by its in-band share.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kbsim.envs.registry import TRACE_ENVS

#: replay environments the check can use: those built from a trace (tape, fitted)
ENVS: tuple[str, ...] = TRACE_ENVS
#: relative tolerance of the band test (a real value equal to a band edge is inside)
BAND_RTOL = 1e-9


@dataclass
class Sim2Real:
    """The check's result: per-step curves, the per-task gap table, and what was left out."""

    policy: str
    steps: int
    seeds: int
    envs: list[str]
    explore: str
    policy_trace: str
    #: env, task_id, t (1-based attempts), real, pred_q10, pred_median, pred_q90
    curves: pd.DataFrame
    #: one row per (env, task) plus one ``geomean`` row per env (see the module docstring)
    table: pd.DataFrame
    only_in_explore: list[str] = field(default_factory=list)
    only_in_policy: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: env -> the signature timing its replay used (`kbsim.envs.data.Env.reveal`)
    signature_timing: dict[str, str] = field(default_factory=dict)

    _png: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def png(self) -> bytes:
        """The curves' figure as PNG bytes, rendered once (`write_sim2real` and
        `sim2real_analysis` both show it: the demo calls both)."""
        if self._png is None:
            from analysis.plots import to_png
            from analysis.plots_sim2real import sim2real_figure

            self._png = to_png(sim2real_figure(self.curves), tight=False)
        return self._png


def policy_spec_of(manifest: dict[str, Any], steps: pd.DataFrame) -> str:
    """The policy spec a policy trace was recorded with (manifest first, then its rows)."""
    policy = manifest.get("policy") or {}
    if isinstance(policy, dict) and policy.get("spec"):
        return str(policy["spec"])
    names = sorted(set(steps["policy"].astype(str)))
    if len(names) == 1:
        return names[0]
    if isinstance(policy, dict) and policy.get("name"):
        return str(policy["name"])
    raise ValueError(f"the policy trace names no single policy (manifest policy.spec missing, "
                     f"rows name {', '.join(names) or 'none'}).")


def _float(frame: pd.DataFrame, column: str) -> np.ndarray:
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


def _has_ref(task_steps: pd.DataFrame) -> bool:
    ref = _float(task_steps, "ref_ms")
    return bool((np.isfinite(ref) & (ref > 0)).any())


def _median_ref_ms(task_steps: pd.DataFrame) -> float:
    ref = _float(task_steps, "ref_ms")
    return float(np.median(ref[np.isfinite(ref) & (ref > 0)]))


def _run_curve(run: pd.DataFrame, base_ms: float) -> np.ndarray:
    """Best speedup (base_ms / fastest correct ms) so far after each attempt of one run of one
    task (rows sorted by step)."""
    parent_ms = _float(run, "parent_ms")
    child_ms = _float(run, "child_ms")
    ok = (run["status"] == "ok").to_numpy() & np.isfinite(child_ms) & (child_ms > 0)
    fastest = np.fmin(np.where(parent_ms > 0, parent_ms, np.nan), np.where(ok, child_ms, np.nan))
    return base_ms / np.fmin.accumulate(fastest)


def real_curves(steps: pd.DataFrame, tasks: Sequence[str], ref_basis: dict[str, bool],
                horizon: int) -> pd.DataFrame:
    """task_id, t, real (median over the task's runs of the best speedup so far), runs."""
    rows = []
    for task in tasks:
        part = steps[steps["task_id"] == task].sort_values(["run_id", "step"], kind="stable")
        base_ms = _median_ref_ms(part) if ref_basis[task] else float(_float(part, "parent_ms")[0])
        curves = [_run_curve(run, base_ms)[:horizon]
                  for _, run in part.groupby("run_id", sort=True)]
        length = max(len(c) for c in curves)
        stacked = np.full((len(curves), length), np.nan)
        for i, curve in enumerate(curves):
            stacked[i, : len(curve)] = curve
        with np.errstate(all="ignore"):
            median = np.nanmedian(stacked, axis=0)
        for t in range(length):
            rows.append({"task_id": task, "t": t + 1, "real": float(median[t]),
                         "runs": int(np.isfinite(stacked[:, t]).sum())})
    return pd.DataFrame(rows, columns=["task_id", "t", "real", "runs"])


def _k0_scale(env: Any, explore_steps: pd.DataFrame, ref_basis: dict[str, bool]) -> np.ndarray:
    """Per env task: factor turning replay's speedup over k0 into the check's basis."""
    k0_ms = env.data.k_ms[env.data.task_k0]
    scale = np.ones(len(env.task_ids))
    for i, task in enumerate(env.task_ids):
        if ref_basis[task]:
            ref_ms = _median_ref_ms(explore_steps[explore_steps["task_id"] == task])
            scale[i] = ref_ms / float(k0_ms[i])
    return scale


def predicted_curves(data: Any, tasks: Sequence[str], ref_basis: dict[str, bool], policy: str,
                     seeds: int | Sequence[int], horizon: int, envs: Sequence[str],
                     description: str = "exploration trace",
                     not_applicable: str = "unavailable", reveals: Any = None,
                     reveal: str | None = None) -> pd.DataFrame:
    """env, task_id, t, pred_q10, pred_median, pred_q90 and seeds, from replay of ``policy`` on
    the exploration trace ``data`` (a kbsim TraceData), recorded ``not_applicable`` outcomes
    replayed under the rule `not_applicable` and signatures shown with the timing `reveal`
    (`kbsim.envs.reveal`; `reveals` the policy run's) (see the module docstring). The timing
    each env used is in ``frame.attrs["signature_timing"]``."""
    from kbsim.envs.registry import build_envs
    from kbsim.replay.sweep import run_sweep

    explore_steps = data.steps_df()
    built = build_envs(envs, data, tasks=list(tasks), description=description,
                       not_applicable=not_applicable, reveals=reveals, reveal=reveal)
    result = run_sweep([policy], built, seeds, horizon, keep_steps=True)
    assert result.results is not None
    res = result.results.select(["env", "task_id", "seed", "step", "best_speedup"]).to_pandas()
    frames = []
    for env in built:
        part = res[res["env"] == env.name]
        scale = dict(zip(env.task_ids, _k0_scale(env, explore_steps, ref_basis), strict=True))
        speed = part["best_speedup"].to_numpy(np.float64) * part["task_id"].map(scale).to_numpy()
        grouped = part.assign(speedup=speed, t=part["step"] + 1).groupby(
            ["task_id", "t"], sort=True)["speedup"]
        stats = grouped.quantile([0.1, 0.5, 0.9]).unstack()
        stats.columns = ["pred_q10", "pred_median", "pred_q90"]
        stats["seeds"] = grouped.size()
        frames.append(stats.reset_index().assign(env=env.name))
    out = pd.concat(frames, ignore_index=True)
    out.attrs["signature_timing"] = {env.name: env.reveal for env in built}
    return out


def gap_table(curves: pd.DataFrame, horizon: int) -> pd.DataFrame:
    """Per (env, task) gap statistics over the steps the real run reached, and geomean rows."""
    rows = []
    for (env, task), part in curves.groupby(["env", "task_id"], sort=True):
        part = part.dropna(subset=["real", "pred_median"]).sort_values("t")
        if part.empty:
            continue
        real = part["real"].to_numpy()
        pred = part["pred_median"].to_numpy()
        log_gap = np.log(pred / real)
        lo, hi = part["pred_q10"].to_numpy(), part["pred_q90"].to_numpy()
        inside = (real >= lo * (1 - BAND_RTOL)) & (real <= hi * (1 + BAND_RTOL))
        rows.append({
            "env": env, "task_id": task, "steps_compared": len(part),
            "complete": len(part) >= horizon, "real_start": float(real[0]),
            "pred_start": float(pred[0]), "real_final": float(real[-1]),
            "pred_q10_final": float(lo[-1]), "pred_median_final": float(pred[-1]),
            "pred_q90_final": float(hi[-1]), "final_ratio": float(np.exp(log_gap[-1])),
            "final_log_ratio": float(log_gap[-1]),
            "mean_abs_log_gap": float(np.mean(np.abs(log_gap))),
            "in_band_frac": float(inside.mean()),
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    summary = []
    for env, part in table.groupby("env", sort=True):
        summary.append({
            "env": env, "task_id": "geomean", "steps_compared": int(part["steps_compared"].sum()),
            "complete": bool(part["complete"].all()),
            "final_ratio": float(np.exp(part["final_log_ratio"].mean())),
            "final_log_ratio": float(part["final_log_ratio"].mean()),
            "mean_abs_log_gap": float(part["mean_abs_log_gap"].mean()),
            "in_band_frac": float(part["in_band_frac"].mean()),
        })
    return pd.concat([table, pd.DataFrame(summary)], ignore_index=True)


def _horizon(steps: pd.DataFrame) -> int:
    return int(steps.groupby(["run_id", "task_id"]).size().max())


def na_rule_of(manifest: dict[str, Any]) -> str:
    """The not-applicable rule a trace was recorded under: "unavailable" (issue #18, the
    manifest says so) or "failure" (recorded before the rule, no such key)."""
    return str(manifest.get("not_applicable_rule") or "failure")


def signature_timing_of(manifest: dict[str, Any], policy_dir: Path,
                        reveal: str | None = None) -> tuple[Any, str]:
    """(the policy run's reveals, the timing to replay it with): ``delays`` for a run that
    showed roofline signatures first (``--profile reps``), else ``at-once``; `reveal`
    overrides the timing."""
    from kbsim.trace.reveals import load_reveals

    reveals = load_reveals(policy_dir)
    if reveal is not None:
        return reveals, reveal
    if (manifest.get("signatures") or {}).get("mode") == "reps":
        return reveals or [], "delays"  # no line: no signature was shown in time
    return reveals, "at-once"


def run_sim2real(explore: str | Path, policy_trace: str | Path, *,
                 seeds: int | Sequence[int] = 100, envs: Sequence[str] = ENVS,
                 steps: int | None = None, not_applicable: str | None = None,
                 reveal: str | None = None) -> Sim2Real:
    """Replay the policy trace's policy on the exploration trace and compare (module docstring).

    ``not_applicable``: the rule for recorded ``not_applicable`` outcomes, "unavailable" or
    "failure"; default: the rule the policy trace was recorded under (`na_rule_of`).
    ``reveal``: the signature timing of the replay (`signature_timing_of`'s default).

    ``steps`` overrides T (default: the policy trace's longest (run, task)). Raises ValueError
    with one sentence on bad input (unknown env, traces without a common task, ...).
    """
    from kbsim.trace.reader import load_trace

    unknown = [e for e in envs if e not in ENVS]
    if unknown or not envs:
        raise ValueError(f"unknown replay environment {unknown[0] if unknown else '(none)'}; "
                         f"expected tape and/or fitted.")
    explore_dir, policy_dir = Path(explore), Path(policy_trace)
    explore_data = load_trace(explore_dir)
    explore_steps = explore_data.steps_df()
    policy_data = load_trace(policy_dir)
    policy_steps = policy_data.steps_df()
    if explore_steps.empty or policy_steps.empty:
        empty = explore_dir if explore_steps.empty else policy_dir
        raise ValueError(f"trace {empty} holds no steps: nothing to compare.")
    explore_tasks = set(explore_steps["task_id"].astype(str))
    policy_tasks = set(policy_steps["task_id"].astype(str))
    common = sorted(explore_tasks & policy_tasks)
    if not common:
        raise ValueError(
            f"the exploration trace ({len(explore_tasks)} tasks, e.g. {min(explore_tasks)}) and "
            f"the policy trace ({len(policy_tasks)} tasks, e.g. {min(policy_tasks)}) share no "
            f"task: nothing to compare.")
    manifest = policy_data.manifests[0] if policy_data.manifests else {}
    spec = policy_spec_of(manifest, policy_steps)
    na_rule = not_applicable or na_rule_of(manifest)
    no_step: list[str] = []
    if na_rule == "unavailable":  # not-applicable attempts spent no step of the real run
        policy_steps = policy_steps[policy_steps["status"] != "not_applicable"]
        no_step = sorted(t for t in common if not (policy_steps["task_id"] == t).any())
        common = [t for t in common if t not in no_step]
        if not common:
            raise ValueError("every attempt of the policy trace is not_applicable: no step "
                             "to compare.")
    dropped: list[str] = []
    if policy_steps["policy"].nunique() > 1 and (policy_steps["policy"] == spec).any():
        dropped = sorted(set(policy_steps["policy"].astype(str)) - {spec})
        policy_steps = policy_steps[policy_steps["policy"] == spec]
        policy_tasks = set(policy_steps["task_id"].astype(str))
        common = sorted(explore_tasks & policy_tasks)
        if not common:
            raise ValueError(f"no task of the exploration trace has {spec} rows in the policy "
                             f"trace: nothing to compare.")
    horizon = int(steps) if steps is not None else _horizon(policy_steps)
    if horizon < 1:
        raise ValueError(f"steps must be >= 1, got {horizon}.")
    ref_basis = {t: _has_ref(explore_steps[explore_steps["task_id"] == t])
                 and _has_ref(policy_steps[policy_steps["task_id"] == t]) for t in common}
    real = real_curves(policy_steps, common, ref_basis, horizon)
    reveals, timing = signature_timing_of(manifest, policy_dir, reveal)
    pred = predicted_curves(explore_data, common, ref_basis, spec, seeds, horizon, list(envs),
                            description=str(explore_dir), not_applicable=na_rule,
                            reveals=reveals, reveal=timing)
    curves = pred.merge(real, on=["task_id", "t"], how="left")
    curves = curves[["env", "task_id", "t", "real", "pred_q10", "pred_median", "pred_q90",
                     "seeds", "runs"]]
    table = gap_table(curves, horizon)
    if not table.empty:
        basis = table["task_id"].map(ref_basis).map({True: "ref", False: "k0"})
        table.insert(2, "basis", basis.fillna(""))
    n_seeds = seeds if isinstance(seeds, int) else len(list(seeds))
    result = Sim2Real(policy=spec, steps=horizon, seeds=int(n_seeds), envs=list(envs),
                      explore=str(explore_dir), policy_trace=str(policy_dir), curves=curves,
                      table=table, only_in_explore=sorted(explore_tasks - policy_tasks),
                      only_in_policy=sorted(policy_tasks - explore_tasks),
                      signature_timing=dict(pred.attrs.get("signature_timing", {})))
    result.notes.append(_timing_note(result.signature_timing, timing))
    result.notes.append(
        "not_applicable proposals replayed as unavailable actions (no step spent); the policy "
        "trace's not_applicable rows are left out of its steps" if na_rule == "unavailable" else
        "not_applicable proposals replayed as failed steps: the policy trace was recorded "
        "before the not-applicable rule (issue #18), and the replay follows the rule it ran")
    if no_step:
        result.notes.append(f"task(s) where the real run spent no step (every attempt "
                            f"not_applicable), not compared: {', '.join(no_step)}")
    if dropped:
        result.notes.append(f"the policy trace also holds runs of {', '.join(dropped)}: only "
                            f"its {spec} rows are compared")
    k0_tasks = [t for t in common if not ref_basis[t]]
    if k0_tasks:
        result.notes.append(f"no reference timings for {', '.join(k0_tasks)}: those speedups "
                            f"are over each trace's own k0")
    short = table[(table["task_id"] != "geomean") & ~table["complete"]] if not table.empty \
        else table
    if not short.empty:
        result.notes.append(f"the real run stopped before T = {horizon} on "
                            f"{', '.join(sorted(set(short['task_id'])))}: compared over the "
                            f"steps it reached")
    for label, tasks in (("only in the exploration trace", result.only_in_explore),
                         ("only in the policy trace", result.only_in_policy)):
        if tasks:
            result.notes.append(f"task(s) {label}, not compared: {', '.join(tasks)}")
    return result


def _timing_note(used: dict[str, str], asked_for: str) -> str:
    """One sentence on when the replayed policy saw Nsight Compute signatures."""
    shown = "; ".join(f"{env}: {how}" for env, how in used.items())
    if asked_for == "at-once" and all(how == "at-once" for how in used.values()):
        return ("signatures shown at once when the policy asks: the policy trace records no "
                "signature timing (not --profile reps, or recorded before "
                "signature-reveals.jsonl existed)")
    return f"signature timing of the replay ({asked_for} asked for): {shown}"


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float | np.floating):
        return "" if not np.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def sim2real_markdown(result: Sim2Real) -> str:
    """The gap table as GitHub Markdown (for docs/benchmarks.md), with its caption lines."""
    k0 = result.table.get("basis", pd.Series(dtype=str)) == "k0"
    basis = ("speedups over the reference" if not k0.any() else
             "speedups over the reference, or over each trace's k0 where a trace has no "
             "reference timing (see the notes)")
    head = ("| env | task | steps | real best | predicted median [10-90 %] | predicted / real "
            "| mean abs log gap | real in band |")
    lines = [f"Sim-to-real: `{result.policy}` replayed on `{result.explore}` ({result.seeds} "
             f"seeds, T = {result.steps}) against the live run `{result.policy_trace}`; "
             f"{basis}.", "", head,
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in result.table.itertuples(index=False):
        band = "" if row.task_id == "geomean" else (
            f"{_fmt(row.pred_median_final)} [{_fmt(row.pred_q10_final)}, "
            f"{_fmt(row.pred_q90_final)}]")
        task = f"**{row.task_id}**" if row.task_id == "geomean" else row.task_id
        lines.append(f"| {row.env} | {task} | {row.steps_compared} | {_fmt(row.real_final)} | "
                     f"{band} | {_fmt(row.final_ratio)} | {_fmt(row.mean_abs_log_gap)} | "
                     f"{100 * row.in_band_frac:.0f} % |")
    lines += ["", *[f"- {note}" for note in result.notes]]
    return "\n".join(lines).rstrip() + "\n"


def write_sim2real(result: Sim2Real, out_dir: str | Path) -> list[Path]:
    """Write sim2real.csv, sim2real_curves.csv, sim2real.json, sim2real.md, sim2real.png."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    paths = {name: root / f"sim2real{name}" for name in
             (".csv", "_curves.csv", ".json", ".md", ".png")}
    result.table.to_csv(paths[".csv"], index=False)
    result.curves.to_csv(paths["_curves.csv"], index=False)
    paths[".json"].write_text(json.dumps({
        "policy": result.policy, "steps": result.steps, "seeds": result.seeds,
        "envs": result.envs, "explore": result.explore, "policy_trace": result.policy_trace,
        "only_in_explore": result.only_in_explore, "only_in_policy": result.only_in_policy,
        "notes": result.notes, "signature_timing": result.signature_timing,
        "table": json.loads(result.table.to_json(orient="records")),
    }, indent=2), encoding="utf-8")
    paths[".md"].write_text(sim2real_markdown(result), encoding="utf-8")
    paths[".png"].write_bytes(result.png())
    return list(paths.values())


def sim2real_analysis(result: Sim2Real) -> Any:
    """The check as an ``analysis.pipeline.Analysis`` (tables sim2real and sim2real_curves, figure
    sim2real), to merge into a report."""
    from analysis.pipeline import Analysis

    out = Analysis(kind="sim2real", source=result.policy_trace)
    out.tables["sim2real"] = result.table
    out.tables["sim2real_curves"] = result.curves
    out.figures["sim2real"] = result.png()
    out.context = {"policy replayed": result.policy, "exploration trace": result.explore,
                   "policy trace": result.policy_trace, "seeds": result.seeds,
                   "steps": result.steps, "environments": result.envs,
                   "signature timing": result.signature_timing}
    out.notes = [f"sim-to-real: {note}" for note in result.notes]
    return out
