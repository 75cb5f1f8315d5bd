"""compute-sanitizer's reports read into why a passing plain script is hollow.

The report texts are excerpts of real runs (an H200, compute-sanitizer memcheck and initcheck
on TritonBench-G's `matmul_kernel` and `context_attn_llama`); the runs themselves are made here
with a stand-in `compute-sanitizer` on PATH that prints such a report and runs the command, so
the plumbing (operator folder, environment, time limit, log) is exercised without a GPU.
"""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelband.cli import main
from live.tasks.tritonbench.sanitize import (
    SanitizerRun,
    explain,
    find_sanitizer,
    parse_report,
    run_part,
)

OUT_OF_BOUNDS = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 16 bytes
=========     at matmul_kernel+0x19f0 in kb_tb_gold_matmul_kernel_2f8d.py:30
=========     by thread (0,0,0) in block (2,1,0)
=========     Access to 0x7f17a3c00100 is out of bounds
=========     and is 257 bytes after the nearest allocation at 0x7f17a2800000
=========
========= Invalid __global__ read of size 16 bytes
=========     at matmul_kernel+0x19f0 in kb_tb_gold_matmul_kernel_2f8d.py:30
=========     by thread (1,0,0) in block (2,1,0)
=========     Access to 0x7f17a3c00110 is out of bounds
=========
========= ERROR SUMMARY: 2050 errors
"""

UNINITIALISED = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at _fwd_kernel+0x1040 in context_attn_llama.py:82
=========     by thread (0,0,0) in block (0,43,0)
=========     Address 0x7fc6cc008d60
"""


def test_a_report_gives_its_count_and_distinct_errors_with_place_and_kind() -> None:
    count, errors = parse_report(OUT_OF_BOUNDS)
    assert count == 2050
    assert errors == ["Invalid __global__ read of size 16 bytes at matmul_kernel "
                      "(kb_tb_gold_matmul_kernel_2f8d.py:30): out of bounds"]


def test_a_report_cut_short_counts_the_errors_it_shows() -> None:
    count, errors = parse_report(UNINITIALISED)  # stopped at the time limit: no summary
    assert count == 1
    assert errors == ["Uninitialized __global__ memory read of size 4 bytes at _fwd_kernel "
                      "(context_attn_llama.py:82)"]
    assert parse_report("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") \
        == (0, [])


def test_the_sentence_names_each_part_and_tool_that_found_something() -> None:
    runs = [SanitizerRun("op", "plain", "memcheck", 0, 1.0, 0),
            SanitizerRun("op", "plain", "initcheck", "timeout", 110.0, 1,
                         ["Uninitialized __global__ memory read of size 4 bytes"]),
            SanitizerRun("op", "perf", "memcheck", 1, 9.0, 2050, ["Invalid read: out of bounds"])]
    sentence = explain(runs)
    assert sentence == ("compute-sanitizer: its plain script under initcheck, 1 error, stopped "
                        "at the time limit: Uninitialized __global__ memory read of size 4 "
                        "bytes; its performance inputs under memcheck, 2050 errors: Invalid "
                        "read: out of bounds")
    assert explain(runs[:1]) is None


def _operator(folder: Path, name: str, code: str) -> None:
    """An operator file as TritonBench-G lays one out: code, a line of 146 '#', test code."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(f"{code}\n\n{'#' * 146}\n\nresult_gold = {{}}\n")


@pytest.fixture
def fake_sanitizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `compute-sanitizer` that prints an out-of-bounds report and runs the command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "compute-sanitizer"
    report = "".join(f"echo '{line}'\n" for line in OUT_OF_BOUNDS.splitlines()[:6])
    tool.write_text("#!/bin/sh\n" + report + textwrap.dedent("""\
        shift 6  # --tool T --print-limit N --target-processes all
        "$@"
        status=$?
        echo '========= ERROR SUMMARY: 1 error'
        exit $status
        """))
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tool


def test_a_plain_script_runs_in_its_folder_under_the_tool(tmp_path: Path,
                                                           fake_sanitizer: Path) -> None:
    ops = tmp_path / "bench" / "TritonBench_G_v1"
    _operator(ops, "myop", "import os\nprint('ran in', os.path.basename(os.getcwd()))")
    assert find_sanitizer() == str(fake_sanitizer)
    log = tmp_path / "myop.log"
    run = run_part(tmp_path / "bench", "myop", "plain", "memcheck", timeout_s=60, log=log)
    assert (run.status, run.errors, run.tool) == (0, 1, "memcheck")
    assert run.first_errors[0].endswith("(kb_tb_gold_matmul_kernel_2f8d.py:30): out of bounds")
    assert "ran in TritonBench_G_v1" in log.read_text()
    plain = run_part(tmp_path / "bench", "myop", "plain", None, timeout_s=60)
    assert (plain.status, plain.errors, plain.first_errors, plain.tool) == (0, None, [], "none")


def test_a_run_past_its_time_limit_is_marked_so(tmp_path: Path, fake_sanitizer: Path) -> None:
    ops = tmp_path / "bench"
    _operator(ops, "slow", "import time\ntime.sleep(30)")
    run = run_part(ops, "slow", "plain", "initcheck", timeout_s=1)
    assert run.status == "timeout"
    assert run.seconds < 20


def test_bad_part_tool_or_operator_are_one_sentence_errors(tmp_path: Path) -> None:
    _operator(tmp_path, "x", "x = 1")
    with pytest.raises(ValueError, match="part must be one of plain, perf"):
        run_part(tmp_path, "x", "gold", None)
    with pytest.raises(ValueError, match="tool must be one of memcheck, initcheck"):
        run_part(tmp_path, "x", "plain", "racecheck", sanitizer="/bin/true")
    with pytest.raises(FileNotFoundError, match="no operator file missing.py"):
        run_part(tmp_path, "missing", "plain", None)


def test_explain_skips_needs_a_tritonbench_spec() -> None:
    result = CliRunner().invoke(main, ["tasks", "check", "--tasks", "builtin", "--device", "cpu",
                                      "--explain-skips"])
    assert result.exit_code != 0
    assert "--explain-skips needs a TritonBench-G spec" in result.output


def test_a_hollow_pass_is_kept_with_its_skip_for_later_loads(tritonbench_mini_load,
                                                             tritonbench_mini_cache) -> None:
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions
    from live.tasks.tritonbench import remember_hollow
    from tests.live.conftest import TRITONBENCH_MINI

    op = tritonbench_mini_load.skipped[0][0]
    sentence = "compute-sanitizer: its plain script under memcheck, 3 errors: out of bounds"
    assert remember_hollow(TRITONBENCH_MINI, op, "cpu", sentence)
    assert not remember_hollow(TRITONBENCH_MINI, "no_such_operator", "cpu", sentence)
    loaded = load_tasks(f"tritonbench:{TRITONBENCH_MINI}", LoadOptions(device="cpu"))
    hollow = {s.op: s.hollow for s in loaded.skipped}
    assert hollow[op] == sentence
    assert [o for o, h in hollow.items() if h is not None] == [op]
    assert loaded.stats["checked"] == 0  # read back from the cache, not checked again


def test_a_candidate_runs_the_chosen_performance_inputs(tmp_path: Path) -> None:
    """The perf part's plumbing on the CPU, without a tool: the gold code's own code part as
    the candidate runs; a candidate that breaks says how, on the first input it meets."""
    from live.tasks.tritonbench.format import operator_source
    from tests.live.conftest import TRITONBENCH_MINI

    code = operator_source(str(TRITONBENCH_MINI.resolve()), "add").code
    good = tmp_path / "good.py"
    good.write_text(code)
    log = tmp_path / "good.log"
    run = run_part(TRITONBENCH_MINI, "add", "perf", None, indices=[1, 0], candidate=good,
                   device="cpu", timeout_s=240, log=log)
    assert run.status == 0, log.read_text()[-2000:]
    assert "perf input 1: ran\nperf input 0: ran" in log.read_text()
    broken = tmp_path / "broken.py"
    broken.write_text(code + "\n\ndef add(*args, **kwargs):\n    raise RuntimeError('no')\n")
    log = tmp_path / "broken.log"
    run_part(TRITONBENCH_MINI, "add", "perf", None, indices=[0], candidate=broken,
             device="cpu", timeout_s=240, log=log)
    assert "perf input 0: RuntimeError: no" in log.read_text()
    with pytest.raises(ValueError, match="a candidate runs only the perf part"):
        run_part(TRITONBENCH_MINI, "add", "plain", None, candidate=good)


def test_a_passing_operator_the_sanitizer_finds_errors_in_is_skipped_for_later_loads_too(
        tritonbench_mini_load, tmp_path: Path, fake_sanitizer: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`tasks check --sanitize OP`: the stand-in sanitizer reports an out-of-bounds read in
    the gold code of `add`, which passed its check; `add` is skipped as a hollow pass, now and
    in a later load read from the cache."""
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions
    from live.tasks.tritonbench.sanitize import sanitize_passing
    from tests.live.conftest import TRITONBENCH_MINI

    monkeypatch.setenv("KERNELBAND_CACHE_DIR",
                       str(tritonbench_mini_load.cache_copy(tmp_path / "cache")))
    spec = f"tritonbench:{TRITONBENCH_MINI}"
    loaded = load_tasks(spec, LoadOptions(device="cpu"))
    passed = len(loaded.tasks)
    assert "tritonbench/add" in [t.name for t in loaded.tasks]
    skipped_op = loaded.skipped[0].op
    with pytest.raises(ValueError, match=f"{skipped_op} did not pass the load"):
        sanitize_passing(TRITONBENCH_MINI, loaded, [skipped_op], device="cpu")

    seen: list[str] = []
    found = sanitize_passing(TRITONBENCH_MINI, loaded, ["add"], device="cpu", indices=[0],
                             timeout_s=240, sanitizer=str(fake_sanitizer), progress=seen.append)
    assert seen == ["add"]
    [(op, sentence)] = found
    assert op == "add" and sentence is not None
    assert sentence.startswith("compute-sanitizer: its plain script under memcheck, 1 error: "
                               "Invalid __global__ read of size 16 bytes")
    assert "its performance inputs under memcheck" in sentence
    assert "tritonbench/add" not in [t.name for t in loaded.tasks]
    assert "tritonbench/add" not in loaded.findings
    assert loaded.stats["passed"] == passed - 1
    skip = {s.op: s for s in loaded.skipped}["add"]
    assert skip.reason == f"its gold check passes, but hollowly: {sentence}"
    assert skip.hollow == sentence

    again = load_tasks(spec, LoadOptions(device="cpu"))
    assert again.stats["checked"] == 0  # from the cache
    assert len(again.tasks) == passed - 1 == again.stats["passed"]
    assert {s.op: s.reason for s in again.skipped}["add"] == skip.reason


def test_an_operator_the_sanitizer_finds_nothing_in_stays_loaded(
        tritonbench_mini_load, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from live.tasks.registry import load_tasks
    from live.tasks.sources import LoadOptions
    from live.tasks.tritonbench import sanitize
    from tests.live.conftest import TRITONBENCH_MINI

    monkeypatch.setenv("KERNELBAND_CACHE_DIR",
                       str(tritonbench_mini_load.cache_copy(tmp_path / "cache")))
    calls = []
    monkeypatch.setattr(sanitize, "explain_operator",
                        lambda data, op, **kw: calls.append((op, kw["indices"])) or (None, []))
    spec = f"tritonbench:{TRITONBENCH_MINI}"
    loaded = load_tasks(spec, LoadOptions(device="cpu"))
    names = [t.name for t in loaded.tasks]
    assert sanitize.sanitize_passing(TRITONBENCH_MINI, loaded, ["add"], device="cpu",
                                     indices=[12, 15]) == [("add", None)]
    assert calls == [("add", [12, 15])]
    assert [t.name for t in loaded.tasks] == names
    assert [t.name for t in load_tasks(spec, LoadOptions(device="cpu")).tasks] == names


def test_sanitize_needs_a_tritonbench_spec() -> None:
    result = CliRunner().invoke(main, ["tasks", "check", "--tasks", "builtin", "--device", "cpu",
                                      "--sanitize", "softmax"])
    assert result.exit_code != 0
    assert "--sanitize needs a TritonBench-G spec" in result.output
