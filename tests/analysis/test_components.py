"""Component ablations: planted effects against full v2 come back with paired intervals and the
right words; the preset names canonical specs; `replay --preset components` prints the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analysis.components import (
    component_markdown,
    component_table,
    component_text,
    components_html,
    effect_words,
)
from kbsim.policies import parse_policy
from kbsim.replay.presets import COMPONENT_BASELINE, COMPONENTS, get_preset
from kbsim.trace.synthetic_trace import write_synthetic_trace
from kernelband.cli import main

#: planted log effects against full v2: a parent rule 10 % faster, no clustering 20 % slower,
#: masks off no effect
PLANTED = {COMPONENT_BASELINE: 0.0, "kernelband-v2:parent=fastest": np.log(1.1),
           "kernelband-v2:K=1": np.log(0.8), "kernelband-v2-nomask": 0.0}


def _runs(effects: dict[str, float], n_tasks: int = 8, n_seeds: int = 30) -> pd.DataFrame:
    gen = np.random.default_rng(3)
    task = gen.normal(0.5, 0.4, n_tasks)  # tasks differ a lot, shared by every policy
    rows = []
    for env in ("tape", "fitted"):
        for policy, effect in effects.items():
            for t in range(n_tasks):
                for s in range(n_seeds):
                    rows.append({"policy": policy, "env": env, "task_id": f"t{t}", "seed": s,
                                 "best_speedup": float(np.exp(task[t] + effect
                                                              + gen.normal(0, 0.03)))})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return component_table(_runs(PLANTED), rng=np.random.default_rng(0), n_boot=500)


def test_planted_effects_come_back_with_paired_intervals(table) -> None:
    assert list(table["env"].unique()) == ["tape", "fitted"]
    for env in ("tape", "fitted"):
        part = table[table["env"] == env].set_index("policy")
        assert list(part.index) == [p for p in COMPONENTS if p in PLANTED]  # preset order
        fast = part.loc["kernelband-v2:parent=fastest"]
        assert fast["effect_ci_low"] < 10.0 < fast["effect_ci_high"]
        assert fast["effect_ci_low"] > 5.0 and fast["measurable"]
        flat = part.loc["kernelband-v2:K=1"]
        assert flat["effect_ci_low"] < -20.0 < flat["effect_ci_high"] < -15.0
        nomask = part.loc["kernelband-v2-nomask"]
        assert nomask["effect_ci_low"] < 0.0 < nomask["effect_ci_high"]
        assert not nomask["measurable"]
        # paired intervals are much narrower than the per-policy ones (tasks differ a lot)
        width = fast["effect_ci_high"] - fast["effect_ci_low"]
        assert width < 100 * (fast["ci_high"] / fast["ci_low"] - 1) / 3


def test_sentences_say_which_part_costs_and_which_helps(table) -> None:
    words = dict(zip(table["policy"], table["in_words"], strict=False))
    assert words["kernelband-v2:parent=fastest"].startswith("the headroom parent rule costs ")
    assert words["kernelband-v2:K=1"].startswith("clustering (K = 3) helps: with K = 1")
    assert "no measurable effect at 95 %" in words["kernelband-v2-nomask"]
    assert effect_words("x", "the part", 7.0, 3.0, 11.0, 95) == (
        "the part costs 7.0 % [3.0 %, 11 %]: with x, v2 finds faster kernels")
    text = component_text(table)
    assert text.startswith("components [tape]: each variant's geometric-mean best speedup")
    assert "  masks off " in text and "baseline" in text
    html = components_html(table, prefix="builtin-")
    assert "id='builtin-components'" in html and "the headroom parent rule costs" in html
    assert "| parent = fastest member of the cluster | `kernelband-v2:parent=fastest` |" in (
        component_markdown(table))


def test_no_table_without_full_v2_or_without_a_variant() -> None:
    runs = _runs({"kernelband-v2:K=1": 0.0, "greedy": 0.0}, n_tasks=2, n_seeds=3)
    assert component_table(runs, rng=np.random.default_rng(0), n_boot=50).empty
    runs = _runs({COMPONENT_BASELINE: 0.0, "kernelband-v2:K=5": 0.0}, n_tasks=2, n_seeds=3)
    assert component_table(runs, rng=np.random.default_rng(0), n_boot=50).empty
    assert components_html(None) == ""


def test_the_preset_holds_every_component_as_a_canonical_spec() -> None:
    preset = get_preset("components")
    assert preset.policies == tuple(COMPONENTS) and preset.policies[0] == COMPONENT_BASELINE
    assert all(str(parse_policy(p)) == p for p in preset.policies)  # results name them so


def test_replay_with_the_components_preset_prints_the_component_table(tmp_path) -> None:
    trace = write_synthetic_trace(tmp_path / "trace", 300, 2, seed=4)
    result = CliRunner().invoke(main, ["replay", "--no-progress", "--trace", str(trace),
                                       "--preset", "components", "--seeds", "3",
                                       "--steps", "15"])
    assert result.exit_code == 0, result.output
    section = result.output.split("\ncomponents [tape]: ")[1]
    for change, _ in COMPONENTS.values():
        assert change in section
    assert "(2 task(s) × 3 seed(s))" in section
