"""`kernelband live --shard K/N` and `kernelband traces merge-shards` on the CPU: a run resumed
as two shares on two copies, then merged, is the run one process records."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from kbsim.trace.layout import atomic_write_parquet, scan_parts
from kbsim.trace.reader import load_trace, read_part_file, validate_trace
from kbsim.trace.schema import KERNELS_SCHEMA, STEPS_SCHEMA
from kbsim.trace.shards import merge_shards, merge_side_lines
from kbsim.trace.writer import compact_dataset
from kernelband.cli import main
from live.evaluator import Evaluator, EvaluatorConfig, kernel_id
from live.proposers import make_proposer
from live.runner import RunConfig
from live.runner.runner import LiveRunner
from live.runner.shard import parse_shard, shard_names
from live.tasks.registry import resolve_task

TASKS = "add,softmax,transpose"  # sorted: share 0/2 runs add and transpose, 1/2 softmax
STEPS = 3
#: the columns of a step that depend on choices and outcomes, not on measured times
DECISION_COLUMNS = ["run_id", "task_id", "step", "cluster", "parent_id", "strategy", "child_id",
                    "status", "logging_propensity", "policy", "seed"]
KERNEL_COLUMNS = ["task_id", "kernel_id", "code", "parent_id", "strategy_chain", "correct"]

live_runs = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="CPU runs need TRITON_INTERPRET=1")


# -- the share rule ------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("3/3", "shard must be K/N with 0 <= K < N"), ("x", "got 'x'"), ("1/0", "got '1/0'"),
    ("-1/2", "got '-1/2'"), ("1", "got '1'"), ("a/b", "got 'a/b'")])
def test_a_bad_shard_is_refused_in_one_sentence(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_shard(text)
    with pytest.raises(ValueError, match=message):
        RunConfig(out="x", shard=text)


def test_the_shares_split_the_sorted_names_every_nth() -> None:
    names = ["e", "b", "a", "d", "c"]
    assert shard_names(names, "0/2") == ["a", "c", "e"]
    assert shard_names(names, "1/2") == ["b", "d"]
    assert shard_names(names, None) == sorted(names)
    shares = [shard_names(names, f"{k}/3") for k in range(3)]
    assert sorted(sum(shares, [])) == sorted(names)
    assert shard_names(names, "4/7") == ["e"] and shard_names(names, "6/7") == []


def test_a_shard_is_not_part_of_the_run_s_config() -> None:
    assert "shard" not in RunConfig(out="x", shard="1/2").public_dict()


def test_an_empty_share_runs_nothing_and_writes_nothing(tmp_path: Path) -> None:
    config = RunConfig(out=str(tmp_path / "t"), tasks="add", steps=1, device="cpu",
                       profile="off", shard="1/2")
    result = LiveRunner(config, make_proposer("mutate"), show_progress=False,
                        evaluator=object()).run()  # never asked to evaluate
    assert result.tasks == [] and not (tmp_path / "t").exists()


def test_side_lines_keep_the_shared_start_once_then_each_copy_s_own() -> None:
    start = "a\nb\n"
    merged = merge_side_lines([start + "c\nd\n", start + "e\n", start + "c\nf"])
    assert merged == "a\nb\nc\nd\ne\nf\n"
    assert merge_side_lines(["x\n", "y\n"]) == "x\ny\n"


# -- real runs on the CPU ------------------------------------------------------------------

def _config(out: Path, steps: int, shard: str | None = None) -> RunConfig:
    return RunConfig(out=str(out), tasks=TASKS, policy="explore", steps=steps, seed=3,
                     device="cpu", profile="off", in_flight=3, shard=shard)


def _run(evaluator, out: Path, steps: int, shard: str | None = None,
         resume: bool = False) -> None:
    LiveRunner(_config(out, steps, shard), make_proposer("mutate"), show_progress=False,
               resume=resume, evaluator=evaluator).run()


def _steps(path: Path):
    steps = load_trace(path).steps_df()
    return steps.sort_values(["task_id", "step"])[DECISION_COLUMNS].reset_index(drop=True)


def _kernels(path: Path):
    kernels = load_trace(path).kernels_df()
    kernels["strategy_chain"] = kernels["strategy_chain"].map(list)
    return kernels.sort_values(["task_id", "kernel_id"])[KERNEL_COLUMNS].reset_index(drop=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The run in one process; and the same run started (one step per task), copied twice,
    each copy resumed to the end as one share of two."""
    root = tmp_path_factory.mktemp("shards")
    with Evaluator(EvaluatorConfig(TASKS, device="cpu", workers=1, timeout_s=60,
                                   static_check=True)) as ev:
        _run(ev, root / "whole", STEPS)
        _run(ev, root / "start", 1)
        for k in range(2):
            shutil.copytree(root / "start", root / f"s{k}")
            _run(ev, root / f"s{k}", STEPS, shard=f"{k}/2", resume=True)
    return root


@live_runs
def test_a_share_runs_only_its_tasks(runs: Path) -> None:
    start = load_trace(runs / "start").steps_df()
    for k, mine in ((0, {"add", "transpose"}), (1, {"softmax"})):
        steps = load_trace(runs / f"s{k}").steps_df()
        grew = {t for t in TASKS.split(",")
                if (steps["task_id"] == t).sum() > (start["task_id"] == t).sum()}
        assert grew == mine
        # the manifest keeps the run's whole task list, and no trace of the shard
        manifest = load_trace(runs / f"s{k}").manifests[0]
        assert sorted(manifest["tasks"]) == sorted(TASKS.split(","))
        assert "shard" not in manifest["config"]


@live_runs
def test_two_shares_merged_are_the_run_of_one_process(runs: Path, tmp_path: Path) -> None:
    out = merge_shards([runs / "s0", runs / "s1"], tmp_path / "merged")
    assert validate_trace(out) == []
    assert _steps(out).equals(_steps(runs / "whole"))
    assert _kernels(out).equals(_kernels(runs / "whole"))
    # one part file per table, like a compacted trace
    assert all(len(scan_parts(out / name)[0]) == 1 for name in ("steps", "kernels"))
    manifest = load_trace(out).manifests[0]
    assert manifest["tasks"] == load_trace(runs / "start").manifests[0]["tasks"]
    assert manifest["shard_merges"][-1]["copies"] == 2
    # evaluations: the start's lines once, then each copy's own
    lines = {name: (runs / name / "evaluations.jsonl").read_text().splitlines()
             for name in ("start", "s0", "s1")}
    merged = (out / "evaluations.jsonl").read_text().splitlines()
    n = len(lines["start"])
    assert merged == lines["start"] + lines["s0"][n:] + lines["s1"][n:]
    assert {json.loads(x)["kernel_id"] for x in merged} == set(load_trace(out).kernels_df()[
        "kernel_id"])
    # each task's best kernel from the copy that ran it
    for task, k in (("add", 0), ("softmax", 1), ("transpose", 0)):
        assert (out / "best" / f"{task}.py").read_text() == (
            runs / f"s{k}" / "best" / f"{task}.py").read_text()


@live_runs
def test_the_command_merges_and_the_result_resumes_as_one_run(runs: Path,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "merged"
    result = CliRunner().invoke(main, ["traces", "merge-shards", str(runs / "s1"),
                                       str(runs / "s0"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "merged 2 copies" in result.output
    assert _steps(out).equals(_steps(runs / "whole"))
    check = CliRunner().invoke(main, ["traces", "validate", str(out)])
    assert check.exit_code == 0 and check.output.startswith("valid:")


def _edit(path: Path, table_name: str, change) -> None:
    """Rewrite the one part file of `table_name` with `change(rows)` applied."""
    compact_dataset(path)
    (part,) = scan_parts(path / table_name)[0]
    rows = read_part_file(part.path, table_name).to_pylist()
    change(rows)
    schema = STEPS_SCHEMA if table_name == "steps" else KERNELS_SCHEMA
    atomic_write_parquet(part.path, pa.Table.from_pylist(rows, schema=schema))


@live_runs
def test_copies_that_disagree_on_a_step_are_refused_naming_it(runs: Path,
                                                             tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(runs / "s1", other)

    def change(rows):
        row = next(r for r in rows if r["task_id"] == "add" and r["step"] == 0)
        row["eval_latency_s"] = (row["eval_latency_s"] or 0.0) + 1.0

    _edit(other, "steps", change)
    with pytest.raises(ValueError, match="step run_id='explore-s3' task_id='add' step=0 "
                                         r"differs between the copies \(eval_latency_s\)"):
        merge_shards([runs / "s0", other], tmp_path / "merged")
    result = CliRunner().invoke(main, ["traces", "merge-shards", str(runs / "s0"), str(other),
                                       "--out", str(tmp_path / "m2")])
    assert result.exit_code == 1
    assert result.output.startswith("error: step run_id='explore-s3' task_id='add' step=0")
    assert len(result.output.strip().splitlines()) == 1


@live_runs
def test_a_profiled_kernel_wins_over_its_unprofiled_copy(runs: Path, tmp_path: Path) -> None:
    """As `kernelband traces profile --shard` leaves copies: one copy profiled a kernel the
    other also holds, unprofiled."""
    k0 = kernel_id(resolve_task("builtin", "softmax").k0)
    profiled = tmp_path / "profiled"
    shutil.copytree(runs / "s0", profiled)

    def profile(rows):
        row = next(r for r in rows if r["task_id"] == "softmax" and r["kernel_id"] == k0)
        row.update(hw_sig=[11.0, 22.0, 33.0], profiled=True, profiler="ncu")

    _edit(profiled, "kernels", profile)
    for order in ([runs / "s1", profiled], [profiled, runs / "s1"]):
        out = tmp_path / f"merged-{order[0].name}"
        merge_shards(order, out)
        assert validate_trace(out) == []
        kernels = load_trace(out).kernels_df()
        row = kernels[(kernels["task_id"] == "softmax") & (kernels["kernel_id"] == k0)]
        assert len(row) == 1 and bool(row["profiled"].iloc[0])
        assert list(row["hw_sig"].iloc[0]) == [11.0, 22.0, 33.0]
        assert _steps(out).equals(_steps(runs / "whole"))

    # a difference beyond the profile columns is refused
    def retime(rows):
        row = next(r for r in rows if r["task_id"] == "softmax" and r["kernel_id"] == k0)
        row["ms"] = row["ms"] * 2

    _edit(profiled, "kernels", retime)
    with pytest.raises(ValueError, match=f"kernel task_id='softmax' kernel_id='{k0}' differs "
                                         r"between the copies \(ms\), beyond a profile"):
        merge_shards([runs / "s1", profiled], tmp_path / "refused")


@live_runs
def test_copies_of_different_runs_are_refused(runs: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(runs / "s1", other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["config"]["seed"] = 4
    (other / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="is not a copy of the run in .* config seed"):
        merge_shards([runs / "s0", other], tmp_path / "merged")
