"""One sandboxed worker process, seen from the evaluator (parent side; no torch here).

The worker runs ``live.evaluator.worker``, forked from the fork server (which has imported torch
and triton once, `live.evaluator.forkserver`) or, where that is off, started as ``python -m
live.evaluator.worker``; either way with a scrubbed environment (no API keys, tokens, secrets or
passwords), its settings (``WorkerSettings``) the first frame on its stdin, in its own session
(so a kill takes its children too), with core dumps off and, on CPU, an address-space limit
(``RLIMIT_AS``). ``NOTE (D9)``: CUDA reserves a huge virtual address
space, so on a GPU ``RLIMIT_AS`` would break CUDA itself; there the parent polls the worker's
resident memory instead and the worker caps its CUDA allocator at the same limit.

Each worker has a temporary folder of its own (``kb-worker-*``: its log, and its ``TMPDIR``, so
its home and every candidate's files), removed with the worker when it ends, however it ends.
"""

from __future__ import annotations

import getpass
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live.evaluator import forkserver
from live.evaluator.failures import FailureKind
from live.evaluator.forkserver import ForkedProcess, ForkRequest
from live.evaluator.protocol import read_frame_fd, write_frame
from live.evaluator.settings import WorkerSettings

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
_SECRET_PREFIXES = ("OPENAI_", "ANTHROPIC_", "HF_", "HUGGING", "AWS_", "AZURE_", "GOOGLE_",
                    "GH_", "GITHUB_", "WANDB_", "GCP_", "COHERE_", "MISTRAL_", "GROQ_")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
_POLL_S = 0.05


def scrubbed_env(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """`base` without anything that looks like a credential, plus `extra`."""
    env = {
        name: value
        for name, value in base.items()
        if not _SECRET_NAME.search(name) and not name.upper().startswith(_SECRET_PREFIXES)
    }
    env.update(extra)
    return env


@dataclass(frozen=True)
class Received:
    """What waiting on a worker produced: a message, or why there is none (`failure`: the
    kind of a death or of the memory watch's kill, set here, where it is seen)."""

    kind: str  # "message" | "timeout" | "died" | "memory"
    message: Any = None
    detail: str = ""
    failure: FailureKind | None = None


class WorkerStartError(RuntimeError):
    """A worker could not start; `failure` says how it ended (``KILLED_BY_SYSTEM``: the
    system's out-of-memory killer took it, NOTE D94)."""

    def __init__(self, message: str, failure: FailureKind | None):
        super().__init__(message)
        self.failure = failure


def _inductor_cache_dir() -> str | None:
    """Where torch's inductor keeps its compile cache when the user has not said: under the
    machine's temp folder, as inductor's own default (``torchinductor_<user>``), so that
    workers, whose temp folder is their own and goes with them, share it and keep it between
    runs as before. None where the user set it."""
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        return None
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user entry for this uid (a bare container)
        user = f"uid_{os.getuid()}"
    safe_user = re.sub(r'[\\/:*?"<>|]', "_", user)  # as inductor names it
    return str(Path(tempfile.gettempdir()) / f"torchinductor_{safe_user}")


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return "unknown"


class WorkerProcess:
    """A warm worker: spawned at once, ready when it has imported torch and triton."""

    def __init__(self, settings: WorkerSettings):
        self.settings = settings
        self.device = settings.device
        self.memory_limit_mb = settings.memory_limit_mb
        self.info: dict[str, Any] | None = None
        #: set once kernelband itself sends the worker SIGKILL (its death is then not the
        #: system's doing)
        self._killing = False
        pythonpath = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        extra = {"PYTHONPATH": pythonpath, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
        inductor_cache = _inductor_cache_dir()
        if inductor_cache is not None:
            extra["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache
        if self.device == "cpu":
            extra["TRITON_INTERPRET"] = "1"
        env = scrubbed_env(dict(os.environ), extra)
        if forkserver.enabled():  # its server first (seconds, the first time): a run killed
            try:  # meanwhile leaves no folder behind
                forkserver.server_for(env)
            except (forkserver.ForkServerError, OSError):
                pass  # `_start` starts the worker the old way
        #: the worker's own temporary folder, removed with the worker however it ends: its
        #: log, and its TMPDIR, so its home, candidate modules and anything a candidate's
        #: libraries write there (a worker that is killed, or a forked one, which leaves with
        #: ``os._exit``, never runs its own clean-up; one whose parent is gone removes it)
        self.folder = Path(tempfile.mkdtemp(prefix="kb-worker-"))
        self._log = open(self.folder / "worker.log", "w+b")  # noqa: SIM115 - closed in kill()
        #: the worker's whole environment
        self.env = {**env, "TMPDIR": str(self.folder)}
        self.proc: subprocess.Popen | ForkedProcess = self._start(self.env)
        self.started_at = time.perf_counter()
        # the worker reads its settings first, before it imports torch
        self.send(settings)

    def _start(self, env: dict[str, str]) -> subprocess.Popen | ForkedProcess:
        """The worker's process: forked from the fork server (`live.evaluator.forkserver`),
        or, where that is off or fails, a fresh interpreter."""
        if forkserver.enabled():
            limit = None
            if self.device == "cpu" and self.memory_limit_mb:
                limit = int(self.memory_limit_mb) * 1024 * 1024
            request = ForkRequest(env=env, cwd=str(self.folder), address_space_limit=limit)
            try:
                return forkserver.start_worker(request, self._log)
            except (forkserver.ForkServerError, OSError):
                pass  # started the old way below; the next worker tries a fresh server
        return subprocess.Popen(
            [sys.executable, "-m", "live.evaluator.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=self.folder,
            start_new_session=True,
            preexec_fn=self._limits,
        )

    def _limits(self) -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.device == "cpu" and self.memory_limit_mb:
            limit = int(self.memory_limit_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, n_chars: int = 300) -> str:
        try:
            text = (self.folder / "worker.log").read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        fatal = [ln for ln in lines if ln.startswith(("Fatal Python error", "Traceback"))]
        noise = ("Extension modules", "File ", "Current")
        useful = [ln for ln in lines if not ln.startswith(noise)]
        picked = fatal[-1:] + [ln for ln in useful[-2:] if ln not in fatal[-1:]]
        return " | ".join(picked)[-n_chars:]

    def send(self, message: Any) -> bool:
        try:
            write_frame(self.proc.stdin, message)  # type: ignore[arg-type]
            return True
        except (BrokenPipeError, OSError):
            return False

    def _rss_mb(self) -> float:
        try:
            import psutil

            return psutil.Process(self.proc.pid).memory_info().rss / 2**20
        except Exception:  # noqa: BLE001 - the process may be gone already
            return 0.0

    def receive(self, timeout_s: float) -> Received:
        """Wait up to `timeout_s` for one message, watching for death and memory use."""
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        deadline = time.perf_counter() + timeout_s
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return Received("timeout")
            readable, _, _ = select.select([fd], [], [], min(remaining, _POLL_S * 4))
            if readable:
                message = read_frame_fd(fd)
                if message is None:
                    return self._death()
                return Received("message", message)
            if self.proc.poll() is not None:
                # it may have written its last message and ended (a recycled worker does)
                # between the wait above and this look: that message is its answer, not a death
                if select.select([fd], [], [], 0)[0]:
                    message = read_frame_fd(fd)
                    if message is not None:
                        return Received("message", message)
                return self._death()
            if self.device != "cpu" and self.memory_limit_mb:
                rss_mb = self._rss_mb()
                if rss_mb > self.memory_limit_mb:
                    return Received("memory", detail=f"host memory {rss_mb:.0f} MB > limit "
                                                     f"{self.memory_limit_mb} MB",
                                    failure=FailureKind.MEMORY_LIMIT)

    def _death(self) -> Received:
        """How the worker ended: ``KILLED_BY_SYSTEM`` for a SIGKILL kernelband did not send
        (NOTE D80: the system's out-of-memory killer), ``CANDIDATE`` for any other death."""
        try:
            returncode = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            returncode = self.proc.returncode
        if returncode is not None and returncode < 0:
            detail = f"worker died: signal {-returncode} ({_signal_name(returncode)})"
        else:
            detail = f"worker died: exit code {returncode}"
        by_system = returncode == -signal.SIGKILL and not self._killing
        failure = FailureKind.KILLED_BY_SYSTEM if by_system else FailureKind.CANDIDATE
        tail = self.log_tail()
        return Received("died", detail=f"{detail}; {tail}" if tail else detail, failure=failure)

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the worker has imported torch/triton; raise if it cannot start."""
        if self.info is not None:
            return
        got = self.receive(timeout_s)
        if got.kind != "message" or got.message[0] != "ready":
            self.kill()
            raise WorkerStartError(
                f"evaluator worker failed to start ({got.kind}): {got.detail}", got.failure)
        self.info = got.message[1]

    def kill(self) -> None:
        """Kill the worker and everything it started."""
        if self.proc.poll() is None:
            self._killing = True
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Ask the worker to exit; kill it if it does not."""
        if self.proc.poll() is None:
            self.send({"op": "exit"})
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

