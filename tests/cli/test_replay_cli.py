"""`kernelband replay`: runs on synthetic and trace inputs; bad input is one sentence, exit 1."""

from __future__ import annotations

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kbsim.trace.synthetic_trace import write_synthetic_trace
from kbsim.trace.writer import TraceWriter
from kernelband.cli import main


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    return write_synthetic_trace(tmp_path_factory.mktemp("t") / "trace", 400, 2, seed=1)


def _run(*args: str):
    return CliRunner().invoke(main, ["replay", "--no-progress", *args])


def test_synthetic_replay_prints_a_summary_and_writes_results(tmp_path) -> None:
    out = tmp_path / "out"
    result = _run("--synthetic", "default,tasks=2", "--policy", "kernelband-v2",
                  "--policy", "greedy", "--seeds", "3", "--steps", "12", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "kernelband-v2" in result.output and "greedy" in result.output
    assert "best speedup (95% CI)" in result.output
    # the short ranking closes the output: both policies, best first, paired intervals
    ranking = result.output.split("\nranking [synthetic]")[1].splitlines()
    assert ranking[0].startswith(" by geometric-mean best speedup over k0 (2 task(s) × 3 seed(s)")
    assert ranking[1].strip().startswith("1. ") and ranking[1].rstrip().endswith("best")
    assert ranking[2].strip().startswith("2. ") and "% behind [" in ranking[2]
    assert ds.dataset(out, format="parquet").count_rows() == 2 * 2 * 3 * 12
    summary = pq.read_table(out / "_summary.parquet").to_pandas()
    assert len(summary) == 2 * 2 * 3


@pytest.mark.parametrize("env", ["tape", "fitted"])
def test_trace_replay_on_tape_and_fitted(trace_dir, env) -> None:
    result = _run("--trace", str(trace_dir), "--env", env, "--policy", "random",
                  "--policy", "kernelband-v2:K=2", "--seeds", "2", "--steps", "30",
                  "--tasks", "task001", "--on-exhaust", "nearest")
    assert result.exit_code == 0, result.output
    assert f"kernelband-v2:K=2 {env}" in " ".join(result.output.split())


def test_preset_runs_both_horizons(tmp_path) -> None:
    result = _run("--synthetic", "default", "--preset", "k-sweep", "--seeds", "2",
                  "--out", str(tmp_path / "o"), "--summary-only")
    assert result.exit_code == 0, result.output
    table = result.output.split("\nranking [")[0]  # the summary table, not the ranking
    lines = [line for line in table.splitlines() if "kernelband-v2:K=5" in line]
    assert [line.split()[2] for line in lines] == ["20", "40"]
    assert not list((tmp_path / "o").glob("part-*.parquet"))


def _empty_trace(tmp_path):
    path = tmp_path / "empty"
    TraceWriter(path, {"run_ids": []}).close()
    return str(path)


def _trace_without_column(tmp_path, trace_dir):
    import shutil

    path = tmp_path / "nocol"
    shutil.copytree(trace_dir, path)
    for part in (path / "steps").glob("*.parquet"):
        pq.write_table(pq.read_table(part).drop_columns(["child_ms"]), part)
    return str(path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--synthetic", "default", "--policy", "nope"], "unknown policy 'nope'"),
        (["--synthetic", "default", "--policy", "kernelband-v2:K=0"], "parameter K"),
        (["--synthetic", "default", "--policy", "kernelband-v2:zz=1"], "unknown parameter 'zz'"),
        (["--synthetic", "K=x", "--policy", "random"], "bad value 'x'"),
        (["--synthetic", "default", "--preset", "huge"], "unknown preset 'huge'"),
        (["--policy", "random"], "give a trace dataset"),
        (["--synthetic", "default"], "at least one --policy"),
        (["--synthetic", "default", "--policy", "random", "--env", "tape"], "needs --trace"),
        (["--trace", "/nonexistent/trace", "--policy", "random"], "does not exist"),
        (["--synthetic", "default", "--policy", "random", "--seeds", "0"], "seeds must be"),
        ("EMPTY", "no steps"),
        ("NOCOL", "child_ms"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_1(tmp_path, trace_dir, args, message) -> None:
    if args == "EMPTY":
        args = ["--trace", _empty_trace(tmp_path), "--policy", "random"]
    elif args == "NOCOL":
        args = ["--trace", _trace_without_column(tmp_path, trace_dir), "--policy", "random"]
    result = _run(*args)
    assert result.exit_code == 1, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_reveal_option_and_the_timing_in_the_manifest(trace_dir, tmp_path) -> None:
    """The synthetic trace has no roofline_sig: a lag is asked for, at-once is used and said."""
    import json

    out = tmp_path / "o"
    result = _run("--trace", str(trace_dir), "--policy", "kernelband-v2:K=2", "--seeds", "1",
                  "--steps", "10", "--reveal", "lag:2", "--out", str(out), "--summary-only")
    assert result.exit_code == 0, result.output
    assert "signature timing: at-once (lag:2 asked for: the trace has no roofline_sig)" in \
        result.output
    manifest = json.loads((out / "_replay.json").read_text())
    assert manifest["envs"][0]["signature_timing"].startswith("at-once (lag:2")
    bad = _run("--trace", str(trace_dir), "--policy", "greedy", "--reveal", "soon")
    assert bad.exit_code == 1 and "unknown signature timing 'soon'" in bad.output
