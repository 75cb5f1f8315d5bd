"""benchmarks/ship_runs.py, stages 1-2 (ready? then the dataset, its README, licence and notice)
on a real (CPU) live run standing in for the TritonBench-G plan's runs: one task's k0 fails, the
other finishes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from kbsim.trace.reader import validate_trace
from tests.live.test_resume_failed_k0 import K0Evaluator, _run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ship():
    spec = importlib.util.spec_from_file_location("ship_runs", ROOT / "benchmarks" /
                                                  "ship_runs.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


@pytest.fixture
def runs(tmp_path: Path, ship) -> Path:
    """A runs folder as the script sees it: the shipped plan's three runs (2 steps per task,
    explore), a piece's command each and a check cache with one operator left out at load."""
    runs_dir = tmp_path / "runs"
    _run(runs_dir / "tb-explore-h200", K0Evaluator("incorrect", "output 0: 3/64 elements differ"))
    for folder in ("tb-v2-h200", "tb-greedy-h200"):
        shutil.copytree(runs_dir / "tb-explore-h200", runs_dir / folder)
    for folder in ("tb-explore-h200", "tb-v2-h200", "tb-greedy-h200"):
        (runs_dir / f"{folder}.commands").write_text(
            f"python3 benchmarks/record_runs.py PLAN --jobs {folder} --steps 2   # piece 1\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "x.json").write_text(json.dumps({
        "name": "racy_op", "passed": False, "plain_script": "passes",
        "reason": "gold-vs-gold check failed: nondeterministic: " + "word " * 100}))
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "LICENSE").write_text("Apache License\nVersion 2.0\n")
    return runs_dir


def _setup(ship, runs: Path):
    setup = ship.setup_from_plan(PLAN, runs, benchmark=runs.parent / "bench")
    setup.check_cache = runs.parent / "cache"
    setup.runs = tuple(ship.Run(r.folder, r.name, 2, r.profile) for r in setup.runs)
    return setup


PLAN = ROOT / "benchmarks" / "plans" / "tritonbench-g-h200.json"


def test_a_plan_without_a_ship_section_is_refused(ship, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"tasks": "builtin", "runs": []}))
    with pytest.raises(SystemExit, match="no 'ship' section"):
        ship.setup_from_plan(plan, tmp_path)


def test_a_short_run_ships_nothing(runs: Path, ship, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    setup = _setup(ship, runs)
    # the explore run's one kernel of softmax past k0 is not profiled (--profile off)
    report, problems = ship.readiness(setup.run("tb-explore-h200"), setup)
    assert report is not None and report["complete"]
    assert problems and "correct kernels profiled" in problems[0]
    longer = ship.Run("tb-v2-h200", "x", 3, "")
    assert "0 of 1 operators at 3 evaluated attempts (1 attempts left)" in \
        ship.readiness(longer, setup)[1][0]
    dest = tmp_path / "traces"
    assert ship.main([str(PLAN), "--out", str(tmp_path / "out"), "--dest", str(dest),
                      "--runs-dir", str(runs)]) == 3
    assert "nothing shipped" in capsys.readouterr().out and not dest.exists()


def test_a_dataset_gets_its_rows_a_readme_and_no_side_files(runs: Path, ship,
                                                           tmp_path: Path) -> None:
    setup = _setup(ship, runs)
    run = setup.run("tb-v2-h200")  # v2: no profiling asked of it
    cache = runs / run.folder / ".profile-cache" / "task"
    cache.mkdir(parents=True)
    (cache / "k.json").write_text("{}")  # Nsight Compute's raw report, as a resumed pass keeps
    report, problems = ship.readiness(run, setup)
    assert problems == []
    shipped = ship.ship(run, tmp_path / "traces", report, problems, None, setup)
    assert shipped.name == "tritonbench-g-v2-h200" and validate_trace(shipped) == []
    assert not (shipped / "evaluations.jsonl").exists()
    assert not (shipped / ".profile-cache").exists()
    assert (runs / run.folder / "evaluations.jsonl").exists()  # the run itself is untouched
    readme = (shipped / "README.md").read_text()
    assert "REHEARSAL" not in readme
    assert "--steps 2   # piece 1" in readme  # the piece's command, from NAME.commands
    # an operator left out at load, its long reason clipped at a word
    assert "`racy_op`: gold-vs-gold check failed" in readme
    assert "word word ... (as a plain script: passes)" in readme
    # the task whose k0 failed on its own: in the manifest, no attempt, and why
    assert "- **Stopped at k0**" in readme and "`add`: incorrect: output 0: 3/64" in readme
    assert "T = 2 evaluated attempts" in readme
    assert "2 of its 3 tasks passed the gold-vs-gold check" in readme
    # the benchmark's licence beside the data, and a notice naming the kernels' origin
    assert (shipped / "LICENSE").read_text().startswith("Apache License")
    notice = (shipped / "NOTICE").read_text()
    assert "TritonBench-G" in notice and "Apache License 2.0" in notice
    assert "`LICENSE` and `NOTICE`" in readme
    assert "1 of those ran" in readme
    # a rehearsal says so at the top and in the notes
    again = ship.ship(run, tmp_path / "traces", report, ["tb-v2-h200: short"], None, setup)
    text = (again / "README.md").read_text()
    assert text.splitlines()[2].startswith("**REHEARSAL") and "tb-v2-h200: short." in text


def test_a_rehearsal_never_writes_to_the_checkouts_traces(ship, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        ship.main([str(PLAN), "--rehearse", "--out", str(tmp_path), "--dest",
                   str(ROOT / "traces")])


def test_sim2real_tables_are_cut_to_their_geomean_rows(ship) -> None:
    table = "\n".join(["Sim-to-real: caption.", "", "| env | task | x |", "| --- | --- | --- |",
                       "| tape | a | 1 |", "| tape | **geomean** | 2 |"])
    assert ship.geomean_rows(table).splitlines() == [
        "Sim-to-real: caption.", "", "| env | task | x |", "| --- | --- | --- |",
        "| tape | **geomean** | 2 |"]


def test_allow_unprofiled_ships_the_exploration_and_its_readme_names_what_lacks_a_profile(
        runs: Path, ship) -> None:
    setup = _setup(ship, runs)
    run = setup.run("tb-explore-h200")  # --profile off: no correct kernel has a profile
    correct, profiled, left = ship.kernel_counts(runs / run.folder)
    assert correct > 0 and profiled == 0 and sum(left.values()) == correct
    setup.allow_unprofiled = correct - 1
    assert ship.readiness(run, setup)[1]  # one more than allowed: refused
    setup.allow_unprofiled = correct
    report, problems = ship.readiness(run, setup)
    assert problems == []
    shipped = ship.ship(run, runs.parent / "traces", report, problems, None, setup)
    readme = (shipped / "README.md").read_text()
    named = ", ".join(f"{n} of `{task.split('/', 1)[-1]}`" for task, n in left.items())
    assert f"0 of its {correct} distinct correct kernels (not profiled: {named})" in readme
    # the policy runs' READMEs carry no such count
    v2 = ship.ship(setup.run("tb-v2-h200"), runs.parent / "traces",
                   *ship.readiness(setup.run("tb-v2-h200"), setup), None, setup)
    assert "distinct correct kernels" not in (v2 / "README.md").read_text()
