"""How far the roofline signature (live.hardware) agrees with Nsight Compute's on recorded kernels.

For every profiled kernel of a trace (``profiler == "ncu"``), the roofline signature is computed
from its recorded per-shape runtimes on the shape Nsight Compute profiled, and compared per
dimension of h(k) = (SM, DRAM, L2): Spearman rank correlation, mean absolute difference (points
of % of peak), and how often each says "saturated" (>= theta_sat) alike. The mask v2 would set
from the kernel as a cluster representative (strategy s masked where h[target(s)] >= theta_sat;
if every strategy is masked, the least saturated one stays open) is compared as a whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from live.hardware import GpuPeaks, kernel_roofline_signature

DIMS = ("SM", "DRAM", "L2")
#: the dimension each strategy targets (kbsim.strategies.TARGET: tiling -> L2, vectorization,
#: fusion -> DRAM, pipeline, reordering -> SM, access_layout -> DRAM)
TARGET = (2, 1, 1, 0, 0, 1)


def v2_mask(hw: Sequence[float], theta_sat: float = 75.0) -> tuple[bool, ...]:
    """v2's mask of one representative: True where the strategy is masked (closed)."""
    targets = [float(hw[t]) for t in TARGET]
    masked = [v >= theta_sat for v in targets]
    if all(masked):  # at least one strategy per non-empty cluster stays open
        masked[int(np.argmin(targets))] = False
    return tuple(masked)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def compare_signatures(kernels: Any, tasks: dict[str, Any], peaks: GpuPeaks,
                       theta_sat: float = 75.0) -> dict[str, Any]:
    """Agreement of roofline and Nsight Compute signatures over `kernels` (a kernels-table
    DataFrame); kernels without an ncu signature, per-shape runtimes or task figures are
    counted as skipped."""
    roof, ncu, task_ids = [], [], []
    skipped = 0
    for row in kernels.itertuples(index=False):
        task = tasks.get(row.task_id)
        hw = row.hw_sig
        if (task is None or row.profiler != "ncu" or hw is None or row.shape_ms is None
                or not bool(row.correct)):
            skipped += 1
            continue
        sig = kernel_roofline_signature(task, list(row.shape_ms), peaks)
        if sig is None or not np.all(np.isfinite(np.asarray(hw, dtype=float))):
            skipped += 1
            continue
        roof.append(sig)
        ncu.append([float(x) for x in hw])
        task_ids.append(row.task_id)
    r, n = np.asarray(roof, dtype=float).reshape(-1, 3), np.asarray(ncu, dtype=float).reshape(-1, 3)
    dims = {}
    for d, name in enumerate(DIMS):
        dims[name] = {
            "spearman": _spearman(r[:, d], n[:, d]),
            "mean_abs_diff": float(np.mean(np.abs(r[:, d] - n[:, d]))) if len(r) else float("nan"),
            "saturated_ncu": float(np.mean(n[:, d] >= theta_sat)) if len(r) else float("nan"),
            "saturated_roofline": float(np.mean(r[:, d] >= theta_sat)) if len(r) else float("nan"),
            "same_saturation": float(np.mean((n[:, d] >= theta_sat) == (r[:, d] >= theta_sat)))
            if len(r) else float("nan"),
        }
    same = [v2_mask(a, theta_sat) == v2_mask(b, theta_sat) for a, b in zip(r, n, strict=True)]
    per_task: dict[str, dict[str, float]] = {}
    for task_id in sorted(set(task_ids)):
        idx = [i for i, t in enumerate(task_ids) if t == task_id]
        per_task[task_id] = {
            "kernels": len(idx), "same_mask": float(np.mean([same[i] for i in idx])),
            "dram_ncu_median": float(np.median(n[idx, 1])),
            "dram_roofline_median": float(np.median(r[idx, 1])),
            "l2_ncu_median": float(np.median(n[idx, 2])),
            "l2_roofline_median": float(np.median(r[idx, 2])),
        }
    return {"kernels": len(r), "skipped": skipped, "theta_sat": theta_sat, "gpu": peaks.key,
            "dims": dims, "same_mask": float(np.mean(same)) if same else float("nan"),
            "per_task": per_task}
