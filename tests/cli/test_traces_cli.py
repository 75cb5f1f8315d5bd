"""`kernelband traces ...`: right output on good data, one clear line and exit 1 on bad data."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbsim.trace.synthetic_trace import write_synthetic_trace
from kernelband.cli import main
from tests.kbsim.test_trace_reader import CORRUPTIONS, corrupted_dataset, matches
from tests.kbsim.test_trace_writer import write_valid


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["traces", *map(str, args)])


def assert_clean_failure(result: Result) -> None:
    """Exit 1 through sys.exit, nothing on stdout, no traceback anywhere."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_validate_reports_counts_on_a_valid_dataset(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 3)
    result = run("validate", tmp_path / "d")
    assert result.exit_code == 0, result.output
    assert result.stdout == "valid: 3 steps, 4 kernels\n"


@pytest.mark.parametrize(
    ("corruption", "message"), [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS]
)
def test_validate_prints_the_sentence_and_exits_1(
    tmp_path: Path, corruption: Callable[[Path], None], message: str
) -> None:
    d = corrupted_dataset(tmp_path, corruption)
    result = run("validate", d)
    assert_clean_failure(result)
    assert matches(result.stderr, f"invalid: {message.format(d=d)}\n".replace("...\n", "..."))


@pytest.mark.parametrize("command", ["info", "head", "merge", "merge-shards", "compact"])
@pytest.mark.parametrize("corruption_id", ["missing-manifest", "truncated-part", "wrong-type"])
def test_other_commands_fail_cleanly_on_bad_data(
    tmp_path: Path, command: str, corruption_id: str
) -> None:
    corruption, message = next(c[1:] for c in CORRUPTIONS if c[0] == corruption_id)
    d = corrupted_dataset(tmp_path, corruption)
    extra = ["--out", str(tmp_path / "out")] if command.startswith("merge") else []
    result = run(command, d, *extra)
    assert_clean_failure(result)
    assert matches(result.stderr, f"invalid: {message.format(d=d)}\n".replace("...\n", "..."))


def test_info_prints_one_line_per_task(tmp_path: Path) -> None:
    d = write_synthetic_trace(tmp_path / "d", 400, 4, seed=0)
    result = run("info", d)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1 dataset(s), 1 run(s), 4 task(s), 400 steps, ")
    assert lines[1].split()[:3] == ["task_id", "attempts", "ok"]
    assert lines[1].split()[-3:] == ["best_speedup", "runs", "hardware"]
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["task000", "task001", "task002", "task003"]
    assert all(r[1] == "100" and r[-1] == "synthetic" and r[-3].endswith("x") for r in rows)


def test_merge_reports_renamed_runs(tmp_path: Path) -> None:
    write_valid(tmp_path / "a", 2)
    write_valid(tmp_path / "b", 3)
    result = run("merge", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "m")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"merged 2 dataset(s) into {tmp_path / 'm'}: 5 steps, 4 kernels, 2 run(s)",
        f"renamed run 'r1' of {tmp_path / 'b'} to 'r1-2'",
    ]
    again = run("merge", tmp_path / "a", "--out", tmp_path / "m")
    assert_clean_failure(again)
    assert "already holds a trace dataset" in again.stderr


def test_head_shows_rows_and_columns(tmp_path: Path) -> None:
    write_valid(tmp_path / "d", 5)
    result = run("head", tmp_path / "d", "-n", "2", "-c", "step,status,child_ms")
    assert result.exit_code == 0, result.output
    assert [line.split() for line in result.stdout.splitlines()] == [
        ["step", "status", "child_ms"],
        ["0", "ok", "1.5"],
        ["1", "ok", "1.5"],
    ]
    kernels = run("head", tmp_path / "d", "--kernels", "-c", "kernel_id")
    assert kernels.stdout.split() == ["kernel_id", "k0", "k1", "k2", "k3", "k4", "k5"]
    bad = run("head", tmp_path / "d", "-c", "nope")
    assert_clean_failure(bad)
    assert bad.stderr.startswith("error: unknown column 'nope'; columns are: run_id, task_id")


def test_compact_merges_parts_and_keeps_rows_and_end_time(tmp_path: Path) -> None:
    import json

    from kbsim.trace.layout import scan_parts
    from kbsim.trace.reader import load_trace
    from kbsim.trace.writer import TraceWriter
    from tests.kbsim.test_trace_writer import kernel_row, step_row

    d = tmp_path / "d"
    write_valid(d, 5)  # one part per append: 6 kernel parts, 5 step parts
    before = load_trace(d)
    end = json.loads((d / "manifest.json").read_text())["end_time"]
    result = run("compact", d)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{d}: 11 part files -> 2 (5 steps, 6 kernels)\n"
    assert [len(scan_parts(d / t)[0]) for t in ("steps", "kernels")] == [1, 1]
    after = load_trace(d)
    assert after.steps.to_pylist() == before.steps.to_pylist()
    assert after.kernels.to_pylist() == before.kernels.to_pylist()
    assert json.loads((d / "manifest.json").read_text())["end_time"] == end
    assert not (d / ".writer.lock").exists()
    # a run in progress (no end time) stays one, and can be appended to afterwards
    manifest = json.loads((d / "manifest.json").read_text())
    manifest["end_time"] = None
    (d / "manifest.json").write_text(json.dumps(manifest))
    assert run("compact", d).exit_code == 0
    assert json.loads((d / "manifest.json").read_text())["end_time"] is None
    with TraceWriter(d, resume=True) as writer:
        writer.append_kernel(kernel_row("k6"))
        writer.append_step(step_row(5))
    assert load_trace(d).steps.num_rows == 6


def test_compact_refuses_a_folder_that_is_no_dataset(tmp_path: Path) -> None:
    result = run("compact", tmp_path)
    assert_clean_failure(result)
    assert "not a kernelband trace dataset" in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was created there


@pytest.mark.parametrize("sub", ["info", "validate", "merge", "merge-shards", "head", "compact",
                                 "profile"])
def test_every_traces_command_documents_an_example(sub: str) -> None:
    result = run(sub, "--help")
    assert result.exit_code == 0 and "Example:" in result.stdout
    assert f"kernelband traces {sub}" in result.stdout


def test_real_entry_point_fails_without_traceback(tmp_path: Path) -> None:
    """The installed console script, as a user runs it."""
    script = Path(sys.executable).with_name("kernelband")
    command = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from kernelband.cli import main; main()"]
    )
    result = subprocess.run(
        [*command, "traces", "info", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr == f"invalid: {tmp_path / 'nope'}: no such directory\n"


def test_profile_shard_takes_its_share_of_the_trace_s_tasks(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`traces profile --shard K/N`: the manifest's tasks sorted, every N-th from the K-th."""
    import live.profiler.backfill as backfill
    from live.profiler.backfill import BackfillReport

    trace = write_synthetic_trace(tmp_path / "t", n_steps=20, n_tasks=5, seed=0)
    from kbsim.trace.reader import load_trace

    tasks = sorted(load_trace(trace).manifests[0]["tasks"])
    asked: list = []

    def fake(path, profiler_for, *, tasks=None, **kwargs):
        asked.append(tasks)
        return BackfillReport()

    monkeypatch.setattr(backfill, "backfill_profiles", fake)
    for k in range(2):
        assert run("profile", trace, "--shard", f"{k}/2", "--quiet").exit_code == 0
    assert asked == [tasks[0::2], tasks[1::2]]
    empty = run("profile", trace, "--shard", "6/7")
    assert empty.exit_code == 0 and "is empty: nothing to profile" in empty.stdout
    assert len(asked) == 2
    both = run("profile", trace, "--shard", "0/2", "--tasks", tasks[0])
    assert_clean_failure(both)
    assert both.stderr == "error: give --tasks or --shard, not both\n"
    bad = run("profile", trace, "--shard", "2/2")
    assert_clean_failure(bad)
    assert bad.stderr.startswith("error: shard must be K/N with 0 <= K < N")
