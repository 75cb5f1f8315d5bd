"""Sim-to-real check on planted data: exact reproduction gives no gap, a planted factor gives
exactly that gap, matched worlds a small one and mismatched worlds a large one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from analysis.sim2real import run_sim2real, sim2real_markdown, write_sim2real
from tests.analysis.sim2real_fixtures import (
    CAPPED_WORLD,
    EXPLORE_STEPS,
    OPEN_WORLD,
    POLICY_STEPS,
    WORLD,
    record,
    truncate_task,
    with_reference,
)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sim2real")
    v2 = record(root / "v2", WORLD, "kernelband-v2", POLICY_STEPS)
    return {
        "v2": v2,
        "explore": record(root / "explore", WORLD, "explore", EXPLORE_STEPS),
        "v2_ref1": with_reference(v2, root / "v2_ref1", 1.0),
        "v2_ref2": with_reference(v2, root / "v2_ref2", 2.0),
        "capped": record(root / "capped", CAPPED_WORLD, "explore", EXPLORE_STEPS),
        "open_v2": record(root / "open_v2", OPEN_WORLD, "kernelband-v2", POLICY_STEPS),
        "v2_two_tasks": record(root / "v2_two", "default,tasks=2,seed=0", "kernelband-v2",
                               POLICY_STEPS),
        "v2_short": truncate_task(v2, root / "v2_short", "syn-001", 12),
    }


def _tasks(table):
    return table[table["task_id"] != "geomean"]


def _geomean(table, env: str):
    return table[(table["task_id"] == "geomean") & (table["env"] == env)].iloc[0]


def test_replaying_the_recorded_run_on_its_own_tape_has_no_gap(traces) -> None:
    # seed 0 on the tape of the run itself reproduces it step by step (tests/kbsim: exact)
    result = run_sim2real(traces["v2"], traces["v2"], seeds=[0], envs=["tape"])
    assert result.policy == "kernelband-v2" and result.steps == POLICY_STEPS
    per_task = _tasks(result.table)
    assert len(per_task) == 3 and (per_task["steps_compared"] == POLICY_STEPS).all()
    assert np.allclose(per_task["final_log_ratio"], 0.0, atol=1e-12)
    assert np.allclose(per_task["mean_abs_log_gap"], 0.0, atol=1e-12)
    assert (per_task["in_band_frac"] == 1.0).all()
    assert (per_task["basis"] == "k0").all()  # the recorder writes no reference timings
    assert any("no reference timings" in n for n in result.notes)
    # the real curve is a best-so-far: it never falls, and it beats k0 somewhere
    real = result.curves.sort_values(["task_id", "t"]).groupby("task_id")["real"]
    assert real.apply(lambda c: bool(np.all(np.diff(c.to_numpy()) >= 0))).all()
    assert result.curves["real"].max() > 1.0


def test_speedups_are_over_the_reference_each_trace_records(traces) -> None:
    # same runs, but the policy trace's reference is twice as slow: real speedups double
    result = run_sim2real(traces["v2_ref1"], traces["v2_ref2"], seeds=[0], envs=["tape"])
    per_task = _tasks(result.table)
    assert (per_task["basis"] == "ref").all()
    assert np.allclose(per_task["final_ratio"], 0.5)
    assert np.allclose(per_task["mean_abs_log_gap"], math.log(2.0))
    assert (per_task["in_band_frac"] == 0.0).all()
    assert math.isclose(_geomean(result.table, "tape")["final_ratio"], 0.5)
    # and with the same reference on both sides the gap is zero again
    same = run_sim2real(traces["v2_ref1"], traces["v2_ref1"], seeds=[0], envs=["tape"])
    assert np.allclose(_tasks(same.table)["final_log_ratio"], 0.0, atol=1e-12)


def test_exploration_of_the_same_world_predicts_the_run_closely(traces) -> None:
    result = run_sim2real(traces["explore"], traces["v2"], seeds=40)
    assert set(result.table["env"]) == {"tape", "fitted"}
    for env in ("tape", "fitted"):
        summary = _geomean(result.table, env)
        assert summary["mean_abs_log_gap"] < 0.2, (env, summary.to_dict())
        assert abs(summary["final_log_ratio"]) < 0.25, (env, summary.to_dict())
    # the band is a band: 10 % <= median <= 90 % at every step
    curves = result.curves
    assert (curves["pred_q10"] <= curves["pred_median"]).all()
    assert (curves["pred_median"] <= curves["pred_q90"]).all()
    assert (curves["seeds"] == 40).all()


def test_exploration_of_a_different_world_shows_a_large_gap(traces) -> None:
    # the exploration world caps speedups at 1.5x; the real run's world lets v2 go far beyond
    result = run_sim2real(traces["capped"], traces["open_v2"], seeds=40)
    for env in ("tape", "fitted"):
        summary = _geomean(result.table, env)
        assert summary["final_ratio"] < 0.8, (env, summary.to_dict())
        assert summary["mean_abs_log_gap"] > 0.2, (env, summary.to_dict())
        assert summary["in_band_frac"] < 0.25, (env, summary.to_dict())
    assert (result.curves["pred_q90"] <= 1.5 + 1e-9).all()


def test_tasks_in_one_trace_only_are_listed(traces) -> None:
    result = run_sim2real(traces["v2"], traces["v2_two_tasks"], seeds=2, envs=["fitted"])
    assert result.only_in_explore == ["syn-002"] and result.only_in_policy == []
    assert sorted(_tasks(result.table)["task_id"]) == ["syn-000", "syn-001"]
    assert any("only in the exploration trace" in n and "syn-002" in n for n in result.notes)


def test_a_real_run_that_stopped_early_is_compared_over_its_steps(traces) -> None:
    result = run_sim2real(traces["v2"], traces["v2_short"], seeds=[0], envs=["tape"])
    short = result.table[result.table["task_id"] == "syn-001"].iloc[0]
    assert short["steps_compared"] == 12 and not short["complete"]
    assert result.steps == POLICY_STEPS
    assert any("stopped before" in n and "syn-001" in n for n in result.notes)


@pytest.mark.parametrize(
    ("which", "kwargs", "message"),
    [
        ("no_overlap", {}, "share no task"),
        ("same", {"envs": ["synthetic"]}, "unknown replay environment"),
        ("same", {"steps": 0}, "steps must be >= 1"),
        ("missing", {}, r"\S"),
    ],
)
def test_bad_input_is_one_sentence(traces, tmp_path: Path, which: str, kwargs: dict,
                                   message: str) -> None:
    from tests.analysis.fixtures import write_trace

    policy = {"no_overlap": write_trace(tmp_path / "other", tasks=("softmax",)),
              "same": traces["v2"], "missing": tmp_path / "nope"}[which]
    with pytest.raises(ValueError, match=message) as info:
        run_sim2real(traces["v2"], policy, seeds=2, **kwargs)
    assert "\n" not in str(info.value)


def test_written_files_and_markdown(traces, tmp_path: Path) -> None:
    result = run_sim2real(traces["v2_ref1"], traces["v2_ref2"], seeds=3, envs=["tape"])
    written = write_sim2real(result, tmp_path / "out")
    assert sorted(p.name for p in written) == sorted(
        ["sim2real.csv", "sim2real_curves.csv", "sim2real.json", "sim2real.md", "sim2real.png"])
    assert all(p.stat().st_size > 0 for p in written)
    saved = json.loads((tmp_path / "out" / "sim2real.json").read_text())
    assert saved["policy"] == "kernelband-v2" and saved["seeds"] == 3
    assert {row["task_id"] for row in saved["table"]} == {"syn-000", "syn-001", "syn-002",
                                                          "geomean"}
    md = sim2real_markdown(result)
    assert md.count("\n| tape |") == 4 and "**geomean**" in md
    assert "speedups over the reference." in md


REAL = Path(__file__).resolve().parents[2] / "traces" / "live-v2-mutate-h100"


@pytest.mark.skipif(not (REAL / "manifest.json").exists(), reason="the small real trace is absent")
def test_the_real_h100_run_replays_onto_itself_exactly() -> None:
    # the live runner and replay share the policy, its seeding and the step order: seed 0 on the
    # run's own tape reproduces every best-so-far, over the median reference (basis ref)
    result = run_sim2real(REAL, REAL, seeds=[0], envs=["tape"])
    per_task = _tasks(result.table)
    assert len(per_task) == 6 and (per_task["basis"] == "ref").all()
    assert np.allclose(per_task["final_log_ratio"], 0.0, atol=1e-12)
    assert np.allclose(per_task["mean_abs_log_gap"], 0.0, atol=1e-12)
    layernorm = per_task[per_task["task_id"] == "layernorm"].iloc[0]
    # its first row's reference timing is an outlier (0.326 ms, median 0.198): not the best
    assert 1.0 < layernorm["real_final"] < 1.05


def test_a_policy_trace_with_several_policies_compares_the_manifests_one(traces,
                                                                          tmp_path: Path) -> None:
    from tests.analysis.fixtures import write_trace

    # fixture trace: runs of explore and kernelband-v2 on softmax/matmul, manifest says explore
    mixed = write_trace(tmp_path / "mixed", tasks=("syn-000",))
    manifest = json.loads((mixed / "manifest.json").read_text())
    manifest["policy"]["spec"] = "kernelband-v2"
    (mixed / "manifest.json").write_text(json.dumps(manifest))
    result = run_sim2real(traces["v2"], mixed, seeds=2, envs=["tape"])
    assert result.policy == "kernelband-v2"
    assert (result.curves["runs"].dropna() == 1).all()  # the explore run is not mixed in
    assert any("also holds runs of explore" in n for n in result.notes)


@pytest.mark.skipif(not (REAL / "manifest.json").exists(), reason="the small real trace is absent")
def test_a_trace_recorded_before_the_not_applicable_rule_replays_under_it() -> None:
    from analysis.sim2real import na_rule_of

    # recorded before issue #18 (no manifest key): its not_applicable rows spent steps
    assert na_rule_of({}) == "failure"
    assert na_rule_of({"not_applicable_rule": "unavailable"}) == "unavailable"
    old = run_sim2real(REAL, REAL, seeds=[0], envs=["tape"])
    assert any("replayed as failed steps" in n for n in old.notes)
    new = run_sim2real(REAL, REAL, seeds=[0], envs=["tape"], not_applicable="unavailable")
    assert any("replayed as unavailable actions" in n for n in new.notes)
    # under the new rule the real curve counts only the attempts that spent a step
    assert new.steps < old.steps


@pytest.mark.parametrize("n_tasks", [1, 2, 7])
def test_the_small_multiples_fit_their_canvas(n_tasks: int) -> None:
    """The figure is rendered without cropping (`to_png` ``tight=False``): everything drawn,
    the legend below and the title above included, lies on its canvas, however few panels."""
    import pandas as pd

    from analysis.plots import plt
    from analysis.plots_sim2real import sim2real_figure

    t = np.arange(1, 41, dtype=float)
    rows = [{"env": env, "task_id": f"tritonbench/fused_recurrent_retention_{k}", "t": step,
             "real": 1.0 + 0.01 * step, "pred_q10": 0.9, "pred_median": 1.0 + 0.005 * step,
             "pred_q90": 1.3} for k in range(n_tasks) for env in ("fitted", "tape")
            for step in t]
    fig = sim2real_figure(pd.DataFrame(rows))
    try:
        drawn = fig.get_tightbbox(fig.canvas.get_renderer())
        canvas = fig.bbox_inches
        assert drawn.x0 >= canvas.x0 and drawn.y0 >= canvas.y0, (drawn, canvas)
        assert drawn.x1 <= canvas.x1 and drawn.y1 <= canvas.y1, (drawn, canvas)
    finally:
        plt.close(fig)
