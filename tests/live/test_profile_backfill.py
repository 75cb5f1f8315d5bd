"""`kernelband traces profile`: every correct unprofiled kernel of a trace gets its profile as a
writer upgrade, batch by batch; failures are counted with reasons; a second pass continues."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from kbsim.trace.reader import load_trace
from kbsim.trace.synthetic_trace import synthetic_tables
from kbsim.trace.writer import TraceWriter
from live.evaluator import kernel_id
from live.profiler.backfill import backfill_profiles, pending_kernels
from live.profiler.ncu import ProfileResult


def _unprofiled_trace(path: Path) -> Path:
    steps, kernels = synthetic_tables(120, 3, seed=4)
    n = kernels.num_rows
    kernels = kernels.set_column(kernels.schema.get_field_index("profiled"), "profiled",
                                 pa.array([False] * n))
    for name in ("hw_sig", "profile9"):
        index = kernels.schema.get_field_index(name)
        kernels = kernels.set_column(index, kernels.schema.field(name),
                                     pa.nulls(n, kernels.schema.field(name).type))
    manifest = {"hardware": {"gpu_name": "test"}, "proposer": {"kind": "test"},
                "policy": {"name": "explore", "params": {}},
                "tasks": sorted(set(kernels.column("task_id").to_pylist())),
                "run_ids": [steps.column("run_id")[0].as_py()]}
    with TraceWriter(path, manifest, flush_every=2**62) as writer:
        writer.append_kernels(kernels)
        writer.append_steps(steps)
    return path


class FakeProfiler:
    """Profiles every kernel except those whose code contains `refuse`; counts calls."""

    available = True
    unavailable_reason = None

    def __init__(self, refuse: set[str]):
        self.refuse = refuse
        self.calls: list[tuple[str, int]] = []

    def profile_many(self, task: str, codes: list[str], *, batch_size: int) -> list:
        self.calls.append((task, len(codes)))
        out = []
        for code in codes:
            kid = kernel_id(code)
            if kid in self.refuse:
                out.append(ProfileResult(kid, task, profiled=False, profiler="ncu",
                                         error="no kernel launch captured by ncu; exit 1"))
            else:
                out.append(ProfileResult(kid, task, profiled=True, profiler="ncu",
                                         hw_sig=(10.0, 20.0, 30.0), profile9=tuple([1.0] * 9)))
        return out


def test_backfill_profiles_every_correct_kernel_and_a_second_pass_continues(
        tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    todo, already, rows = pending_kernels(trace)
    n_pending = sum(len(v) for v in todo.values())
    n_correct = sum(1 for r in rows if r["correct"])
    assert already == 0 and n_pending == n_correct > 10
    refuse = {todo[sorted(todo)[0]][0]["code"]}
    fake = FakeProfiler({kernel_id(c) for c in refuse})
    report = backfill_profiles(trace, lambda spec: fake, batch_size=4)
    assert report.profiled == n_pending - 1 and report.failed == 1 and report.left == 0
    assert report.errors == {"no kernel launch captured by ncu": 1}
    assert max(n for _, n in fake.calls) <= 4
    data = load_trace(trace)  # validates, profile upgrades applied
    kernels = data.kernels.to_pylist()
    profiled = [k for k in kernels if k["profiled"]]
    assert len(profiled) == n_pending - 1
    assert all(k["hw_sig"] == [10.0, 20.0, 30.0] and k["profiler"] == "ncu" for k in profiled)
    assert len(kernels) == len(rows)  # upgrades replace, never duplicate
    assert data.manifests[0]["profile_backfill"][0]["profiled"] == n_pending - 1
    # the second pass sees only the one that failed
    todo2, already2, _ = pending_kernels(trace)
    assert sum(len(v) for v in todo2.values()) == 1 and already2 == n_pending - 1


def test_backfill_stops_at_the_wall_clock_budget(tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    report = backfill_profiles(trace, lambda spec: FakeProfiler(set()), batch_size=4,
                               max_wall_s=0.0)
    assert report.profiled == 0 and report.left > 0
    assert report.stopped == "wall-clock budget (--max-wall) reached"


def test_cli_says_in_one_line_when_there_is_no_profiler(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelband.cli import main

    trace = _unprofiled_trace(tmp_path / "t")
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu on PATH
    monkeypatch.setattr("live.profiler.ncu._default_ncu", lambda: None)
    result = CliRunner().invoke(main, ["traces", "profile", str(trace), "--quiet"])
    assert result.exit_code == 1
    assert "profiler unavailable: ncu not found on PATH" in result.output
    assert "Traceback" not in result.output


def test_backfill_goes_round_robin_over_tasks(tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    fake = FakeProfiler(set())
    backfill_profiles(trace, lambda spec: fake, batch_size=2)
    tasks = [task for task, _ in fake.calls]
    n_tasks = len(set(tasks))
    assert n_tasks >= 2
    assert len(set(tasks[:n_tasks])) == n_tasks  # every task gets a batch before any a second


def test_cli_with_nothing_pending_says_so_and_succeeds(tmp_path: Path) -> None:
    from kernelband.cli import main

    trace = _unprofiled_trace(tmp_path / "t")
    backfill_profiles(trace, lambda spec: FakeProfiler(set()), batch_size=8)
    result = CliRunner().invoke(main, ["traces", "profile", str(trace), "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("0 correct kernels to profile (")
    assert len(result.output.splitlines()) == 1  # no "profiled 0, failed 0 ..." line
