"""benchmarks/kernelbench_published.py: which published KernelBench timings are for the same
shapes as ours, on a small hand-made dataset (names, changelog and timings made up here)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def published():
    spec = importlib.util.spec_from_file_location(
        "kernelbench_published", ROOT / "benchmarks" / "kernelbench_published.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernelbench_published"] = module
    spec.loader.exec_module(module)
    return module


def make_dataset(root: Path, timing_names: list[str]) -> Path:
    """level1 as released first: 1_Alpha, 2_Beta, 3_Gamma; v0.1 renamed 3_Gamma to
    3_Delta; v0.2 updated 2_Beta. level2 has one problem, never changed."""
    (root / "level1").mkdir(parents=True)
    (root / "level2").mkdir()
    for name in ("1_Alpha.py", "2_Beta.py", "3_Delta.py"):
        (root / "level1" / name).write_text("# a problem\n")
    (root / "level2" / "1_Fused.py").write_text("# a problem\n")
    changelog = root / "changelog"
    changelog.mkdir()
    # as the dataset ships it: UTF-16 with a byte-order mark, CRLF
    (changelog / "original_files.txt").write_bytes(
        "1_Alpha.py\r\n2_Beta.py\r\n3_Gamma.py\r\n".encode("utf-16"))
    (changelog / "v0.1").write_text("Larger problem sizes: see the release note\n")
    (changelog / "v0.2").write_text("Ongoing\n\nUpdated Level1/2_Beta.py - a faster reference\n")
    timing = root / "results" / "timing" / "GPU_X"
    timing.mkdir(parents=True)
    levels: dict[str, dict] = {"level1": {}, "level2": {"1_Fused.py": {"mean": 4.0, "min": 3.0}}}
    for i, name in enumerate(timing_names):
        levels["level1"][name] = {"mean": 2.0 * (i + 1), "min": 1.0 * (i + 1)}
    (timing / "baseline_time_torch.json").write_text(json.dumps(levels))
    return root


def ours_file(path: Path, ms: dict[str, float | None]) -> Path:
    path.write_text(json.dumps({"tasks": {
        f"kernelbench/{name}": {"status": "ok" if v is not None else "incorrect",
                                "ref_ms": v, "timing_backend": "cuda"}
        for name, v in ms.items()}}))
    return path


OURS = {"level1/1_Alpha": 3.0, "level1/2_Beta": 1.0, "level1/3_Delta": 9.0,
        "level1/4_Extra": 1.0, "level2/1_Fused": 2.0}


def test_timings_with_a_name_v01_introduced_are_v01(published, tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "kb", ["1_Alpha.py", "2_Beta.py", "3_Delta.py"])
    changelog = published.Changelog.read(root / "changelog")
    assert changelog.original_level1 == {"1_Alpha.py", "2_Beta.py", "3_Gamma.py"}
    assert changelog.updates["v0.2"] == {("level1", "2_Beta.py")}
    data = json.loads((root / "results/timing/GPU_X/baseline_time_torch.json").read_text())
    current = {"level1": ["1_Alpha.py", "2_Beta.py", "3_Delta.py"], "level2": ["1_Fused.py"]}
    assert published.timings_version(data, current["level1"], changelog) == "v0.1"
    rows = {f"{r.level}/{r.problem}": r for r in published.match(OURS, data, current, changelog)}
    assert rows["level1/1_Alpha.py"].ratio == pytest.approx(3.0 / 2.0)
    assert rows["level1/3_Delta.py"].ratio == pytest.approx(9.0 / 6.0)
    assert rows["level2/1_Fused.py"].ratio == pytest.approx(2.0 / 4.0)
    assert not rows["level1/2_Beta.py"].matched
    assert "updated in v0.2" in rows["level1/2_Beta.py"].why
    assert rows["level1/4_Extra.py"].why == "not in the published timings"
    by_min = {f"{r.level}/{r.problem}": r
              for r in published.match(OURS, data, current, changelog, stat="min")}
    assert by_min["level1/1_Alpha.py"].ratio == pytest.approx(3.0 / 1.0)


def test_timings_with_first_release_names_only_compare_nothing(published,
                                                              tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "kb", ["1_Alpha.py", "2_Beta.py", "3_Gamma.py"])
    changelog = published.Changelog.read(root / "changelog")
    data = json.loads((root / "results/timing/GPU_X/baseline_time_torch.json").read_text())
    current = {"level1": ["1_Alpha.py", "2_Beta.py", "3_Delta.py"]}
    assert published.timings_version(data, current["level1"], changelog) is None
    rows = published.match(OURS, data, current, changelog)
    assert not any(r.matched for r in rows)
    alpha = next(r for r in rows if r.problem == "1_Alpha.py")
    assert "predate v0.1" in alpha.why


def test_command_prints_the_distribution_and_writes_json(published, tmp_path: Path,
                                                        capsys) -> None:
    root = make_dataset(tmp_path / "kb", ["1_Alpha.py", "2_Beta.py", "3_Delta.py"])
    ours = ours_file(tmp_path / "ref.json", {**OURS, "level1/5_Failed": None})
    out = tmp_path / "cmp.json"
    assert published.main(["--ours", str(ours), "--kernelbench", str(root), "--hardware",
                           "GPU_X", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "level1/2_Beta" in text and "updated in v0.2" in text
    result = json.loads(out.read_text())
    by_level = {s["level"]: s for s in result["summary"]}
    assert (by_level["level1"]["timed"], by_level["level1"]["compared"]) == (4, 2)
    assert by_level["level1"]["median"] == pytest.approx(1.5)
    assert by_level["all"]["compared"] == 3
    assert by_level["all"]["median"] == pytest.approx(1.5)
    assert by_level["all"]["q1"] == pytest.approx(1.0)  # of 0.5, 1.5, 1.5
    failed = next(p for p in result["problems"] if p["problem"] == "5_Failed.py")
    assert failed["why"] == "not timed here"


def test_help(published, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        published.main(["--help"])
    assert done.value.code == 0 and "where the shapes match" in capsys.readouterr().out


def test_reads_tasks_check_json_output(published, tmp_path: Path) -> None:
    path = tmp_path / "check.json"
    path.write_text(json.dumps({"stats": {}, "tasks": ["kernelbench/level1/1_Alpha"],
                                "checks": [
                                    {"task_id": "kernelbench/level1/1_Alpha", "status": "ok",
                                     "ref_ms": 2.5, "timing_backend": "cuda"},
                                    {"task_id": "softmax", "status": "ok", "ref_ms": 1.0,
                                     "timing_backend": "cuda"}]}))
    ours, backend = published.read_ours(path)
    assert ours == {"level1/1_Alpha": 2.5} and backend == "cuda"


def test_a_problem_whose_timing_did_not_repeat_is_not_compared(published, tmp_path: Path,
                                                              capsys) -> None:
    root = make_dataset(tmp_path / "kb", ["1_Alpha.py", "2_Beta.py", "3_Delta.py"])
    path = ours_file(tmp_path / "ref.json", OURS)
    data = json.loads(path.read_text())
    data["tasks"]["kernelbench/level1/1_Alpha"]["timing_cv"] = 0.24  # timed beside other work
    data["tasks"]["kernelbench/level1/3_Delta"]["timing_cv"] = 0.004
    path.write_text(json.dumps(data))
    out = tmp_path / "cmp.json"
    assert published.main(["--ours", str(path), "--kernelbench", str(root), "--hardware",
                           "GPU_X", "--json", str(out)]) == 0
    assert "1 problem(s) left out: our timing's CV over 5%" in capsys.readouterr().out
    result = json.loads(out.read_text())
    why = {p["problem"]: p["why"] for p in result["problems"]}
    assert why["1_Alpha.py"] == "our timing did not repeat (CV 24.0% > 5%)"
    assert why["3_Delta.py"] == ""  # repeatable: compared
    level1 = next(s for s in result["summary"] if s["level"] == "level1")
    assert level1["compared"] == 1 and level1["median"] == pytest.approx(9.0 / 6.0)
    # a looser bound takes it back
    assert published.main(["--ours", str(path), "--kernelbench", str(root), "--hardware",
                           "GPU_X", "--max-cv", "0.3", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["problems"][0]["why"] == ""
