"""benchmarks/gpu/dataset_readme.py on the small real H100 trace and on a planted manifest."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from tests.analysis.fixtures import write_trace

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "traces" / "live-v2-mutate-h100"


def _script():
    spec = importlib.util.spec_from_file_location(
        "dataset_readme", ROOT / "benchmarks" / "gpu" / "dataset_readme.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (REAL / "manifest.json").exists(), reason="the small real trace is absent")
def test_readme_of_the_small_real_trace(tmp_path: Path) -> None:
    out = tmp_path / "README.md"
    assert _script().main([str(REAL), "--out", str(out)]) == 0
    text = out.read_text()
    assert "NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)" in text
    assert "torch 2.11.0+cu130, triton 3.6.0" in text
    assert "| attempts | 68 (41 not_applicable, 27 ok) |" in text
    assert "| not_applicable rule | recorded before issue #18:" in text
    assert "41 distinct, 41 correct, 16 profiled" in text
    assert "2026-11-21 22:22 to 2026-11-21 22:25 UTC" in text
    assert "| `kernelband traces validate` | passes |" in text
    # no command line recorded: one rebuilt from the manifest's config, labelled so
    assert "Rebuilt from the manifest's `config`" in text
    assert "kernelband live" in text and "--policy kernelband-v2 --proposer mutate" in text
    assert "| swiglu | 20 | 14 | 6 | 1.677 | 6 | 3 |" in text
    assert "Tasks in the manifest without attempts: attention" in text
    assert "size on disk" in text and "B (steps " in text  # KB or MB: the parts are compacted


def test_given_commands_and_versions_in_the_manifest(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "tr")
    script = _script()
    assert script.main([str(trace), "--command", "kernelband live --tasks builtin",
                        "--command", "kernelband live --tasks builtin --resume"]) == 0
    text = (trace / "README.md").read_text()
    assert "```bash\nkernelband live --tasks builtin\nkernelband live --tasks builtin --resume" \
        in text
    assert "torch 2.4, triton 3.1, CUDA 12.4, driver 550.54" in text
    assert "NVIDIA H100 80GB HBM3" in text and "openai (model gpt-test)" in text


def test_an_existing_readme_is_kept_unless_forced(tmp_path: Path, capsys) -> None:
    trace = write_trace(tmp_path / "tr")
    (trace / "README.md").write_text("hand-written notes\n")
    script = _script()
    assert script.main([str(trace)]) == 1
    assert "exists (pass --force" in capsys.readouterr().err
    assert (trace / "README.md").read_text() == "hand-written notes\n"
    assert script.main([str(trace), "--force"]) == 0
    assert "Not recorded in the manifest" in (trace / "README.md").read_text()


def test_a_broken_dataset_is_one_sentence(tmp_path: Path, capsys) -> None:
    trace = write_trace(tmp_path / "tr")
    shutil.rmtree(trace / "steps")
    assert _script().main([str(trace)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_versions_the_manifest_lacks_come_from_nvidia_smi_and_flags(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "tr")
    smi = tmp_path / "gpu.txt"
    smi.write_text("name, driver_version, clocks.sm [MHz], clocks.max.sm [MHz]\n"
                   "NVIDIA H100 80GB HBM3, 580.159.04, 1980 MHz, 1980 MHz\n")
    script = _script()
    out = tmp_path / "R.md"
    assert script.main([str(trace), "--out", str(out), "--nvidia-smi", str(smi),
                        "--software", "Nsight Compute=2025.3"]) == 0
    text = out.read_text()
    # the manifest's own driver (550.54) wins over the file's; the flag adds Nsight Compute
    assert "driver 550.54" in text and "580.159.04" not in text
    assert "Nsight Compute 2025.3" in text
    assert script.nvidia_smi_versions(smi) == [("driver", "580.159.04")]
    assert script.main([str(trace), "--out", str(out), "--force", "--software", "oops"]) == 1


def test_a_rebuilt_command_uses_the_live_command_s_own_flags() -> None:
    """Config keys map to `kernelband live`'s options, not to their names spelled as flags."""
    command = _script().rebuilt_command({
        "config": {"tasks": "builtin", "timing_patience_s": 2.0, "max_wall_s": 400.0,
                   "eval_timeout_s": 120.0, "in_flight": 12, "gpu_memory_gib": None},
        "proposer": {"kind": "mutate"}})
    assert command == ("kernelband live --tasks builtin --timing-patience 2.0 --max-wall 400.0 "
                       "--eval-timeout 120.0 --in-flight 12")
