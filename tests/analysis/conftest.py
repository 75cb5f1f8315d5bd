"""Shared inputs for the analysis tests: one small trace and one results directory per session,
and the trace's analysis (the slowest step: k-means for K = 1..8 and five figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.inputs import load_input
from analysis.pipeline import Analysis, analyze_input
from tests.analysis.fixtures import write_results, write_trace


@pytest.fixture(scope="session")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trace(tmp_path_factory.mktemp("trace") / "tr")


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_results(tmp_path_factory.mktemp("results") / "res")


@pytest.fixture(scope="session")
def trace_analysis(trace_dir: Path) -> Analysis:
    return analyze_input(load_input(trace_dir))
