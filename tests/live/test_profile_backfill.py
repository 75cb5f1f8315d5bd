"""`kernelband traces profile`: every correct unprofiled kernel of a trace gets its profile as a
writer upgrade, batch by batch; failures are counted with reasons; a second pass continues."""

from __future__ import annotations

import os
import sys
import threading
import time
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


class SlowTaskProfiler(FakeProfiler):
    """Takes `per_kernel_s` per kernel of one task; the others are instant."""

    def __init__(self, slow_task: str, per_kernel_s: float):
        super().__init__(set())
        self.slow_task = slow_task
        self.per_kernel_s = per_kernel_s

    def profile_many(self, task: str, codes: list[str], *, batch_size: int) -> list:
        if task == self.slow_task:
            time.sleep(self.per_kernel_s * len(codes))
        return super().profile_many(task, codes, batch_size=batch_size)


def test_backfill_starts_no_batch_its_task_says_would_end_after_the_budget(
        tmp_path: Path) -> None:
    # one session, batches of 2; the slow task takes 2 s a kernel, the budget is 9.8 s: its
    # first two batches start (unknown rate; then 4 + 4 <= 9.8) and nothing of it after, while
    # the quick tasks' batches after its second still run. With q seconds for a quick batch and
    # for writing any batch, its second batch ends at 8 + 4q and the quick ones after it at
    # 8 + 6q; a batch of one more of its kernels would end at 10 + 6q: the budget holds this
    # for q up to 0.3 s (writing a batch took ~0.15 s on a loaded 2-core machine; 0.5 s a
    # kernel and a 2.6 s budget held it for q up to 0.1 s only)
    trace = _unprofiled_trace(tmp_path / "t")
    todo, _, _ = pending_kernels(trace)
    slow = sorted(todo)[0]
    quick = len(todo) - 1
    assert len(todo[slow]) > 6 and quick >= 1
    fake = SlowTaskProfiler(slow, per_kernel_s=2.0)
    report = backfill_profiles(trace, lambda spec: fake, batch_size=2, max_wall_s=9.8)
    slow_at = [i for i, (task, _) in enumerate(fake.calls) if task == slow]
    assert [fake.calls[i][1] for i in slow_at] == [2, 2]
    # quick batches went on after the slow task's second (the third round on)
    assert len(fake.calls) > slow_at[-1] + quick
    assert report.stopped == "wall-clock budget (--max-wall) reached"
    assert report.left == sum(len(v) for v in todo.values()) - report.profiled
    assert report.seconds < 9.8 + 0.3  # the last batch started ended about in time
    profiled = {k["kernel_id"] for k in load_trace(trace).kernels.to_pylist() if k["profiled"]}
    assert sum(r["kernel_id"] in profiled for r in todo[slow]) == 4


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


class GatedProfiler(FakeProfiler):
    """A profiler like NcuProfiler: start-up off the device, then its measured calls inside
    ``device_gate()``. The first `meet` sessions wait for one another at a barrier in their
    start-up (a run that never overlaps sessions breaks the barrier); `inside` counts the
    sessions measuring at once across instances."""

    def __init__(self, shared: dict, raise_on: str | None = None):
        super().__init__(set())
        self.shared = shared
        self.device_gate = None
        self.held_s = 0.0
        self.cancelled = False
        self.raise_on = raise_on

    def profile_many(self, task: str, codes: list[str], *, batch_size: int) -> list:
        shared = self.shared
        with shared["lock"]:
            shared["starts"] += 1
            first = shared["starts"] <= shared["meet"].parties
        if first:
            shared["meet"].wait()  # the first sessions are in their start-up together
        if self.raise_on == task:
            raise KeyboardInterrupt
        assert self.device_gate is not None
        with self.device_gate():
            with shared["lock"]:
                shared["inside"] += 1
                shared["most_inside"] = max(shared["most_inside"], shared["inside"])
            time.sleep(0.01)
            with shared["lock"]:
                shared["inside"] -= 1
            self.held_s += 0.01
        return super().profile_many(task, codes, batch_size=batch_size)

    def cancel(self) -> None:
        self.cancelled = True


def _shared(parties: int) -> dict:
    return {"lock": threading.Lock(), "starts": 0, "inside": 0, "most_inside": 0,
            "meet": threading.Barrier(parties, timeout=10)}


def test_sessions_overlap_but_their_measured_calls_take_turns(tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    todo, _, _ = pending_kernels(trace)
    n_pending = sum(len(v) for v in todo.values())
    shared = _shared(3)
    made: list[GatedProfiler] = []

    def profiler_for(spec: str) -> GatedProfiler:
        made.append(GatedProfiler(shared))
        return made[-1]

    report = backfill_profiles(trace, profiler_for, batch_size=2, sessions=3)
    assert len(made) == 3  # one profiler per session
    assert sum(len(p.calls) for p in made) == sum(-(-len(v) // 2) for v in todo.values())
    assert all(p.calls for p in made)  # every session profiled batches
    assert shared["most_inside"] == 1  # never two sessions measuring at once
    assert report.profiled == n_pending and report.failed == 0 and report.left == 0
    assert report.sessions == 3 and report.device_held_s > 0
    data = load_trace(trace)
    assert sum(1 for k in data.kernels.to_pylist() if k["profiled"]) == n_pending
    entry = data.manifests[0]["profile_backfill"][-1]
    assert entry["sessions"] == 3 and entry["device_held_s"] > 0
    assert entry["profiled"] == n_pending


def test_an_interrupted_pass_cancels_the_sessions_and_keeps_what_finished(
        tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    todo, _, _ = pending_kernels(trace)
    tasks = sorted(todo)
    shared = _shared(1)
    made: list[GatedProfiler] = []

    def profiler_for(spec: str) -> GatedProfiler:
        # the second session raises on the second task (as Ctrl-C would, mid-batch)
        made.append(GatedProfiler(shared, raise_on=tasks[1] if made else None))
        return made[-1]

    with pytest.raises(KeyboardInterrupt):
        backfill_profiles(trace, profiler_for, batch_size=2, sessions=2)
    assert all(p.cancelled for p in made)
    profiled = [k for k in load_trace(trace).kernels.to_pylist() if k["profiled"]]
    finished = sum(n for p in made for _, n in p.calls)
    assert finished >= 1 and len(profiled) == finished  # every finished batch is on disk


def test_sessions_must_be_at_least_one(tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    with pytest.raises(ValueError, match="sessions must be >= 1"):
        backfill_profiles(trace, lambda spec: FakeProfiler(set()), sessions=0)


# `ncu` for the CLI test below: starts up (0.4 s), asks the device gate for its turn like the
# target program, logs the turn, answers the H200 CSV for each --code file (the renamed kernel's
# name in it), and logs its own life, so the test can see sessions overlap and turns not.
GATED_NCU = '''#!{python}
import os, re, socket, sys, time
args = sys.argv[1:]
if "--query-metrics" in args:
    sys.exit(0)
log = open({log!r}, "a")
log.write(f"start {{os.getpid()}} {{time.monotonic()}}\\n"); log.flush()
time.sleep(0.4)
codes = [args[i + 1] for i, a in enumerate(args) if a == "--code"]
codes += [a.split("=", 1)[1] for i, a in enumerate(args) if i and args[i - 1] == "--item"]
gate = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
gate.connect(os.environ["KB_PROFILE_GATE"])
gate.sendall(b"r")
assert gate.recv(1) == b"g"
log.write(f"go {{os.getpid()}} {{time.monotonic()}}\\n"); log.flush()
time.sleep(0.15)
log.write(f"done {{os.getpid()}} {{time.monotonic()}}\\n"); log.flush()
gate.sendall(b"d")
lines = open({csv!r}).read().splitlines()
first = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
print(lines[first]); print(lines[first + 1])
n = 0
for path in codes:
    names = re.findall(r"def (\\w+__kb\\d+)", open(path).read())
    for row in lines[first + 2:]:
        if row.startswith('"') and names:
            cells = row.split('","')
            print('"' + str(n) + '","' + '","'.join(cells[1:]).replace("add_kernel", names[0]))
            n += 1
log.write(f"end {{os.getpid()}} {{time.monotonic()}}\\n"); log.flush()
'''


def test_cli_sessions_overlap_while_ncu_turns_do_not(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`traces profile --sessions 2` end to end on a real (CPU) live trace: real NcuProfilers
    and device gates, an `ncu` stand-in that takes its turn at the gate and answers a real
    H200 CSV."""
    from kernelband.cli import main
    from live.proposers import make_proposer
    from live.runner import LiveRunner, RunConfig
    from tests.live.test_resume_failed_k0 import K0Evaluator

    trace = tmp_path / "run"
    config = RunConfig(out=str(trace), tasks="add,softmax", policy="explore", steps=4, seed=0,
                       device="cpu", profile="off", in_flight=1)
    LiveRunner(config, make_proposer("mutate"), show_progress=False,
               evaluator=K0Evaluator("ok", "")).run()
    todo, _, _ = pending_kernels(trace)
    n_pending = sum(len(v) for v in todo.values())
    assert n_pending >= 4
    log = tmp_path / "ncu.log"
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text(GATED_NCU.format(python=sys.executable, log=str(log),
                                     csv=str(Path(__file__).parent / "fixtures" / "ncu" /
                                             "h200_add.csv")))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    result = CliRunner().invoke(main, ["traces", "profile", str(trace), "--sessions", "2",
                                       "--batch-size", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    assert f"profiled {n_pending}, failed 0, left 0" in result.output
    assert "2 session(s); the device measured for" in result.output
    events: dict[str, dict[str, float]] = {}
    for line in log.read_text().splitlines():
        what, pid, at = line.split()
        events.setdefault(pid, {})[what] = float(at)
    assert len(events) == n_pending  # one session per kernel (batch size 1)
    lives = sorted((e["start"], e["end"]) for e in events.values())
    turns = sorted((e["go"], e["done"]) for e in events.values())
    assert any(b[0] < a[1] for a, b in zip(lives, lives[1:], strict=False))  # sessions overlap
    assert all(a[1] <= b[0] for a, b in zip(turns, turns[1:], strict=False))  # turns never do
    entry = load_trace(trace).manifests[0]["profile_backfill"][-1]
    assert entry["sessions"] == 2 and entry["profiled"] == n_pending
    assert entry["device_held_s"] >= 0.15 * n_pending


def test_progress_counts_batches_that_end_out_of_order(tmp_path: Path) -> None:
    trace = _unprofiled_trace(tmp_path / "t")
    todo, _, _ = pending_kernels(trace)
    task = max(todo, key=lambda t: len(todo[t]))
    assert len(todo[task]) >= 4
    first = threading.Event()

    class SlowFirst(FakeProfiler):
        def profile_many(self, task_: str, codes: list[str], *, batch_size: int) -> list:
            if not first.is_set():
                first.set()
                time.sleep(0.5)  # the first batch ends after the second
            return super().profile_many(task_, codes, batch_size=batch_size)

    progress: list[tuple[str, int, int]] = []
    report = backfill_profiles(trace, lambda spec: SlowFirst(set()), tasks=[task],
                               batch_size=2, sessions=2,
                               on_batch=lambda t, done, of: progress.append((t, done, of)))
    done = [d for _, d, _ in progress]
    assert done == sorted(done) and len(set(done)) == len(done)  # only ever forward
    assert done[-1] == len(todo[task]) == report.profiled
