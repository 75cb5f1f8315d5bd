"""The demo and the report with the sim-to-real check and the per-task replay table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.demo import _add_sim2real, run_demo, shipped_policy_trace, shipped_trace
from analysis.pipeline import Analysis
from analysis.report import render_report, run_report
from analysis.sim2real import run_sim2real, sim2real_analysis
from tests.analysis.sim2real_fixtures import POLICY_STEPS, WORLD, record


@pytest.fixture(scope="module")
def v2_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("demo-s2r") / "v2", WORLD, "kernelband-v2",
                  POLICY_STEPS)


def _manifest(path: Path) -> None:
    path.mkdir(parents=True)
    (path / "manifest.json").write_text("{}")


def test_shipped_traces_are_found_h100_first(tmp_path: Path) -> None:
    assert shipped_policy_trace(tmp_path) is None
    _manifest(tmp_path / "policy-v2-h200")
    assert shipped_policy_trace(tmp_path) == tmp_path / "policy-v2-h200"
    _manifest(tmp_path / "policy-v2-h100")
    _manifest(tmp_path / "explore-h100")
    assert shipped_policy_trace(tmp_path) == tmp_path / "policy-v2-h100"
    assert shipped_trace(tmp_path) == tmp_path / "explore-h100"


def test_report_has_a_sim2real_section_with_plot_table_and_verdict(v2_trace: Path) -> None:
    result = run_sim2real(v2_trace, v2_trace, seeds=[0], envs=["tape"])
    page = render_report(sim2real_analysis(result))
    assert "<h2>Sim-to-real</h2>" in page
    assert "predicted / real at the last step 1.00" in page
    assert page.count("data:image/png;base64,") == 1
    assert "syn-002" in page and "geomean" in page


def test_a_policy_trace_that_does_not_fit_is_a_note_not_a_crash(v2_trace: Path,
                                                                 tmp_path: Path) -> None:
    from tests.analysis.fixtures import write_trace

    analysis = Analysis(kind="results", source="x")
    other = write_trace(tmp_path / "other", tasks=("softmax",))
    _add_sim2real(analysis, v2_trace, other, 2, tmp_path / "s2r", lambda _: None)
    assert "sim2real" not in analysis.tables
    assert any("Sim-to-real check not run" in n and "share no task" in n
               for n in analysis.notes)
    _add_sim2real(analysis, v2_trace, v2_trace, 2, tmp_path / "s2r", lambda _: None)
    assert {"sim2real", "sim2real_curves"} <= set(analysis.tables)
    assert (tmp_path / "s2r" / "sim2real.md").is_file()


def test_results_report_has_the_per_task_speedup_table(results_dir: Path,
                                                       tmp_path: Path) -> None:
    page = run_report(results_dir, tmp_path / "r.html", n_boot=50).read_text()
    assert "Per-task best speedup in replay" in page
    assert "kernelband-v2:K=3 [synthetic]" in page


@pytest.mark.slow
def test_demo_with_both_traces_reports_sim2real(v2_trace: Path, tmp_path: Path) -> None:
    explore = record(tmp_path / "explore", WORLD, "explore", 60)
    result = run_demo(tmp_path / "demo", trace=explore, policy_trace=v2_trace, seeds=2,
                      say=lambda _: None, progress=False)
    page = result.report.read_text()
    assert "<h2>Sim-to-real</h2>" in page and "Per-task best speedup in replay" in page
    # issue #37: each part of KernelBand against full v2, right after the verdict
    assert page.index("id='verdict'") < page.index("id='components'") < page.index(
        "id='sim2real'")
    assert result.components.startswith("components [tape]: ")
    assert "the headroom parent rule" in result.components
    assert result.policy_trace == v2_trace
    assert (result.analysis / "sim2real" / "sim2real.csv").is_file()
    assert json.loads((tmp_path / "demo" / "demo.json").read_text())["policy_trace"] == str(
        v2_trace)


def test_shipped_datasets_are_found_in_order_with_policies_of_the_same_gpu(
        tmp_path: Path) -> None:
    from analysis.demo import shipped_datasets

    assert shipped_datasets(tmp_path) == []
    for name in ("tritonbench-g-explore-h200", "tritonbench-g-greedy-h200",
                 "tritonbench-g-v2-h100", "explore-h200", "policy-v2-h200"):
        _manifest(tmp_path / name)
    found = [(d.key, e.name, [p.name for p in ps]) for d, e, ps in shipped_datasets(tmp_path)]
    # the H100 v2 run is not paired with the H200 exploration trace
    assert found == [("builtin", "explore-h200", ["policy-v2-h200"]),
                     ("tritonbench-g", "tritonbench-g-explore-h200",
                      ["tritonbench-g-greedy-h200"])]


@pytest.mark.slow
def test_the_demo_reports_every_shipped_dataset_and_each_live_policy(
        v2_trace: Path, tmp_path: Path) -> None:
    """Issue #19: with the built-in and the TritonBench-G datasets shipped, one report holds
    both, with the sim-to-real check of every live policy run (v2 and greedy)."""
    root = tmp_path / "traces"
    root.mkdir()
    explore = record(tmp_path / "explore", WORLD, "explore", 60)
    greedy = record(tmp_path / "greedy", WORLD, "greedy", POLICY_STEPS)
    for name, target in (("explore-h200", explore), ("policy-v2-h200", v2_trace),
                         ("tritonbench-g-explore-h200", explore),
                         ("tritonbench-g-v2-h200", v2_trace),
                         ("tritonbench-g-greedy-h200", greedy)):
        (root / name).symlink_to(target, target_is_directory=True)
    out = tmp_path / "demo"
    result = run_demo(out, seeds=2, say=lambda _: None, progress=False, traces_root=root)
    assert [(k, e.name, [p.name for p in ps]) for k, e, ps in result.datasets] == [
        ("builtin", "explore-h200", ["policy-v2-h200"]),
        ("tritonbench-g", "tritonbench-g-explore-h200",
         ["tritonbench-g-v2-h200", "tritonbench-g-greedy-h200"])]
    page = result.report.read_text()
    assert "on 2 datasets" in page
    assert "<h1>The project&#x27;s 15 built-in tasks</h1>" in page
    assert "<h1>TritonBench-G: the paper&#x27;s 50-operator subset</h1>" in page
    assert "<h1>Sim-to-real: tritonbench-g-greedy-h200</h1>" in page
    assert page.count("<h2>Sim-to-real</h2>") == 3  # v2 on each dataset, and greedy
    assert page.count("<h2>Verdict</h2>") == 2
    assert page.count("<h2>What each part of KernelBand does</h2>") == 2
    for key in ("tritonbench-g-verdict", "tritonbench-g-components", "tritonbench-g-sim2real",
                "tritonbench-g-notes"):
        assert f"id='{key}'" in page and f"href='#{key}'" in page
    assert (out / "analysis" / "sim2real" / "sim2real.csv").is_file()
    tb = out / "tritonbench-g" / "analysis"
    assert (tb / "sim2real" / "sim2real.csv").is_file()
    assert (tb / "sim2real-tritonbench-g-greedy-h200" / "sim2real.csv").is_file()
    saved = json.loads((out / "demo.json").read_text())
    assert [d["key"] for d in saved["datasets"]] == ["builtin", "tritonbench-g"]
    assert {"replay", "components", "sim2real", "tritonbench-g replay",
            "tritonbench-g components", "tritonbench-g sim2real"} <= set(result.seconds)
    assert saved["component_seeds"] == 2
    assert "TritonBench-G: the paper's 50-operator subset:\ncomponents [tape]" in (
        result.components)
