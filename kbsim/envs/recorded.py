"""Compile a trace's steps and kernels tables into the arrays of the tape and fitted envs.

Per task: the task's distinct kernels (by kernel_id, first row wins) become rows of the ``k_*``
arrays; its steps, ordered by (run_id, step), become outcomes grouped per (parent kernel,
strategy) in recorded order (the tapes). k0 is the parent of the task's first recorded step.

Missing features are filled so the compiled policies never see NaN where they cannot handle it:
phi, runtime vector and 9-dim profile take the task's per-dimension median (0 when the whole task
lacks it); the hardware signature stays NaN unless the kernel was profiled (policies then treat
it as unprofiled). NOTE (D41): the filled values are a replay convenience, not measurements.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kbsim.envs.data import I_MAX_TASK_KERNELS, NEVER_SHOWN, empty_env
from kbsim.strategies import N_STRATEGIES, STRATEGIES
from kbsim.trace.schema import K0_STRATEGY

STEPS_COLUMNS: tuple[str, ...] = (
    "run_id",
    "task_id",
    "step",
    "parent_id",
    "strategy",
    "child_id",
    "status",
    "parent_ms",
    "child_ms",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)
KERNELS_COLUMNS: tuple[str, ...] = (
    "task_id",
    "kernel_id",
    "ms",
    "phi",
    "runtime_vec",
    "hw_sig",
    "profile9",
    "profiled",
)
#: read when present: traces written before it lack it (NaN: no roofline signature)
OPTIONAL_KERNELS_COLUMNS: tuple[str, ...] = ("roofline_sig",)


def load_tables(paths: str | Path | Sequence[str | Path]) -> tuple[pa.Table, pa.Table]:
    """(steps, kernels) of the trace dataset(s) at `paths`, validated by the trace reader.

    Raises ValueError (the reader's TraceError) with one sentence on a bad or empty dataset.
    """
    from kbsim.trace.reader import load_trace

    data = load_trace(paths)
    if data.steps.num_rows == 0:
        raise ValueError(f"trace {paths} holds no steps: nothing to replay.")
    return data.steps, data.kernels


def check_columns(steps: pa.Table, kernels: pa.Table) -> None:
    """One clear sentence if a table lacks a column the replay environments need."""
    for name, table, needed in (
        ("steps", steps, STEPS_COLUMNS),
        ("kernels", kernels, KERNELS_COLUMNS),
    ):
        missing = [c for c in needed if c not in table.column_names]
        if missing:
            raise ValueError(
                f"the trace's {name} table lacks column(s) {', '.join(missing)} needed for replay."
            )
    if steps.num_rows == 0:
        raise ValueError("the trace holds no steps: nothing to replay.")


def _fixed_list(column, width: int) -> np.ndarray:
    """A column of float lists as an (n, width) float array, NaN for null rows or values."""
    out = np.full((len(column), width), np.nan)
    for i, value in enumerate(list(column)):
        if value is not None and not (np.isscalar(value) and value != value):
            row = np.asarray(value, dtype=np.float64)[:width]
            out[i, : len(row)] = row
    return out


def _fill_median(values: np.ndarray) -> np.ndarray:
    values = values.copy()
    for d in range(values.shape[1]):
        col = values[:, d]
        bad = ~np.isfinite(col)
        if bad.any():
            good = col[~bad]
            col[bad] = float(np.median(good)) if good.size else 0.0
    return values


#: how a recorded ``not_applicable`` attempt is replayed: "unavailable" (DESIGN.md: the pair is
#: an unavailable action, no step is spent) or "failure" (the rule before issue #18: a failed
#: attempt with reward 0 that spends a step; for traces recorded under it)
NA_RULES: tuple[str, ...] = ("unavailable", "failure")


def apply_na_rule(fields: dict[str, np.ndarray], rule: str) -> None:
    """Apply the not-applicable rule to compiled fields (see `NA_RULES`)."""
    if rule not in NA_RULES:
        raise ValueError(f"unknown not-applicable rule {rule!r}; expected one of "
                         f"{', '.join(NA_RULES)}.")
    if rule == "failure":
        fields["o_na"] = np.zeros_like(fields["o_na"])


def compile_recorded(
    steps: pa.Table, kernels: pa.Table, tasks: Sequence[str] | None = None, knn: int = 5
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(EnvData fields, task ids) of the tape/fitted arrays; iparams/fparams left to the caller
    (signature timing: `kbsim.envs.reveal.apply_reveal` with ``fields["kernel_rows"]``)."""
    check_columns(steps, kernels)
    sdf = steps.select(list(STEPS_COLUMNS)).to_pandas()
    # a k0 step (the proposer's first kernel, NOTE D100) is no policy attempt: its kernel is
    # the parent of the task's first attempt, as any k0
    sdf = sdf[sdf["strategy"] != K0_STRATEGY]
    optional = [c for c in OPTIONAL_KERNELS_COLUMNS if c in kernels.column_names]
    kdf = kernels.select([*KERNELS_COLUMNS, *optional]).to_pandas()
    kernel_rows: dict[tuple[str, str], int] = {}
    task_ids = sorted(set(sdf["task_id"]))
    if tasks:
        unknown = [t for t in tasks if t not in task_ids]
        if unknown:
            raise ValueError(
                f"task(s) {', '.join(unknown)} not in the trace; it holds "
                f"{', '.join(task_ids[:10])}{' ...' if len(task_ids) > 10 else ''}."
            )
        task_ids = [t for t in task_ids if t in set(tasks)]
    unknown_strategies = sorted(set(sdf["strategy"]) - set(STRATEGIES))
    if unknown_strategies:
        raise ValueError(
            f"the trace uses unknown strategy {unknown_strategies[0]!r}; "
            f"expected one of {', '.join(STRATEGIES)}."
        )
    s_count = N_STRATEGIES
    blocks: dict[str, list[np.ndarray]] = {
        k: []
        for k in (
            "k_phi k_hw k_roof k_prof9 k_rt6 k_ms o_success o_na o_child o_child_ms o_parent_ms "
            "o_reward o_tokens o_cost tape_mean tape_nn fit_nbr fit_nbr_n fit_mean fit_min_ratio "
            "tape_counts"
        ).split()
    }
    fields = empty_env(len(task_ids))
    scale = np.ones((len(task_ids), 5))
    floor_ms = np.zeros(len(task_ids))
    kstart = [0]
    k0 = []
    sgroups = dict(tuple(sdf.groupby("task_id", sort=False)))
    kgroups = dict(tuple(kdf.groupby("task_id", sort=False)))
    for t, task in enumerate(task_ids):
        ts = sgroups[task].sort_values(["run_id", "step"], kind="stable")
        if task not in kgroups:
            raise ValueError(f"task {task!r} has steps but no kernels in the trace.")
        tk = kgroups[task].drop_duplicates("kernel_id", keep="first").reset_index(drop=True)
        index = {kid: i for i, kid in enumerate(tk["kernel_id"])}
        offset = kstart[-1]
        parent = ts["parent_id"].map(index)
        if parent.isna().any():
            missing = ts["parent_id"][parent.isna()].iloc[0]
            raise ValueError(
                f"task {task!r}: step parent {missing!r} is not in the kernels table."
            )
        parent = parent.to_numpy(np.int64)
        strategy = ts["strategy"].map({s: i for i, s in enumerate(STRATEGIES)}).to_numpy(np.int64)
        child = ts["child_id"].map(index).fillna(-1).to_numpy(np.int64)
        k_ms = tk["ms"].to_numpy(np.float64, na_value=np.nan)
        child_ms = ts["child_ms"].to_numpy(np.float64, na_value=np.nan)
        recorded_ms = np.where(child >= 0, k_ms[child], np.nan)
        child_ms = np.where(np.isfinite(child_ms), child_ms, recorded_ms)
        parent_ms = ts["parent_ms"].to_numpy(np.float64, na_value=np.nan)
        parent_ms = np.where(np.isfinite(parent_ms), parent_ms, k_ms[parent])
        success = (ts["status"].to_numpy() == "ok") & (child >= 0) & np.isfinite(child_ms)
        success &= np.isfinite(parent_ms) & (parent_ms > 0)
        safe_parent_ms = np.where(success, parent_ms, 1.0)
        reward = np.where(success, np.maximum(0.0, (parent_ms - child_ms) / safe_parent_ms), 0.0)
        tokens = ts["prompt_tokens"].fillna(0).to_numpy(np.int64) + ts[
            "completion_tokens"
        ].fillna(0).to_numpy(np.int64)
        cost = ts["cost_usd"].to_numpy(np.float64, na_value=np.nan)
        cost = np.where(np.isfinite(cost), cost, 0.0)
        key = parent * s_count + strategy
        order = np.argsort(key, kind="stable")
        n_k = len(tk)
        counts = np.bincount(key, minlength=n_k * s_count)
        sums = np.bincount(key, weights=reward, minlength=n_k * s_count)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).reshape(n_k, s_count)
        phi = _fill_median(_fixed_list(tk["phi"], 5))
        hw = _fixed_list(tk["hw_sig"], 3)
        hw[~tk["profiled"].to_numpy(bool)] = np.nan
        std = phi.std(axis=0)
        scale[t] = np.where(std > 1e-12, std, 1.0)
        # nearest other kernel (z-scored phi) whose tape for s is not empty
        z = phi / scale[t]
        dist = np.sqrt(((z[:, None, :] - z[None, :, :]) ** 2).sum(-1))
        np.fill_diagonal(dist, np.inf)
        nn = np.full((n_k, s_count), -1, np.int64)
        for s in range(s_count):
            has = counts.reshape(n_k, s_count)[:, s] > 0
            if has.any():
                d = np.where(has[None, :], dist, np.inf)
                best = d.argmin(axis=1)
                ok = np.isfinite(d[np.arange(n_k), best])
                nn[ok, s] = best[ok] + offset
        # fitted env: the k nearest recorded parents (self included) with outcomes for s
        np.fill_diagonal(dist, 0.0)
        fit_nbr = np.full((n_k, s_count, knn), -1, np.int64)
        fit_n = np.zeros((n_k, s_count), np.int64)
        fit_mean = np.zeros((n_k, s_count))
        # least recorded runtime ratio Tc / Tp of each kernel's tape, then of its neighbours'
        ratio = np.where(success, child_ms / safe_parent_ms, np.inf)
        tape_min = np.full(n_k * s_count, np.inf)
        np.minimum.at(tape_min, key, ratio)
        tape_min = tape_min.reshape(n_k, s_count)
        fit_min = np.full((n_k, s_count), np.inf)
        for s in range(s_count):
            has = counts.reshape(n_k, s_count)[:, s] > 0
            if not has.any():
                continue
            d = np.where(has[None, :], dist, np.inf)
            nb_order = np.argsort(d, axis=1, kind="stable")[:, :knn]
            valid = np.isfinite(np.take_along_axis(d, nb_order, axis=1))
            fit_nbr[:, s, : nb_order.shape[1]] = np.where(valid, nb_order + offset, -1)
            fit_n[:, s] = valid.sum(axis=1)
            nb_mean = np.where(valid, mean[np.where(valid, nb_order, 0), s], 0.0)
            fit_mean[:, s] = nb_mean.sum(axis=1) / np.maximum(fit_n[:, s], 1)
            nb_min = np.where(valid, tape_min[np.where(valid, nb_order, 0), s], np.inf)
            fit_min[:, s] = nb_min.min(axis=1)
        # NOTE (D46): the fastest correct runtime recorded for the task (k0's included)
        k0_ms = k_ms[parent[0]] if np.isfinite(k_ms[parent[0]]) else parent_ms[0]
        correct_ms = np.append(child_ms[success], k0_ms)
        correct_ms = correct_ms[np.isfinite(correct_ms) & (correct_ms > 0)]
        floor_ms[t] = float(correct_ms.min()) if correct_ms.size else 0.0
        blocks["fit_min_ratio"].append(fit_min)
        blocks["fit_nbr"].append(fit_nbr)
        blocks["fit_nbr_n"].append(fit_n)
        blocks["fit_mean"].append(fit_mean)
        blocks["k_phi"].append(phi)
        blocks["k_hw"].append(hw)
        blocks["k_roof"].append(_fixed_list(tk["roofline_sig"], 3) if "roofline_sig" in tk
                                else np.full((n_k, 3), np.nan))
        kernel_rows.update({(task, kid): offset + i for kid, i in index.items()})
        blocks["k_prof9"].append(_fill_median(_fixed_list(tk["profile9"], 9)))
        blocks["k_rt6"].append(_fill_median(_fixed_list(tk["runtime_vec"], 6)))
        blocks["k_ms"].append(k_ms)
        blocks["o_success"].append(success[order])
        blocks["o_na"].append((ts["status"].to_numpy() == "not_applicable")[order])
        blocks["o_child"].append(np.where(child >= 0, child + offset, -1)[order])
        blocks["o_child_ms"].append(np.where(success, child_ms, np.nan)[order])
        blocks["o_parent_ms"].append(parent_ms[order])
        blocks["o_reward"].append(reward[order])
        blocks["o_tokens"].append(tokens[order])
        blocks["o_cost"].append(cost[order])
        blocks["tape_mean"].append(mean)
        blocks["tape_nn"].append(nn)
        blocks["tape_counts"].append(counts)
        k0_local = int(parent[0])
        if not np.isfinite(k_ms[k0_local]):
            k_ms[k0_local] = parent_ms[0]
        k0.append(offset + k0_local)
        kstart.append(offset + n_k)
    for name, parts in blocks.items():
        if name != "tape_counts":
            fields[name] = np.concatenate(parts)
    counts_all = np.concatenate(blocks["tape_counts"])
    fields["tape_start"] = np.concatenate([[0], np.cumsum(counts_all)]).astype(np.int64)
    fields["task_kstart"] = np.asarray(kstart, np.int64)
    fields["task_k0"] = np.asarray(k0, np.int64)
    fields["task_scale"] = scale
    fields["task_floor_ms"] = floor_ms
    fields["iparams"][I_MAX_TASK_KERNELS] = int(np.diff(fields["task_kstart"]).max())
    fields["k_shown"] = np.full(kstart[-1], NEVER_SHOWN, np.int64)
    fields["kernel_rows"] = kernel_rows  # not an EnvData field: for `kbsim.envs.reveal`
    return fields, tuple(task_ids)
