"""Bad input everywhere (issue 9): one clear sentence, a non-zero exit, no traceback, and no
partial file left behind — malformed configs, unknown names, a TritonBench path that is not
one, a trace from a newer schema, and a disk that fills up while a trace or results are written.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbsim.trace.synthetic_trace import write_synthetic_trace
from kernelband.cli import main
from tests.live.fixtures.hostile.fault_table import record

SUITE = "bad input (CLI)"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def message_of(result: Result) -> str:
    return (result.stderr or result.output).strip()


def assert_one_sentence(result: Result, needle: str) -> None:
    text = message_of(result)
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    assert "Traceback" not in result.output and "Traceback" not in (result.stderr or "")
    # (a first replay of this kbsim version also says, on its own line, that it compiles)
    error_lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(
        ("Usage:", "Try ", "compiling the replay engine"))]
    assert len(error_lines) == 1, text
    assert needle in error_lines[0], text


def leftovers(path: Path) -> list[str]:
    """Temp or partial files under `path` (nothing, if `path` was never created)."""
    if not path.exists():
        return []
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")
                  if p.is_file() and (".tmp" in p.name or p.name.startswith(".tmp")))


LIVE = ("live", "--device", "cpu", "--profile", "off", "--quiet", "--steps", "1")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("label", "make_args", "needle"),
    [
        ("malformed YAML config",
         lambda d: ["--config", write(d / "c.yaml", "tasks: [add\nsteps: 3\n")],
         "is not valid YAML/JSON"),
        ("malformed JSON config",
         lambda d: ["--config", write(d / "c.json", '{"tasks": "add",')],
         "is not valid YAML/JSON"),
        ("config that is a list",
         lambda d: ["--config", write(d / "c.yaml", "- add\n- softmax\n")],
         "must hold a mapping"),
        ("config with an unknown option",
         lambda d: ["--config", write(d / "c.yaml", "taks: add\n")],
         "unknown option(s) taks"),
        ("config file that does not exist", lambda d: ["--config", d / "missing.yaml"],
         "No such file or directory"),
        ("in_flight 0 in a config",
         lambda d: ["--config", write(d / "c.yaml", "in_flight: 0\n")], "in_flight must be >= 1"),
        ("shard index past the count", lambda d: ["--tasks", "add", "--shard", "3/3"],
         "shard must be K/N with 0 <= K < N"),
        ("shard that is not K/N", lambda d: ["--tasks", "add", "--shard", "x"],
         "shard must be K/N with 0 <= K < N"),
        ("unknown task name", lambda d: ["--tasks", "no_such_task"], "no_such_task"),
        ("unknown policy name", lambda d: ["--tasks", "add", "--policy", "no-such-policy"],
         "no-such-policy"),
        ("bad policy parameter", lambda d: ["--tasks", "add", "--policy", "kernelband-v2:K=abc"],
         "K"),
        ("TritonBench path that does not exist",
         lambda d: ["--tasks", f"tritonbench:{d / 'nowhere'}"], "nowhere"),
        ("TritonBench path that is a file",
         lambda d: ["--tasks", f"tritonbench:{write(d / 'x.py', 'x = 1')}"], "x.py"),
        ("TritonBench folder without operators",
         lambda d: ["--tasks", f"tritonbench:{d}"], str(Path("x")).strip("x") or ""),
    ],
)
def test_live_refuses_bad_input_in_one_sentence(tmp_path, label, make_args, needle):
    bad = tmp_path / "bad"
    bad.mkdir()
    out = tmp_path / "out"
    result = invoke(*LIVE, "--out", out, *make_args(bad))
    record(SUITE, f"kernelband live: {label}", "one sentence, exit != 0, no trace",
           f"exit {result.exit_code}: {message_of(result).splitlines()[-1:]}")
    assert_one_sentence(result, needle)
    assert not out.exists()  # refused before anything was written


def newer_trace(tmp_path: Path) -> Path:
    trace = write_synthetic_trace(tmp_path / "newer", n_steps=20, n_tasks=1, seed=0)
    manifest_path = trace / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["schema_version"] = 99
    manifest_path.write_text(json.dumps(manifest))
    return trace


@pytest.mark.parametrize(
    ("label", "args"),
    [
        ("traces validate", ["traces", "validate"]),
        ("traces info", ["traces", "info"]),
        ("replay --trace", ["replay", "--policy", "random", "--seeds", "1", "--steps", "5",
                            "--trace"]),
    ],
)
def test_a_trace_from_a_newer_schema_is_refused(tmp_path, label, args):
    trace = newer_trace(tmp_path)
    result = invoke(*args, trace)
    record(SUITE, f"kernelband {label} on a schema-99 trace", "one sentence naming the version",
           f"exit {result.exit_code}: {message_of(result).splitlines()[-1:]}")
    assert_one_sentence(result, "99")


@pytest.mark.parametrize(
    ("label", "args", "needle"),
    [
        ("replay of a trace that does not exist",
         ["replay", "--policy", "random", "--trace", "/nonexistent/trace"], "/nonexistent/trace"),
        ("replay with an unknown policy",
         ["replay", "--synthetic", "default", "--policy", "nope", "--seeds", "1"], "nope"),
        ("tasks check of an unknown task", ["tasks", "check", "--tasks", "no_such_task"],
         "no_such_task"),
    ],
)
def test_other_commands_refuse_bad_names(label, args, needle):
    result = invoke(*args)
    record(SUITE, f"kernelband {label}", "one sentence, exit != 0",
           f"exit {result.exit_code}: {message_of(result).splitlines()[-1:]}")
    assert_one_sentence(result, needle)


# -- disk full while writing (simulated) --------------------------------------------------------

def _disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _parquet_fills_the_disk(table, where, *_args, **_kwargs):
    """Stands in for pyarrow.parquet.write_table on a full disk: some bytes, then ENOSPC."""
    if hasattr(where, "write"):
        where.write(b"PAR1 half a file")
    else:
        Path(where).write_bytes(b"PAR1 half a file")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(getattr(where, "name", where)))


def test_disk_full_while_the_manifest_is_written(tmp_path, monkeypatch):
    source = write_synthetic_trace(tmp_path / "source", n_steps=10, n_tasks=1, seed=0)
    out = tmp_path / "merged"
    monkeypatch.setattr(os, "fsync", _disk_full)  # the bytes reached the page cache, not disk
    result = invoke("traces", "merge", source, "--out", out)
    left = leftovers(out)
    record(SUITE, "disk full (ENOSPC, at fsync) while traces merge writes",
           "one sentence, exit != 0, no partial file",
           f"exit {result.exit_code}: {message_of(result).splitlines()[-1:]}; leftovers {left}")
    assert_one_sentence(result, "No space left on device")
    assert left == []


def test_disk_full_while_replay_writes_results(tmp_path, monkeypatch):
    out = tmp_path / "results"
    monkeypatch.setattr("pyarrow.parquet.write_table", _parquet_fills_the_disk)
    result = invoke("replay", "--synthetic", "default,tasks=2", "--policy", "random",
                    "--seeds", "2", "--steps", "5", "--out", out)
    left = leftovers(out)
    record(SUITE, "disk full (ENOSPC) while replay writes its results",
           "one sentence, exit != 0, no partial file",
           f"exit {result.exit_code}: {message_of(result).splitlines()[-1:]}; leftovers {left}")
    assert_one_sentence(result, "No space left on device")
    assert left == []


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                    reason="CPU runs need TRITON_INTERPRET=1")
def test_disk_full_while_live_writes_its_trace(tmp_path, monkeypatch):
    out = tmp_path / "trace"
    monkeypatch.setattr("pyarrow.parquet.write_table", _parquet_fills_the_disk)
    result = invoke(*LIVE, "--tasks", "add", "--policy", "random", "--out", out)
    left = leftovers(out)
    record(SUITE, "disk full (ENOSPC) while kernelband live writes its trace",
           "one sentence, exit != 0, no partial file",
           f"exit {result.exit_code}: {message_of(result).splitlines()[-1:]}; leftovers {left}")
    assert_one_sentence(result, "No space left on device")
    assert left == []
