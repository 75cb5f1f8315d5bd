"""The verdict: ranking and paired intervals recover a planted best policy; growth verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.inputs import load_input
from analysis.pipeline import analyze_input, markdown_table, write_analysis
from analysis.slopes import GrowthFit, SlopeFit, growth_verdict
from analysis.verdict import (
    final_runs,
    final_runs_from_summary,
    in_words,
    question_text,
    ranking_text,
    regret_verdicts,
    span_text,
    two_stage_bootstrap,
    verdict_table,
)
from tests.analysis.fixtures import planted_results, results_frame, write_planted_results

#: planted log-speedup effects: "best" leads, "twin" is its equal, "mid" is 10 % behind
EFFECTS = {"mid": np.log(0.9), "best": 0.0, "twin": 0.0, "worst": np.log(0.7)}


@pytest.fixture(scope="module")
def planted() -> object:
    runs = final_runs(planted_results(EFFECTS, envs=("tape", "fitted"), n_seeds=20))
    return verdict_table(runs, rng=np.random.default_rng(0), n_boot=1000)[0]


def test_ranking_recovers_the_planted_order(planted) -> None:
    for env in ("tape", "fitted"):
        part = planted[planted["env"] == env].set_index("policy")
        assert part.loc["mid", "rank"] == 3 and part.loc["worst", "rank"] == 4
        assert {part.index[part["rank"] == 1][0], part.index[part["rank"] == 2][0]} == \
            {"best", "twin"}
    # the recorded data (tape) leads, the fitted model follows
    assert list(dict.fromkeys(planted["env"])) == ["tape", "fitted"]


def test_paired_intervals_cover_the_planted_ratios(planted) -> None:
    part = planted[planted["env"] == "tape"].set_index("policy")
    best = part.index[part["rank"] == 1][0]
    mid, worst = part.loc["mid"], part.loc["worst"]
    assert mid["ratio_ci_low"] <= 0.9 <= mid["ratio_ci_high"]
    assert worst["ratio_ci_low"] <= 0.7 <= worst["ratio_ci_high"]
    assert mid["distinguishable"] and worst["distinguishable"]
    # the planted twin of the best is not called worse
    twin = part.loc["twin" if best == "best" else "best"]
    assert not twin["distinguishable"] and twin["ratio_ci_high"] >= 1.0
    # pairing matters: the per-policy intervals (task spread) overlap, the paired one does not
    assert mid["ci_high"] > part.loc[best, "ci_low"]
    assert mid["ratio_ci_high"] < 1.0
    assert mid["in_words"].startswith(f"mid is 10 % behind {best} [")


def test_in_words_and_spans() -> None:
    assert in_words("kernelband-v2", "greedy", 0.9, 0.87, 0.93, 95) == \
        "kernelband-v2 is 10 % behind greedy [7.0 %, 13 %]"
    assert in_words("a", "b", 0.98, 0.95, 1.01, 95).endswith("not distinguishable from b at 95 %")
    assert span_text(list(range(100))) == "0–99 (100)"
    assert span_text([f"task-{i}" for i in range(24)]).endswith("… (24)")


def test_two_stage_bootstrap_weights() -> None:
    plan = two_stage_bootstrap(4, 5, n_boot=50, rng=np.random.default_rng(0))
    assert plan.task_idx.shape == (50, 4) and plan.seed_weight.shape == (50, 4, 5)
    assert np.allclose(plan.seed_weight.sum(axis=2), 1.0)
    constant = np.full((4, 5), 2.0)
    assert np.allclose(plan.means(constant), 2.0)


def test_summary_and_results_give_the_same_runs() -> None:
    results = planted_results({"a": 0.0, "b": -0.1}, n_tasks=2, n_seeds=3, n_steps=5)
    runs = final_runs(results)
    summary = runs.rename(columns={"best_speedup": "final_best_speedup"}).assign(horizon=5)
    assert final_runs_from_summary(summary).equals(runs)


def test_analyze_opens_with_the_verdict(tmp_path: Path) -> None:
    root = write_planted_results(tmp_path / "res", EFFECTS, n_seeds=10)
    analysis = analyze_input(load_input(root), n_boot=200)
    (sentence,) = analysis.verdict  # one environment, no kernelband-v2 to single out
    assert sentence.startswith("[tape] Best: ")
    assert "1 of the other 3 policies are not distinguishable from it at 95 %" in sentence
    assert analysis.question["steps"] == 40 and analysis.question["seeds"] == "0–9 (10)"
    write_analysis(analysis, tmp_path / "out")
    md = (tmp_path / "out" / "tables.md").read_text()
    assert md.index("## Verdict") < md.index("## metrics")
    assert "Which of 4 policies finds the fastest kernels" in md
    assert (tmp_path / "out" / "verdict.csv").is_file()
    assert markdown_empty_columns(md) == []
    text = ranking_text(analysis.tables["verdict"])
    assert text.splitlines()[0].startswith("ranking [tape]")
    assert "mid" in text and "% behind" in text


def markdown_empty_columns(md: str) -> list[str]:
    """Columns of the Markdown tables in ``md`` with no value in any row."""
    empty, block = [], []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split(" | ")])
            continue
        if len(block) > 2:
            header, rows = block[0], block[2:]
            empty += [name for i, name in enumerate(header) if not any(r[i] for r in rows)]
        block = []
    return empty


def test_markdown_tables_leave_empty_columns_out() -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [np.nan, np.nan], "c": ["x", ""]})
    md = markdown_table(frame)
    assert markdown_empty_columns(md) == []
    assert md.splitlines()[0] == "| a | c |" and "(left out, empty for every row: b)" in md


def test_short_horizon_growth_is_inconclusive() -> None:
    res = results_frame(n_steps=40).to_pandas()
    from analysis.pipeline import slope_table

    slopes, _ = slope_table(res, rng=np.random.default_rng(0), n_boot=100)
    assert set(slopes["growth"]) == {"inconclusive"}
    assert slopes["growth_reason"].str.startswith("inconclusive at T = 40 (18 arms)").all()
    # the shape that fits best is still recorded, apart from the verdict
    assert "linear" in set(slopes["growth_fit"])


def test_growth_sentences_group_the_reasons() -> None:
    from analysis.pipeline import slope_table

    res = results_frame(n_steps=40).to_pandas()
    slopes, _ = slope_table(res, rng=np.random.default_rng(0), n_boot=100)
    (line,) = regret_verdicts(slopes)
    assert line.startswith("No growth rate for kernelband-v2:K=3 [synthetic], random "
                           "[synthetic]: inconclusive at T = 40 (18 arms), 2.2 pulls per arm")
    long, _ = slope_table(results_frame().to_pandas(), rng=np.random.default_rng(0), n_boot=100)
    lines = regret_verdicts(long)
    assert lines[0].startswith("kernelband-v2:K=3 [synthetic]: logarithmic: slope")
    assert lines[1].startswith("random [synthetic]: linear: slope")
    drifting = long.assign(comparator_drifts=True, comparator_rise=0.05, regret_per_step=0.1)
    assert "the comparator (the best arm of the growing pool) rose by 0.05" in \
        regret_verdicts(drifting)[-3]


def _fit(slope: float, low: float, high: float) -> SlopeFit:
    return SlopeFit(slope, low, high, 0.0, 0.0, 30.0, 300.0, 8, 100, 0.95)


def _shape(kind: str) -> GrowthFit:
    return GrowthFit(kind, 1.0, 1.0, 0.0, 0.1, 0.1, 1.0, 1.0)


@pytest.mark.parametrize(
    ("fit", "shape", "rise", "kind", "says"),
    [
        (_fit(1.0, 0.97, 1.03), "linear", 0.0, "linear", "lies above 0.9"),
        (_fit(0.4, 0.35, 0.45), "logarithmic", 0.0, "logarithmic", "lies below 0.9"),
        (_fit(0.85, 0.7, 1.0), "power", 0.0, "inconclusive", "straddles 0.9"),
        (_fit(1.2, 1.1, 1.3), "linear", 0.05, "inconclusive", "slope of 1.20 > 1 reflects"),
        (_fit(0.0, 0.0, 0.0), "flat", 0.0, "flat", "stops growing"),
        (_fit(1.0, float("nan"), float("nan")), "linear", 0.0, "inconclusive", "no slope"),
    ],
)
def test_growth_verdict_criterion(fit: SlopeFit, shape: str, rise: float, kind: str,
                                  says: str) -> None:
    verdict = growth_verdict(fit, _shape(shape), horizon=300, n_arms=18, comparator_rise=rise,
                             regret_per_step=0.1)
    assert verdict.kind == kind
    assert says in verdict.reason


def test_question_names_trace_or_synthetic_instance() -> None:
    text = question_text({"policies": ["kernelband-v2", "kernelband-v2:K=5", "greedy"],
                          "instance": "default,tasks=3", "envs": ["synthetic"], "tasks": 3,
                          "steps": 30, "seeds": "0–4 (5)"})
    assert text == ("Which of 3 policies finds the fastest kernels on the synthetic instance "
                    "default,tasks=3? Replayed in the synthetic environment, 3 task(s), T = 30 "
                    "attempts per run, seeds 0–4 (5). Policies: kernelband-v2 (2 settings), "
                    "greedy.")
    assert "on the trace traces/x recorded on NVIDIA H200 with the mutate proposer?" in \
        question_text({"trace": "traces/x", "gpu": "NVIDIA H200", "proposer": "mutate"})


def test_question_names_a_trace_by_a_relative_path_not_the_machines(tmp_path, monkeypatch):
    from analysis.pipeline import _shown_path

    monkeypatch.chdir(tmp_path)
    inside = tmp_path / "traces" / "explore-h200"
    assert _shown_path(str(inside)) == "traces/explore-h200"
    assert _shown_path("/elsewhere/runs/explore-h200") == "explore-h200"
    assert _shown_path("traces/explore-h200") == "traces/explore-h200"


def test_runs_that_stopped_before_their_first_step_stay_in_the_paired_verdict(
        tmp_path: Path) -> None:
    """A replay run that stops at once (nothing applicable to k0) writes no step rows, only its
    summary row. Here one task has such a run on seeds 0-2 and another on seeds 3-5: read from
    the step rows alone no seed is complete on every task, so the environment's verdict came
    out empty; read with the summary, those runs count at k0's speedup."""
    root = write_planted_results(tmp_path / "res", EFFECTS, envs=("tape", "fitted"), n_seeds=6)
    part = root / "part-00000.parquet"
    frame = pd.read_parquet(part)
    summary = final_runs(frame).rename(columns={"best_speedup": "final_best_speedup"})
    horizon = int(frame["step"].max()) + 1
    summary = summary.assign(horizon=horizon, steps_run=horizon)
    first, second = sorted(frame["task_id"].unique())[:2]
    stopped = (frame["env"] == "fitted") & (frame["policy"] == "worst") & (
        ((frame["task_id"] == first) & (frame["seed"] < 3))
        | ((frame["task_id"] == second) & (frame["seed"] >= 3)))
    frame[~stopped].to_parquet(part, index=False)
    key = ["policy", "env", "task_id", "seed"]
    gone = frame[stopped][key].drop_duplicates().assign(at_k0=True)
    at_k0 = summary.merge(gone, on=key, how="left")["at_k0"].eq(True).to_numpy()
    summary.loc[at_k0, ["final_best_speedup", "steps_run"]] = [1.0, 0]
    assert at_k0.sum() == 6
    without = analyze_input(load_input(root), n_boot=200)  # the step rows alone
    assert set(without.tables["verdict"]["env"]) == {"tape"}
    summary.to_parquet(root / "_summary.parquet", index=False)
    fixed = analyze_input(load_input(root), n_boot=200)
    verdict = fixed.tables["verdict"]
    assert set(verdict["env"]) == {"tape", "fitted"}
    assert (verdict.loc[verdict["env"] == "fitted", "n_seeds"] == 6).all()
    (note,) = [n for n in fixed.notes if "stopped before their first step" in n]
    assert note.startswith("fitted: 6 run(s)")
