"""`kernelband analyze sim2real`: files, summary lines, one-sentence errors; and `analyze INPUT`
still parses as the command it was (options after INPUT included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelband.cli import main
from tests.analysis.fixtures import write_results, write_trace
from tests.analysis.sim2real_fixtures import POLICY_STEPS, WORLD, record


@pytest.fixture(scope="module")
def v2_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("cli-s2r") / "v2", WORLD, "kernelband-v2",
                  POLICY_STEPS)


def test_sim2real_writes_the_table_plot_and_markdown(v2_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "s2r"
    result = CliRunner().invoke(main, ["analyze", "sim2real", "--explore", str(v2_trace),
                                       "--policy-trace", str(v2_trace), "--out", str(out),
                                       "--seeds", "3", "--env", "tape"])
    assert result.exit_code == 0, result.output
    assert "replayed kernelband-v2 (3 seeds, T = 40) on 3 task(s)" in result.output
    assert "tape: geomean predicted/real" in result.output and "fitted:" not in result.output
    for name in ("sim2real.csv", "sim2real_curves.csv", "sim2real.json", "sim2real.md",
                 "sim2real.png"):
        assert (out / name).stat().st_size > 0, name


def test_sim2real_bad_input_is_one_line_and_exit_1(v2_trace: Path, tmp_path: Path) -> None:
    other = write_trace(tmp_path / "other", tasks=("softmax",))
    result = CliRunner().invoke(main, ["analyze", "sim2real", "--explore", str(v2_trace),
                                       "--policy-trace", str(other), "--out",
                                       str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "share no task" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_sim2real_help_and_analyze_help_list_it() -> None:
    runner = CliRunner()
    sub = runner.invoke(main, ["analyze", "sim2real", "--help"])
    assert sub.exit_code == 0 and "Example" in sub.output
    assert "analyze sim2real [OPTIONS]" in sub.output  # no [INPUT] before the subcommand
    top = runner.invoke(main, ["analyze", "--help"])
    assert top.exit_code == 0 and "sim2real" in top.output and "[INPUT]" in top.output


def test_analyze_input_still_takes_options_after_it(tmp_path: Path) -> None:
    results = write_results(tmp_path / "res")
    out = tmp_path / "analysis"
    result = CliRunner().invoke(main, ["analyze", str(results), "--out", str(out), "--boot",
                                       "50"])
    assert result.exit_code == 0, result.output
    assert (out / "task_speedups.csv").is_file() and (out / "metrics.csv").is_file()
