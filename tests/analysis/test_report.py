"""The HTML report: self-contained, sectioned, and it opens in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from analysis.pipeline import Analysis
from analysis.report import render_report, run_report

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report_path(tmp_path_factory: pytest.TempPathFactory, results_dir: Path) -> Path:
    return run_report(results_dir, tmp_path_factory.mktemp("report") / "report.html", n_boot=100)


def test_sections_follow_the_data(report_path: Path, trace_analysis: Analysis) -> None:
    text = report_path.read_text()
    for heading in ("Run: hardware and parameters", "Paper-style metrics", "Regret",
                    "Speedup over iterations and cost", "Strategies", "Notes"):
        assert heading in text
    assert "Lipschitz constant in" not in text  # results carry no φ: the section is left out
    trace_page = render_report(trace_analysis)
    assert "Lipschitz constant in" in trace_page and "Cluster validity" in trace_page
    assert "NVIDIA H100 80GB HBM3" in trace_page


def test_report_without_input_needs_an_experiment(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nothing to report"):
        run_report(None, tmp_path / "r.html")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_report_opens_in_headless_chromium(report_path: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    profile = tempfile.mkdtemp(dir=tmp_path)
    url = report_path.resolve().as_uri()
    dom = subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert "How to read this" in dom.stdout
    assert dom.stdout.count("<img") >= 4
    subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={shot}",
         "--window-size=1280,1600", url],
        capture_output=True, timeout=120, check=False,
    )
    assert shot.is_file() and shot.stat().st_size > 20_000
