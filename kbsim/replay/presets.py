"""Named policy grids for `kernelband replay --preset NAME`.

``paper-ablation`` is the paper's ablation grid: KernelBand v2 with K in {1, 2, 3, 5}, masks on
and off, the exploration constant c and the saturation threshold theta_sat swept around their
defaults (c = 2, theta_sat = 75), v1 with alpha in {0, 0.25, 0.5, 0.75, 1.0}, and every baseline,
summarised at T = 20 and T = 40. Policies are anytime (nothing depends on T), so one 40-step run
gives both horizons exactly: the first 20 steps of a 40-step episode are a 20-step episode.

``components`` changes one part of KernelBand v2 at a time (`COMPONENTS`: masks, clustering,
the arm rule, the parent rule) and adds the converse, greedy's parent under a UCB over the
strategies, with greedy for reference; `analysis.components` compares each with full v2.
"""

from __future__ import annotations

from dataclasses import dataclass

BASELINES: tuple[str, ...] = ("bon", "greedy", "random", "ucb-flat", "eps-greedy", "thompson")

#: the eight policies of the ablation-grid benchmark (benchmarks/bench_replay.py)
BENCH_POLICIES: tuple[str, ...] = ("kernelband-v2", "kernelband-v1", *BASELINES)


#: the component preset's full KernelBand v2, what every variant is compared with
COMPONENT_BASELINE = "kernelband-v2"
#: policy spec -> (what changes against full v2, the part of v2 that change tests); specs are
#: canonical (`str(parse_policy(spec))`), as results name them
COMPONENTS: dict[str, tuple[str, str]] = {
    COMPONENT_BASELINE: ("none (full KernelBand v2)", "full KernelBand v2"),
    "kernelband-v2-nomask": ("masks off", "masking"),
    "kernelband-v2:K=1": ("K = 1 (no clustering)", "clustering (K = 3)"),
    "eps-greedy:eps=1": ("arm uniform among open arms", "the UCB arm rule"),
    "kernelband-v2:parent=fastest": ("parent = fastest member of the cluster",
                                     "the headroom parent rule"),
    "kernelband-v2:parent=speed": ("parent = softmax over log speedup",
                                   "the headroom parent rule"),
    "kernelband-v2:K=1,mask=0,parent=fastest": (
        "greedy parent, UCB over strategies",
        "clustering, masking and the headroom parent together"),
    "greedy": ("greedy (fastest kernel, uniform strategy)",
               "everything KernelBand adds to greedy"),
}


@dataclass(frozen=True)
class Preset:
    name: str
    policies: tuple[str, ...]
    steps: int
    horizons: tuple[int, ...]
    description: str


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "paper-ablation",
            (
                "kernelband-v2",
                *(f"kernelband-v2:K={k}" for k in (1, 2, 5)),
                "kernelband-v2-nomask",
                *(f"kernelband-v2:c={c}" for c in (0.5, 1.0, 4.0)),
                *(f"kernelband-v2:theta_sat={t}" for t in (60, 70, 80, 90)),
                *(f"kernelband-v1:alpha={a}" for a in (0.0, 0.25, 0.5, 0.75, 1.0)),
                *BASELINES,
            ),
            40,
            (20, 40),
            "K in {1,2,3,5}, masks on/off, c and theta_sat sweeps, v1 alpha sweep, baselines",
        ),
        Preset(
            "baselines",
            BENCH_POLICIES,
            40,
            (20, 40),
            "KernelBand v2 and v1 against every baseline",
        ),
        Preset(
            "k-sweep",
            tuple(f"kernelband-v2:K={k}" for k in (1, 2, 3, 5)),
            40,
            (20, 40),
            "KernelBand v2 with K in {1, 2, 3, 5}",
        ),
        Preset(
            "components",
            tuple(COMPONENTS),
            40,
            (20, 40),
            "KernelBand v2 with one part changed at a time (masks, K = 1, arm rule, parent "
            "rule), greedy parent with a strategy bandit, and greedy",
        ),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called `name`; a clear error naming the valid ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown preset {name!r}; expected one of {', '.join(PRESETS)}."
        ) from None
