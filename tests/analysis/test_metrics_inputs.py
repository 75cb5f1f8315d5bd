"""Input detection, paper metrics and the analyze pipeline on small schema-v1 inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import metrics
from analysis.inputs import InputError, detect_kind, load_input
from analysis.pipeline import Analysis, analyze_input, clusters_of, markdown_table, write_analysis


def test_detects_both_kinds(trace_dir: Path, results_dir: Path) -> None:
    assert detect_kind(trace_dir) == "trace"
    assert detect_kind(results_dir) == "results"
    loaded = load_input(results_dir)
    assert loaded.params["params"]["steps"] == 300
    assert len(loaded.results) == 2 * 8 * 300


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "no such file"),
        (lambda p: (p / "f.txt").write_text("x") and p / "f.txt", "not a directory"),
        (lambda p: p, "neither a trace dataset"),
    ],
)
def test_bad_inputs_say_why(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(InputError, match=message):
        detect_kind(make(tmp_path))


def _steps(rows: list[tuple]) -> pd.DataFrame:
    cols = ["policy", "run_id", "task_id", "step", "strategy", "status", "parent_ms", "ref_ms",
            "speedup_vs_ref", "cost_usd"]
    return pd.DataFrame(rows, columns=cols)


def test_paper_metrics_by_hand() -> None:
    steps = _steps([
        # task a: k0 at 2 ms vs ref 1 ms (0.5x); a 4x-faster child: speedup 2
        ("p", "r", "a", 0, "tiling", "ok", 2.0, 1.0, 2.0, 0.01),
        ("p", "r", "a", 1, "fusion", "incorrect", 0.5, 1.0, None, 0.01),
        # task b: only a correct but slower child (0.8x)
        ("p", "r", "b", 0, "fusion", "ok", 2.0, 1.0, 0.8, 0.01),
        # task c: nothing correct
        ("p", "r", "c", 0, "pipeline", "compile_error", 2.0, 1.0, None, 0.01),
    ])
    table = metrics.trace_metrics(steps).iloc[0]
    assert table["runs"] == 3
    assert table["correct_pct"] == pytest.approx(200 / 3)
    assert table["fast1_pct"] == pytest.approx(100 / 3)
    assert table["geomean_speedup"] == pytest.approx(np.sqrt(2.0 * 0.8))
    assert table["total_cost_usd"] == pytest.approx(0.04)
    strat = metrics.strategy_table_trace(steps).set_index("strategy")
    assert strat.loc["tiling", "share_of_best"] == pytest.approx(0.5)
    assert strat.loc["fusion", "success_rate"] == pytest.approx(0.5)
    curve = metrics.speedup_curves_trace(steps)
    # step 1 of task a: best so far is 2.0 (child of step 0), parents never lower it
    assert curve.loc[curve["t"] == 2, "geomean_best_speedup"].iloc[0] == pytest.approx(2.0)


def test_results_metrics_and_shares(results_dir: Path) -> None:
    res = load_input(results_dir).results
    table = metrics.results_metrics(res).set_index("policy")
    # a replay run is correct when one of its attempts succeeded (k0 does not count)
    runs = res.groupby(["policy", "task_id", "seed"])["success"].any()
    assert table.loc["random", "correct_pct"] == pytest.approx(100 * runs.loc["random"].mean())
    assert not table["correct_pct"].isna().any()
    assert table.loc["random", "mean_regret"] > table.loc["kernelband-v2:K=3", "mean_regret"]
    shares = metrics.strategy_table_results(res)
    total = shares.groupby("policy")["share_of_best"].sum()
    assert np.allclose(total, 1.0)


def test_analyze_results_end_to_end(results_dir: Path, tmp_path: Path) -> None:
    analysis = analyze_input(load_input(results_dir), n_boot=200)
    slopes = analysis.tables["regret_slopes"].set_index("policy")
    assert slopes.loc["random", "growth"] == "linear"
    assert slopes.loc["kernelband-v2:K=3", "growth"] == "logarithmic"
    assert slopes.loc["random", "regret_over_bound"] < 1.0
    written = {p.name for p in write_analysis(analysis, tmp_path / "out")}
    assert {"regret.png", "regret_slopes.csv", "tables.md", "metrics.csv"} <= written
    assert (tmp_path / "out" / "regret.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## regret_slopes" in (tmp_path / "out" / "tables.md").read_text()


def test_analyze_trace_end_to_end(trace_analysis: Analysis) -> None:
    analysis = trace_analysis
    assert {"lipschitz", "covering", "cluster_validity", "metrics"} <= set(analysis.tables)
    validity = analysis.tables["cluster_validity"]
    assert set(validity["k"]) == set(range(1, 9))
    assert analysis.context["hardware"]["gpu"].startswith("NVIDIA H100")
    assert set(analysis.figures) >= {"speedup", "strategies", "covering", "cluster_validity"}


def test_helpers() -> None:
    assert clusters_of("kernelband-v2:K=5,c=1.0") == 5
    assert clusters_of("ucb-flat") == 3
    md = markdown_table(pd.DataFrame({"a": [1.23456789, float("nan")], "b": ["x|y", "z"]}))
    assert md.splitlines()[2] == "| 1.235 | x\\|y |"
