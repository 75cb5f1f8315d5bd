"""Hostile candidates (tests/live/fixtures/hostile) against the real evaluator on CPU (issue 9).

Two layers are tested separately. The static pre-check (`live.evaluator.static_check`, on in the
live runner) rejects what it can spot, in the parent, before any worker sees the code. With it
off, the sandbox alone must still classify every candidate, keep serving, hide API keys, and stop
the candidate's own code from touching the network, other processes or files outside its
directory (the worker's audit guard). One evaluator with small timeouts serves the whole module.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from live.evaluator import Evaluator, EvaluatorConfig
from live.evaluator.static_check import static_check
from tests.live.fixtures.candidates.tiny_tasks import SPEC
from tests.live.fixtures.hostile.fault_table import record

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"
GOOD = (Path(__file__).parent / "fixtures" / "candidates" / "vadd_good.py").read_text()

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1", reason="CPU runs need TRITON_INTERPRET=1"
)


@dataclass(frozen=True)
class Case:
    name: str
    fault: str
    rejected_because: str | None  # substring of the static check's reason; None: it passes
    status: str  # what the sandbox alone makes of it (static check off), on CPU
    message: str  # substring of the error ("" for ok)


CASES = [
    Case("infinite_loop", "kernel loops ~forever after its first call", None,
         "timeout", "run exceeded 3 s"),
    Case("sleep_forever", "sleeps forever in Python", None, "timeout", "run exceeded 3 s"),
    Case("abort", "aborts the worker (SIGABRT)", "calls os.abort", "runtime_error", "signal 6"),
    Case("segfault", "dereferences NULL (SIGSEGV)", "imports ctypes", "runtime_error",
         "signal 11"),
    Case("illegal_memory", "unmasked load 2^40 elements out of bounds", None,
         "runtime_error", ""),
    Case("oom", "allocates 4 TiB", None, "runtime_error", "memory"),
    Case("huge_stdout", "floods stdout/stderr, writes raw bytes to fd 1", None, "ok", ""),
    Case("cached_by_shape", "replays its first output for every later call of a shape",
         None, "incorrect", "max abs error"),
    Case("fishes_reference", "copies the reference's output out of the checker's frames",
         "_getframe", "ok", ""),
    Case("writes_input", "overwrites an input", None, "incorrect", "input 1 was modified"),
    Case("side_stream", "launches on a side CUDA stream", "side stream", "ok", ""),
    Case("torch_ops", "torch ops, no Triton kernel", "no @triton.jit", "ok", ""),
    Case("reads_env", "hunts the environment for API keys", "reads environment variables",
         "ok", ""),
    Case("network", "opens a TCP connection", "imports socket", "runtime_error",
         "sandbox: candidate may not use the network"),
    Case("deletes_file", "os.remove of a file outside its directory", "calls os.remove",
         "runtime_error", "sandbox: candidate may not remove"),
    Case("unlinks_path", "Path.unlink of a file outside its directory", ".unlink",
         "runtime_error", "sandbox: candidate may not remove"),
    Case("writes_outside", "writes a file outside its directory", "outside its sandbox",
         "runtime_error", "sandbox: candidate may not write"),
    Case("spawns_process", "runs `touch` in a subprocess", "imports subprocess",
         "runtime_error", "sandbox: candidate may not start processes"),
    Case("chdir_escape", "chdir out of its directory, then writes by a relative path",
         "calls os.chdir", "runtime_error", "sandbox: candidate may not write"),
]
#: what must not pass correctness even with the static check off
MUST_FAIL = {"infinite_loop", "sleep_forever", "abort", "segfault", "illegal_memory", "oom",
             "cached_by_shape", "writes_input", "network", "deletes_file", "unlinks_path",
             "writes_outside", "spawns_process", "chdir_escape"}


class Listener:
    """A local TCP listener that records every connection it gets."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                self.received.append(conn.recv(1024) or b"<connected>")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    planted = {"FAKE_API_KEY": "sk-planted-for-the-test", "OPENAI_API_KEY": "sk-planted",
               "SOME_SERVICE_TOKEN": "planted"}
    saved = {k: os.environ.get(k) for k in planted}
    os.environ.update(planted)
    try:
        with Evaluator(EvaluatorConfig(SPEC, device="cpu", timeout_s=3, compile_timeout_s=60,
                                       memory_limit_mb=4096)) as ev:
            yield ev
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def hostile_source(name: str, canary: Path | None = None, port: int | None = None) -> str:
    code = (HOSTILE / f"{name}.py").read_text()
    if canary is not None:
        code = code.replace("__CANARY_PATH__", str(canary))
    if port is not None:
        code = code.replace("__PORT__", str(port))
    return code


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_static_check_layer(case: Case, evaluator: Evaluator, tmp_path: Path,
                            listener: Listener) -> None:
    code = hostile_source(case.name, tmp_path / "canary.txt", listener.port)
    if case.rejected_because is None:
        problem = static_check(code)
        record("hostile kernels (static check)", f"{case.name}: {case.fault}", "passes to the "
               "sandbox", "passes" if problem is None else f"rejected: {problem}")
        assert problem is None, problem
        return
    started_workers = evaluator.workers_started
    evaluator.static_check = True
    try:
        result = evaluator.evaluate("vadd", code, seed=0)
    finally:
        evaluator.static_check = False
    record("hostile kernels (static check)", f"{case.name}: {case.fault}",
           f"rejected ({case.rejected_because})", f"{result.status}: {result.error}")
    assert result.status == "rejected", result.error
    assert case.rejected_because in result.error
    assert result.error.startswith("static check: the candidate ")
    assert not result.correct and result.ms is None
    assert evaluator.workers_started == started_workers  # no worker was used or lost
    assert result.eval_latency_s is not None and result.eval_latency_s < 0.5


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sandbox_layer(case: Case, evaluator: Evaluator, tmp_path: Path,
                       listener: Listener) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("must survive")
    connections_before = len(listener.received)
    code = hostile_source(case.name, canary, listener.port)
    started = time.perf_counter()
    result = evaluator.evaluate("vadd", code, seed=0)
    elapsed_s = time.perf_counter() - started
    record("hostile kernels (sandbox, static check off)", f"{case.name}: {case.fault}",
           f"{case.status}" + (f" ({case.message})" if case.message else ""),
           f"{result.status}" + (f": {result.error}" if result.error else "")
           + (" [worker replaced]" if result.worker_recycled else ""))
    assert result.status == case.status, result.error
    assert case.message in (result.error or "")
    if case.name in MUST_FAIL:
        assert not result.correct and result.ms is None
    # nothing escaped the sandbox directory, and nothing reached the listener
    assert canary.read_text() == "must survive"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canary.txt"]
    assert len(listener.received) == connections_before
    assert elapsed_s < 60
    good = evaluator.evaluate("vadd", GOOD, seed=1)
    assert good.status == "ok", good.error  # the evaluator keeps serving


def test_no_api_key_reaches_a_candidate(evaluator: Evaluator) -> None:
    assert os.environ["OPENAI_API_KEY"]  # planted in the parent's environment
    result = evaluator.evaluate("vadd", hostile_source("reads_env"), seed=2)
    record("hostile kernels (sandbox, static check off)", "reads_env with OPENAI_API_KEY, "
           "FAKE_API_KEY, SOME_SERVICE_TOKEN set in the parent", "ok (no key visible)",
           f"{result.status}" + (f": {result.error}" if result.error else ""))
    assert result.status == "ok", result.error


def test_fished_reference_is_why_the_static_check_exists(evaluator: Evaluator) -> None:
    """Documents a limit of in-process checking: with the static check off, a candidate that
    reads the checker's frames passes correctness; with it on (the live runner), it is
    rejected before it runs."""
    code = hostile_source("fishes_reference")
    assert evaluator.evaluate("vadd", code, seed=3).status == "ok"
    assert static_check(code) is not None
