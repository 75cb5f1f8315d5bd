"""`kernelband analyze head-to-head`: two policy runs on the same tasks, paired over tasks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analysis.head_to_head import head_to_head, task_outcomes, write_head_to_head
from analysis.metrics import trace_metrics
from kbsim.trace.reader import load_trace
from kernelband.cli import main
from tests.analysis.fixtures import write_trace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_policies(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fixture trace's two policies (explore, kernelband-v2) as two runs on five tasks."""
    path = write_trace(tmp_path_factory.mktemp("h2h") / "t", n_steps=30,
                       tasks=("softmax", "matmul", "add", "rmsnorm", "cumsum"))
    steps = load_trace(path).steps_df()
    return (steps[steps["policy"] == "kernelband-v2"].reset_index(drop=True),
            steps[steps["policy"] == "explore"].reset_index(drop=True))


def test_point_values_are_the_paper_metrics_of_each_trace(two_policies) -> None:
    v2, explore = two_policies
    result = head_to_head(v2, explore, n_boot=200)
    assert (result.a, result.b) == ("kernelband-v2", "explore")
    metrics = {row.policy: row for row in trace_metrics(pd.concat([v2, explore]))
               .itertuples(index=False)}
    summary = result.summary.set_index("metric")
    for column, policy in [("a", "kernelband-v2"), ("b", "explore")]:
        assert summary.loc["Correct %", column] == pytest.approx(metrics[policy].correct_pct)
        assert summary.loc["Fast@1 %", column] == pytest.approx(metrics[policy].fast1_pct)
        assert summary.loc["geomean speedup", column] == pytest.approx(
            metrics[policy].geomean_speedup)
    geo = summary.loc["geomean speedup"]
    assert geo["difference"] == pytest.approx(geo["a"] / geo["b"])
    # the interval holds the point estimate, and the per-task ratio is A's best over B's
    for row in result.summary.itertuples(index=False):
        assert row.ci_low <= row.difference + 1e-9 and row.difference <= row.ci_high + 1e-9
    tasks = result.per_task.set_index("task_id")
    assert np.allclose(tasks["best_ratio"], tasks["a_best_speedup"] / tasks["b_best_speedup"])


def test_a_policy_against_itself_differs_by_nothing_in_every_resample(two_policies) -> None:
    v2, _ = two_policies
    result = head_to_head(v2, v2.copy(), n_boot=300, seed=3)
    summary = result.summary.set_index("metric")
    assert summary.loc["Correct %", ["difference", "ci_low", "ci_high"]].tolist() == [0, 0, 0]
    assert summary.loc["geomean speedup", ["difference", "ci_low", "ci_high"]].tolist() == \
        pytest.approx([1.0, 1.0, 1.0])


def test_the_bootstrap_resamples_tasks_in_pairs() -> None:
    """A beats B by the same margin on every task: a paired interval is that margin alone
    (an unpaired one would spread with the tasks' own spread)."""
    rows = []
    for policy, factor in (("a", 2.0), ("b", 1.0)):
        for i, task in enumerate(["t1", "t2", "t3", "t4"]):
            parent = 10.0 * (i + 1)
            rows.append({"policy": policy, "run_id": policy, "task_id": task, "step": 0,
                         "strategy": "tiling", "status": "ok", "parent_ms": parent,
                         "ref_ms": 1.0, "speedup_vs_ref": factor * (i + 1) / 4,
                         "cost_usd": 0.0})
    steps = pd.DataFrame(rows)
    result = head_to_head(steps[steps.policy == "a"], steps[steps.policy == "b"], n_boot=500)
    geo = result.summary.set_index("metric").loc["geomean speedup"]
    assert [geo["difference"], geo["ci_low"], geo["ci_high"]] == pytest.approx([2.0, 2.0, 2.0])


def test_several_runs_of_a_task_count_once(two_policies) -> None:
    v2, _ = two_policies
    again = v2.assign(run_id="second")
    table = task_outcomes(pd.concat([v2, again]))
    single = task_outcomes(v2)
    assert (table["runs"] == 2).all()
    assert np.allclose(table["correct"], single["correct"])
    assert np.allclose(table["best_speedup"], single["best_speedup"], equal_nan=True)


def test_bad_inputs_are_one_sentence(two_policies) -> None:
    v2, explore = two_policies
    with pytest.raises(ValueError, match="share no task"):
        head_to_head(v2, explore.assign(task_id="other"))
    with pytest.raises(ValueError, match="holds 2 policies"):
        head_to_head(pd.concat([v2, explore]), explore)


def test_tasks_in_one_trace_only_are_listed_and_everything_is_written(two_policies,
                                                                      tmp_path: Path) -> None:
    v2, explore = two_policies
    result = head_to_head(v2, explore[explore.task_id != "add"], n_boot=100)
    assert result.only_a == ["add"] and result.only_b == []
    paths = write_head_to_head(result, tmp_path / "out")
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    assert "Only in A: add." in (tmp_path / "out" / "head_to_head.md").read_text()
    written = pd.read_csv(tmp_path / "out" / "head_to_head_tasks.csv")
    assert sorted(written["task_id"]) == ["cumsum", "matmul", "rmsnorm", "softmax"]


def test_the_cli_compares_two_shipped_h200_traces(tmp_path: Path) -> None:
    v2, explore = ROOT / "traces" / "policy-v2-h200", ROOT / "traces" / "explore-h200"
    result = CliRunner().invoke(main, ["analyze", "head-to-head", str(v2), str(explore),
                                       "--out", str(tmp_path / "h2h"), "--boot", "200"])
    assert result.exit_code == 0, result.output
    assert "kernelband-v2 (A) against explore (B) on 15 common task(s)" in result.output
    assert "geomean speedup: A 1.547, B 1.797; A / B 0.861" in result.output
    assert (tmp_path / "h2h" / "head_to_head.png").is_file()
    empty = tmp_path / "missing"
    empty.mkdir()
    bad = CliRunner().invoke(main, ["analyze", "head-to-head", str(v2), str(empty),
                                    "--out", str(tmp_path / "x")])
    assert bad.exit_code == 1 and bad.output.count("error:") == 1
