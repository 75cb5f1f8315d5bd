"""Regret cross-check against UCB1: kbsim's `ucb-flat` and UCB1 written from the textbook
(`tests/analysis/test_regret_crosscheck.py`, which holds it and asserts the same), on the
classic K-armed Bernoulli bandit (synthetic spec ``bernoulli``), with Auer et al.'s finite-time
bound. Writes the figure (mean cumulative pseudo-regret of each with its band, 95 % simultaneous
over every T, and the bound; below, the difference of the two means) and prints a Markdown
table for docs/benchmarks.md.

    python benchmarks/regret_crosscheck.py --seeds 1000 --horizon 1000 \\
        --figure docs/regret-crosscheck.png
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.analysis.test_regret_crosscheck import (  # noqa: E402
    auer_bound,
    instance,
    kbsim_regret,
    mean_and_halfwidth,
    textbook_ucb1,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="bernoulli")
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--figure", type=Path, default=None)
    args = parser.parse_args()
    probs, gain = instance(args.spec)
    z = NormalDist().inv_cdf(1 - 0.05 / (2 * args.horizon))
    t0 = time.perf_counter()
    ours = kbsim_regret("ucb-flat", args.spec, args.seeds, args.horizon)
    kbsim_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    theirs = textbook_ucb1(probs, gain, args.horizon, args.seeds, np.random.default_rng(2002))
    textbook_s = time.perf_counter() - t0
    m1, h1 = mean_and_halfwidth(ours, z)
    m2, h2 = mean_and_halfwidth(theirs, z)
    plays = np.arange(1, args.horizon + 1)
    bound = auer_bound(probs, gain, plays)
    se = np.sqrt((h1 / z) ** 2 + (h2 / z) ** 2)
    zscore = np.divide(m1 - m2, se, out=np.zeros_like(se), where=se > 0)
    print(f"spec {args.spec}: success probabilities {[float(p) for p in probs]}, success "
          f"reward {gain}; {args.seeds} seeds, T = 1..{args.horizon}; bands: 95 % "
          f"simultaneous over every T (z = {z:.2f})")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; kbsim {kbsim_s:.1f} s "
          f"(compile included on a first run), textbook UCB1 {textbook_s:.1f} s")
    print(f"intervals overlap at every T: {bool((np.abs(m1 - m2) <= h1 + h2).all())}; "
          f"largest |difference| / its standard error: {np.abs(zscore).max():.2f}; "
          f"bound holds at every T: {bool((np.maximum(m1 + h1, m2 + h2) <= bound).all())}")
    print("\n| T | kbsim ucb-flat R(T) [band] | textbook UCB1 R(T) [band] | difference | "
          "Auer et al. bound |\n| --- | --- | --- | --- | --- |")
    for t in sorted({10, 30, 100, 300, args.horizon} & set(plays.tolist())):
        i = t - 1
        print(f"| {t} | {m1[i]:.2f} [{m1[i] - h1[i]:.2f}, {m1[i] + h1[i]:.2f}] | "
              f"{m2[i]:.2f} [{m2[i] - h2[i]:.2f}, {m2[i] + h2[i]:.2f}] | "
              f"{m1[i] - m2[i]:+.2f} ({100 * (m1[i] - m2[i]) / m2[i]:+.2f} %) | "
              f"{bound[i]:.0f} |")
    if args.figure is not None:
        _figure(args.figure, plays, (m1, h1), (m2, h2), bound, args.seeds)
        print(f"\nfigure: {args.figure}")


def _figure(path: Path, plays: np.ndarray, ours: tuple, theirs: tuple, bound: np.ndarray,
            seeds: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (m1, h1), (m2, h2) = ours, theirs
    fig, (top, low) = plt.subplots(2, 1, figsize=(7.5, 6.5), sharex=True,
                                   gridspec_kw={"height_ratios": [3, 1.3]})
    for mean, half, label, color, width in (
            (m1, h1, "kbsim ucb-flat (c = √2)", "tab:blue", 3.0),
            (m2, h2, "UCB1 from the textbook", "tab:orange", 1.2)):
        top.plot(plays, mean, color=color, label=label, lw=width)
        top.fill_between(plays, mean - half, mean + half, color=color, alpha=0.25, lw=0)
    top.plot(plays, bound, color="black", ls="--", lw=1.2,
             label="Auer et al. (2002) Theorem 1 bound")
    top.set_yscale("log")
    top.set_ylabel("mean cumulative pseudo-regret R(T)")
    top.set_title(f"6-armed Bernoulli bandit (p = 0.9 … 0.4, reward 0.5), {seeds} seeds; "
                  "bands 95 % simultaneous", fontsize=9)
    top.legend(fontsize=8, loc="lower right")
    low.plot(plays, m1 - m2, color="tab:purple", lw=1.2, label="kbsim − textbook")
    low.fill_between(plays, -(h1 + h2), h1 + h2, color="grey", alpha=0.3, lw=0,
                     label="sum of the two half-widths")
    low.axhline(0, color="black", lw=0.6)
    low.set_xscale("log")
    low.set_xlabel("T (plays)")
    low.set_ylabel("difference")
    low.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
