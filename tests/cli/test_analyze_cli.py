"""`kernelband analyze` and `kernelband report`: files written, one-sentence errors, exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelband.cli import main
from tests.analysis.fixtures import write_results, write_trace


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli")
    return {"trace": write_trace(root / "trace"), "results": write_results(root / "results")}


def test_analyze_results_writes_tables_and_plots(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "analysis"
    result = CliRunner().invoke(main, ["analyze", str(inputs["results"]), "--out", str(out),
                                       "--boot", "100"])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output
    for name in ("metrics.csv", "regret_slopes.csv", "regret_bands.csv", "tables.md",
                 "regret.png", "regret_normalised.png", "speedup.png"):
        assert (out / name).is_file(), name


def test_report_is_one_self_contained_file(inputs: dict[str, Path], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(inputs["trace"]), "--out", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert text.count("data:image/png;base64,") >= 4
    assert "How to read this" in text and "NVIDIA H100" in text
    # nothing is fetched from elsewhere: no external scripts, styles, fonts or images
    for needle in ("<script src", "<link ", "http://", "https://", "src=\"/", "url("):
        assert needle not in text, needle


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["analyze", "{missing}", "--out", "{out}"], "no such file or directory"),
        (["analyze", "{empty}", "--out", "{out}"], "neither a trace dataset"),
        (["report", "{missing}", "--out", "{out}/r.html"], "no such file or directory"),
        (["analyze", "--out", "{out}"], "give an INPUT"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_1(tmp_path: Path, args: list[str],
                                               message: str) -> None:
    (tmp_path / "empty").mkdir()
    fill = {"missing": str(tmp_path / "nope"), "empty": str(tmp_path / "empty"),
            "out": str(tmp_path / "out")}
    result = CliRunner().invoke(main, [a.format(**fill) for a in args])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1
