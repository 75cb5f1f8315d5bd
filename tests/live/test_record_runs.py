"""benchmarks/record_runs.py: a plan of resumable live runs, recorded side by side, one GPU each
(here on the CPU, with a one-task set), and the figures it reports for each piece."""

from __future__ import annotations

import importlib.util
import json
import sys
import tarfile
from pathlib import Path

import pytest

from kbsim.trace.reader import validate_trace

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("record_runs",
                                                  ROOT / "benchmarks" / "record_runs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["record_runs"] = module
    spec.loader.exec_module(module)
    return module


record_runs = _module()


@pytest.mark.parametrize("plan, message", [
    ({"runs": [{"name": "a", "policy": "explore", "steps": 2}]}, "needs 'tasks'"),
    ({"tasks": "builtin", "runs": []}, "needs 'tasks'"),
    ({"tasks": "builtin", "runs": [{"name": "a", "steps": 2}]}, "run a lacks policy"),
])
def test_a_bad_plan_is_refused_in_one_sentence(tmp_path: Path, plan: dict, message: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    with pytest.raises(SystemExit, match=message):
        record_runs.load_plan(path)


def test_the_shipped_plan_continues_the_unfinished_runs_then_profiles(tmp_path: Path) -> None:
    plan = record_runs.load_plan(ROOT / "benchmarks/plans/tritonbench-g-h200.json")
    runs = ROOT / "benchmarks/runs"
    jobs = record_runs.default_jobs(plan, tmp_path, runs)
    # the exploration trace is not complete, so it is not profiled yet; pilots never run by
    # default
    expected = []
    for run in plan["runs"]:
        if run.get("scratch"):
            continue
        report = record_runs.progress_of(record_runs.where(run["name"], tmp_path, runs),
                                         int(run["steps"]))
        if report is None or not report["complete"]:
            expected.append(run["name"])
    assert jobs[:len(expected)] == expected
    assert not any(job.startswith("pilot") for job in jobs)
    assert jobs[-1] == f"profile:{plan['profile']['run']}"
    # a profile waits for its run to be complete
    explore = plan["profile"]["run"]
    complete = record_runs.progress_of(record_runs.where(explore, tmp_path, runs), 60)["complete"]
    assert (record_runs.waiting_on(plan, jobs[-1], tmp_path, runs) is None) == complete
    assert record_runs.waiting_on(plan, explore, tmp_path, runs) is None


def test_piece_figures_count_this_piece_s_evaluations_and_lock_closes(tmp_path: Path) -> None:
    old = {"task_id": "t0", "finished": "2026-01-01T00:00:00+00:00", "status": "ok",
           "ms": 1.0, "ref_ms": 1.0}
    rows = [old] + [
        {"task_id": f"t{k % 2}", "finished": f"2026-01-01T00:00:{10 + 2 * k:02d}+00:00",
         "status": "ok", "ms": 1.0, "ref_ms": 1.0 + 0.05 * (k == 1), "eval_latency_s": 2.0 + k,
         "step_asides": 1, "compiles_off_lock": 2}
        for k in range(5)]
    (tmp_path / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures = record_runs.live_figures(tmp_path, since_line=1, wall_s=20.0, fresh=True)
    assert figures["evaluations"] == 5 and figures["evaluations_per_s"] == 0.25
    assert figures["loop_s"] == 8.0 and figures["evaluations_per_loop_s"] == 0.5
    assert figures["median_eval_latency_s"] == 4.0
    assert figures["step_asides"] == 5 and figures["compiles_off_lock"] == 10
    # the first evaluation of each task is k0 against itself: t0 exact, t1 5 % off
    assert figures["aa_tasks"] == 2 and figures["aa_within_2pct"] == 1
    assert figures["aa_worst_pct"] == 5.0
    closes = [{"reason": "quiet", "readers": 0, "drain_s": 0.0, "closed_s": 0.2, "served": 1},
              {"reason": "batch", "readers": 2, "drain_s": 1.0, "closed_s": 1.5, "served": 3}]
    (tmp_path / "gpu-lock.jsonl").write_text("".join(json.dumps(c) + "\n" for c in closes))
    lock = record_runs.lock_figures(tmp_path, since_line=0)
    assert lock["lock_closes"] == 2 and lock["lock_closes_quiet"] == 1
    assert lock["lock_closes_batch"] == 1 and lock["lock_served_sum"] == 4
    assert lock["lock_drain_s_sum"] == 1.0
    assert record_runs.lock_figures(tmp_path, since_line=2) == {}


def test_a_piece_records_a_run_and_packs_it(tmp_path: Path) -> None:
    """One real piece on the CPU: a run started afresh, then resumed by a second call; each
    call leaves the run packed, its logs and a summary with the piece's figures."""
    plan = {"tasks": "add", "live_args": ["--proposer", "mutate", "--seed", "0",
                                          "--device", "cpu", "--eval-workers", "1"],
            "runs": [{"name": "r", "policy": "explore", "steps": 2, "profile": "off"}]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    work, runs = tmp_path / "work", tmp_path / "runs"
    for call, steps in ((1, 1), (2, 2)):
        plan["runs"][0]["steps"] = steps
        path.write_text(json.dumps(plan))
        out = tmp_path / f"out{call}"
        rc = record_runs.main([str(path), "--out", str(out), "--gpus", "0", "--work", str(work),
                               "--runs-dir", str(runs), "--max-wall", "120"])
        assert rc == 0
        summary = json.loads((out / "summary.json").read_text())
        job = summary["jobs"]["r"]
        assert job["rc"] == 0 and job["evaluations"] >= 1
        assert job["evaluated_after"] == steps and job["complete_after"]
        assert ("--resume" in job["command"]) == (call == 2)
        # the piece's line for NAME.commands: the command as typed, the run folder as DIR
        assert job["piece"].startswith("kernelband live --out DIR")
        assert job["piece"].endswith(" steps") and "--policy explore" in job["piece"]
        with tarfile.open(out / "r.tar.gz") as tar:
            tar.extractall(tmp_path / f"unpacked{call}",
                           **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        validate_trace(tmp_path / f"unpacked{call}" / "r")
        with tarfile.open(out / "logs.tar.gz") as tar:
            assert "logs/r.log" in tar.getnames()
    # complete: nothing left to run
    assert record_runs.main([str(path), "--out", str(tmp_path / "out3"), "--gpus", "0",
                             "--work", str(work), "--runs-dir", str(runs)]) == 0
    assert not (tmp_path / "out3").exists()


def test_a_gpu_whose_run_completes_goes_on_with_the_next_job(tmp_path: Path) -> None:
    """Two runs, one GPU: the second starts when the first is complete, in the same call."""
    plan = {"tasks": "add", "live_args": ["--proposer", "mutate", "--seed", "0",
                                          "--device", "cpu", "--eval-workers", "1"],
            "runs": [{"name": name, "policy": "explore", "steps": 1, "profile": "off"}
                     for name in ("first", "second")]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    out = tmp_path / "out"
    assert record_runs.main([str(path), "--out", str(out), "--gpus", "0", "--work",
                             str(tmp_path / "work"), "--runs-dir", str(tmp_path / "runs"),
                             "--max-wall", "240", "--min-left", "30"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["jobs"]) == ["first", "second"] and not summary["not_started"]
    for name in ("first", "second"):
        assert summary["jobs"][name]["complete_after"] and (out / f"{name}.tar.gz").is_file()
    # the second ran after the first, with what was left of --max-wall as its own limit
    second = summary["jobs"]["second"]["command"]
    assert float(second[second.index("--max-wall") + 1]) < 240


@pytest.mark.parametrize("names, message", [
    (["r", "r@0/2"], "must be one job or distinct shares K/N of one N"),
    (["r@0/2", "r@1/3"], "must be one job or distinct shares K/N of one N"),
    (["r@0/2", "r@0/2"], "must be one job or distinct shares K/N of one N"),
    (["r@2/2"], "shard must be K/N with 0 <= K < N"),
])
def test_shares_of_a_run_are_refused_unless_distinct_of_one_count(names: list,
                                                                 message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        record_runs.check_shards(names)


def test_shares_of_one_run_run_side_by_side_and_nothing_else_of_it() -> None:
    record_runs.check_shards(["r@0/2", "r@1/2", "profile:r@0/3", "profile:r@1/3", "q"])

    def job(name: str):
        kind, run, shard = record_runs.parse_job(name)
        return record_runs.Job(name=name, kind=kind, run=run, gpu="0", command=[],
                               log=Path("x"), folder=Path("x"), shard=shard)

    assert not record_runs.clashes("r@1/2", job("r@0/2"))
    assert record_runs.clashes("r@0/2", job("r@0/2"))
    assert record_runs.clashes("r", job("r@0/2")) and record_runs.clashes("r@0/2", job("r"))
    assert record_runs.clashes("profile:r@1/2", job("r@0/2"))
    assert not record_runs.clashes("q@0/2", job("r@0/2"))


def test_two_shares_of_a_run_record_side_by_side_then_merge_and_pack(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Two GPUs, one run as two shares of its tasks in one call: both start at once, each on
    its own copy; once both end the copies are merged into the run, validated and packed."""
    plan = {"tasks": "add,softmax", "live_args": ["--proposer", "mutate", "--seed", "0",
                                                  "--device", "cpu", "--eval-workers", "1"],
            "runs": [{"name": "r", "policy": "explore", "steps": 1, "profile": "off"}]}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    work, out = tmp_path / "work", tmp_path / "out"
    rc = record_runs.main([str(path), "--out", str(out), "--gpus", "0,1", "--jobs",
                           "r@0/2,r@1/2", "--work", str(work), "--runs-dir",
                           str(tmp_path / "runs"), "--max-wall", "240"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "GPU 0: r@0/2 started at 0 s" in printed and "GPU 1: r@1/2 started at 0 s" in printed
    summary = json.loads((out / "summary.json").read_text())
    merge = summary["merges"]["r"]
    for k in (0, 1):
        job = summary["jobs"][f"r@{k}/2"]
        assert job["rc"] == 0 and job["evaluations"] >= 1 and job["evaluations_per_s"] > 0
        assert job["command"][-2:] == ["--shard", f"{k}/2"]
        # its piece: the command with its share, the run folder as DIR, the merged run's steps
        assert job["piece"].startswith("kernelband live --out DIR --max-wall")
        assert f"--shard {k}/2   # " in job["piece"]
        assert job["piece"].endswith(f" {merge['steps']} steps")
    assert merge["copies"] == 2 and merge["complete_after"]
    assert merge["validate"][0].startswith(f"valid: {merge['steps']} steps")
    assert not (work / "r@0of2").exists() and not (work / "r@1of2").exists()
    with tarfile.open(out / "r.tar.gz") as tar:
        tar.extractall(tmp_path / "unpacked",
                       **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    assert validate_trace(tmp_path / "unpacked" / "r") == []
    from kbsim.trace.reader import load_trace

    steps = load_trace(tmp_path / "unpacked" / "r").steps_df()
    assert len(steps) == merge["steps"] and set(steps["task_id"]) == {"add", "softmax"}
    evaluations = (tmp_path / "unpacked" / "r" / "evaluations.jsonl").read_text().splitlines()
    assert len(evaluations) == sum(summary["jobs"][f"r@{k}/2"]["evaluations"] for k in (0, 1))
    # complete: nothing left to run
    assert record_runs.main([str(path), "--out", str(tmp_path / "out2"), "--gpus", "0",
                             "--work", str(work), "--runs-dir", str(tmp_path / "runs")]) == 0
    # the profiling of a share: its own copy of the complete run, `traces profile --shard`
    assert record_runs.waiting_on(plan, "profile:r@1/2", work, tmp_path / "runs") is None
    job = record_runs.build_job(plan, "profile:r@1/2", "1", work, tmp_path / "runs",
                                work / "logs", 100.0, 200.0)
    assert job.folder == work / "r@1of2" and (job.folder / "manifest.json").is_file()
    assert job.command[job.command.index("profile") + 1] == str(job.folder)
    assert job.command[-2:] == ["--shard", "1/2"] and job.log.name == "profile-r@1of2.log"
    # a resumed live job asked to try failed k0s again passes --retry-k0 to kernelband live
    again = record_runs.build_job(plan, "r", "0", work, tmp_path / "runs",
                                  work / "logs", 100.0, 200.0, retry_k0=True)
    assert again.command.count("--retry-k0") == 1 and "--resume" in again.command
