"""Evaluator workers forked from the fork server (`live.evaluator.forkserver`).

A forked worker must be what a started one was: its own session, no core dumps, its address-space
limit on the CPU, the scrubbed environment of the moment it starts (not the server's), fresh
random seeds, its end reported with its signal; and it must not pay for importing torch again.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from live.evaluator import Evaluator, EvaluatorConfig, forkserver
from live.evaluator.failures import FailureKind
from live.evaluator.forkserver import ForkedProcess
from live.evaluator.sandbox import WorkerProcess
from live.evaluator.settings import WorkerSettings
from tests.live.fixtures.candidates.tiny_tasks import SPEC

pytestmark = pytest.mark.skipif(not forkserver.enabled(), reason="fork server needs Linux")

ROOT = Path(__file__).resolve().parents[2]
GOOD = (Path(__file__).parent / "fixtures" / "candidates" / "vadd_good.py").read_text()


def started(memory_limit_mb: int | None = 4096) -> WorkerProcess:
    worker = WorkerProcess(WorkerSettings(device="cpu", memory_limit_mb=memory_limit_mb))
    worker.wait_ready(120)
    return worker


def _passes_in_a_worker(checks: str) -> None:
    """`checks` (asserts, run as the candidate module is loaded) pass in a forked worker."""
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=30,
                                   compile_timeout_s=60)) as ev:
        result = ev.evaluate("vadd", checks + GOOD, seed=0)
    assert result.status == "ok", result.error


def test_a_forked_worker_has_its_own_session_limits_folder_and_no_secrets(monkeypatch) -> None:
    monkeypatch.setenv("FAKE_API_KEY", "sk-planted-for-the-test")
    worker = started(memory_limit_mb=4096)
    try:
        assert isinstance(worker.proc, ForkedProcess)
        pid = worker.proc.pid
        proc = psutil.Process(pid)
        server = forkserver.server_for(worker.env)
        assert proc.ppid() == server.proc.pid  # forked, not started
        assert os.getsid(pid) == pid
        assert proc.rlimit(resource.RLIMIT_AS) == (4096 * 2**20, 4096 * 2**20)
        assert proc.rlimit(resource.RLIMIT_CORE) == (0, 0)
        assert os.path.realpath(proc.cwd()).startswith(os.path.realpath(tempfile.gettempdir()))
        # the environment the process began with (the server's) holds no secret either
        assert "FAKE_API_KEY" not in Path(f"/proc/{pid}/environ").read_bytes().decode(
            errors="replace")
        # ready without importing torch again (a started worker spends ~2 CPU-s on it)
        times = proc.cpu_times()
        assert times.user + times.system < 1.0
    finally:
        worker.shutdown()
    assert worker.proc.returncode == 0


def test_a_worker_gets_the_environment_of_the_moment_it_starts(monkeypatch) -> None:
    with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=30, compile_timeout_s=60)):
        pass  # the server for this environment is running now
    monkeypatch.setenv("KB_FORK_MARK", "set-after-the-server")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "planted")
    checks = ("import os\n"
              "assert os.environ.get('KB_FORK_MARK') == 'set-after-the-server', 'mark missing'\n"
              "assert not any('TOKEN' in name for name in os.environ), 'secret visible'\n")
    _passes_in_a_worker(checks)


def test_forked_workers_draw_different_random_numbers() -> None:
    draw = ("import random\nimport numpy\n"
            "raise ValueError(f'draw {random.random()!r} {numpy.random.random()!r}')\n")
    errors = []
    for _ in range(2):
        with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=30,
                                       compile_timeout_s=60)) as ev:
            errors.append(ev.evaluate("vadd", draw + GOOD, seed=0).error)
    assert all("draw " in error for error in errors), errors
    python_draws = [error.split("draw ")[1].split()[0] for error in errors]
    numpy_draws = [error.split("draw ")[1].split()[1] for error in errors]
    assert python_draws[0] != python_draws[1]
    assert numpy_draws[0] != numpy_draws[1]


def test_a_forked_worker_s_collections_leave_the_server_s_imports_out() -> None:
    """The server froze what its imports made (torch's and triton's ~180,000 objects): a
    worker's garbage collections skip them and still collect the worker's own cycles."""
    checks = ("import gc\n"
              "assert gc.isenabled(), 'collections are off'\n"
              "assert gc.get_freeze_count() > 100_000, f'{gc.get_freeze_count()} frozen'\n"
              "class _Cycle:\n    pass\n"
              "_a, _b = _Cycle(), _Cycle()\n_a.other, _b.other = _b, _a\ndel _a, _b\n"
              "assert gc.collect() >= 2, 'a cycle was not collected'\n")
    _passes_in_a_worker(checks)


def test_a_worker_killed_from_outside_is_reported_with_its_signal() -> None:
    worker = started()
    try:
        os.kill(worker.proc.pid, signal.SIGKILL)
        got = worker.receive(30)
        assert got.kind == "died"
        assert "signal 9 (SIGKILL)" in got.detail
        assert got.failure is FailureKind.KILLED_BY_SYSTEM  # kernelband did not send it
    finally:
        worker.kill()


def test_a_dead_fork_server_is_replaced_by_a_fresh_one() -> None:
    first = started()
    server = forkserver.server_for(first.env)
    first.shutdown()
    server.proc.kill()
    server.proc.wait(10)
    second = started()
    try:
        assert isinstance(second.proc, ForkedProcess)
        assert psutil.Process(second.proc.pid).ppid() != server.proc.pid
    finally:
        second.shutdown()


def test_workers_start_as_their_own_interpreter_when_forking_is_off(monkeypatch) -> None:
    monkeypatch.setenv("KERNELBAND_WORKER_START", "exec")
    worker = started()
    try:
        assert isinstance(worker.proc, subprocess.Popen)
        assert os.getsid(worker.proc.pid) == worker.proc.pid
    finally:
        worker.shutdown()


def test_a_fork_server_that_cannot_start_is_not_tried_again(monkeypatch) -> None:
    tries = []

    def cannot_start(self, env, log=None) -> None:
        tries.append(env)
        raise forkserver.ForkServerError("the worker fork server did not start")

    monkeypatch.setattr(forkserver, "_servers", {})
    monkeypatch.setattr(forkserver, "_failed", set())
    monkeypatch.setattr(forkserver.ForkServer, "__init__", cannot_start)
    with pytest.warns(RuntimeWarning, match="start as their own interpreters"):
        first = started()
    second = started()
    try:
        assert isinstance(first.proc, subprocess.Popen)
        assert isinstance(second.proc, subprocess.Popen)
        assert len(tries) == 1  # the second worker did not wait for another failing server
    finally:
        first.shutdown()
        second.shutdown()


def test_a_server_whose_evaluator_goes_while_it_imports_ends_at_once(tmp_path: Path) -> None:
    """The evaluator's process killed while its server imports torch: the server ends then, not
    after its imports (here one that would take a minute)."""
    marker = tmp_path / "importing"
    (tmp_path / "kb_slow_import.py").write_text(
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(60)\n")
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    code = ("from live.evaluator import forkserver; "
            "forkserver.PRELOAD = ('kb_slow_import',); forkserver.main()")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(ROOT)))})
    theirs.close()
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, "the server ended before its evaluator did"
            assert time.monotonic() < deadline, "the server never reached its imports"
            time.sleep(0.05)
        ours.close()  # as the kernel does for a SIGKILLed evaluator's descriptors
        gone = time.monotonic()
        assert proc.wait(timeout=30) == 0
        assert time.monotonic() - gone < 30  # not the import's 60 s
    finally:
        ours.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
