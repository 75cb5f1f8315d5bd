"""Evaluator workers forked from a warm template process instead of started from nothing.

A worker started as ``python -m live.evaluator.worker`` spends ~2.3 CPU-seconds importing
torch and triton before it can take its first candidate, and a worker is started again after
every candidate that kills it (a CUDA fault poisons the context, a hang is killed, a time limit
ends it). The *fork server* is one process (``python -m live.evaluator.forkserver``) that imports
them once, with the environment a worker would have; each worker is then a ``fork`` of it, ready
in milliseconds. What a worker runs and sees is unchanged (`sandbox.WorkerProcess`): its own
session, core dumps off and, on the CPU, its address-space limit; its stdin / stdout pipes and
its log as stdin / stdout / stderr; the scrubbed environment of the moment it starts; its own
temporary folder as cwd and ``TMPDIR``. CUDA is never initialised in the server (torch and
triton initialise it lazily), so each forked worker makes its own context, as a started one does.
The server freezes what its imports allocated (``gc.freeze``) before it forks anyone: a worker's
garbage collections never walk those objects or write to their pages (loading the TritonBench-G
mini checkout, its gold checks in forked workers: 16.4 against 18.8 CPU-s, 0.87x).

The server and the evaluator speak over a Unix socket pair (``SOCK_SEQPACKET``, one pickle a
message): ``("fork", request)`` with the worker's three descriptors attached, answered with
``("forked", pid)``; ``("exit", pid, returncode)`` for each worker that ends, as
``subprocess.Popen.returncode`` would say it (negative: the signal). `ForkedProcess` is the
evaluator's handle on such a worker, the part of ``Popen``'s interface the sandbox uses.

One server per interpreter and import-time environment (`server_for`); it ends when the
evaluator's process does (its end of the socket closes), also while it is still importing
(`_import_preload`), its workers when their stdin closes, as before.
``KERNELBAND_WORKER_START=exec`` starts every worker as its own interpreter again; so does any
platform without ``fork`` and descriptor passing, and any failure of the server
(that worker is started the old way, the next one tries a fresh server).
"""

from __future__ import annotations

import atexit
import gc
import os
import pickle
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from typing import IO, Any

#: environment variables a library may read while it is imported (the server imports torch and
#: triton once, with its own environment): a worker whose environment differs in any of them
#: gets a server of its own; the rest is set in the worker after the fork
IMPORT_TIME_PREFIXES = ("TRITON", "TORCH", "PYTORCH", "CUDA", "NVIDIA", "PYTHON", "LD_", "OMP_",
                        "MKL_", "OPENBLAS", "KMP_", "CUBLAS", "CUDNN", "NCCL")
#: modules the server imports before it forks anyone: a worker's own imports
PRELOAD = ("torch", "triton", "numpy", "live.evaluator.worker", "live.evaluator.run_candidate",
           "live.evaluator.guard", "live.evaluator.metadata")
_START_TIMEOUT_S = 120.0
_MAX_MESSAGE = 1 << 20


def enabled() -> bool:
    """Whether workers are forked from a server here (Linux; not turned off by the user)."""
    if os.environ.get("KERNELBAND_WORKER_START", "fork").lower() == "exec":
        return False
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


@dataclass(frozen=True)
class ForkRequest:
    """What a forked worker is given: its whole environment, cwd and address-space limit
    (bytes; None: none)."""

    env: dict[str, str]
    cwd: str
    address_space_limit: int | None = None


class ForkServerError(RuntimeError):
    """The fork server could not start or answer (its caller starts the worker itself)."""


# -- the server process ---------------------------------------------------------------------


def _worker_child(request: ForkRequest, fds: list[int], keep_closed: list[int]) -> None:
    """In the forked child: become the worker (never returns)."""
    code = 1
    try:
        for fd in keep_closed:
            os.close(fd)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if request.address_space_limit:
            limit = int(request.address_space_limit)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request.cwd)
        os.environ.clear()
        os.environ.update(request.env)
        tempfile.tempdir = None  # the worker's TMPDIR, not the one the server's imports cached
        _reopen_stdio()
        if request.env.get("PYTHONFAULTHANDLER"):
            import faulthandler

            faulthandler.enable()
        _reseed()
        from live.evaluator import worker

        sys.argv = [worker.__file__]  # as `python -m live.evaluator.worker` has it
        worker.main()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on stderr, the worker's log
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _reopen_stdio() -> None:
    """Unbuffered text streams on the worker's descriptors 1 and 2 (``PYTHONUNBUFFERED``)."""
    import io

    sys.stdin = open(os.devnull)  # noqa: SIM115 - the worker's fd 0 is its protocol
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(fd, "w", closefd=False)
        setattr(sys, name, io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace",
                                            write_through=True))


def _reseed() -> None:
    """Fresh seeds for the random generators the server seeded once at import (every forked
    worker would share their state otherwise)."""
    import random

    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def _import_preload(sock: socket.socket) -> None:
    """Import `PRELOAD`, ending the process at once if the evaluator's process goes meanwhile.

    The imports take seconds (torch's alone ~1.8 CPU-s on a CPU-only host, more where CUDA's
    libraries load), and nothing reads the socket until they end: a ``kernelband live`` killed
    while its server starts left the server importing to the end, then noticing (20 SIGKILLs at
    random moments, tests/live/test_live_kills.py: ~2 CPU-s each, for nothing). A thread waits
    for the socket's hang-up meanwhile (POLLRDHUP, never POLLIN: the evaluator sends nothing
    before ``ready``, and nothing is read) and is stopped and joined before the first fork.
    """
    stop_r, stop_w = os.pipe()
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLRDHUP)
    poller.register(stop_r, select.POLLIN)

    def watch() -> None:
        while True:
            for fd, events in poller.poll():
                if fd == stop_r:
                    return
                if events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    os._exit(0)  # the evaluator's process is gone: no one to serve

    watcher = threading.Thread(target=watch, name="forkserver-hangup", daemon=True)
    watcher.start()
    try:
        for name in PRELOAD:
            try:
                __import__(name)
            except ImportError:
                pass
    finally:
        os.write(stop_w, b"x")
        watcher.join()
        os.close(stop_r)
        os.close(stop_w)


def serve(sock: socket.socket) -> None:
    """The server's loop: fork a worker for each request, report each worker's end."""
    _import_preload(sock)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    # what the imports left is the template's for good: a forked worker's garbage collections
    # leave it out (a full collection walked its ~180,000 objects, ~0.07 CPU-s, and wrote to
    # their pages, each then copied into the worker; Python's `gc.freeze` documentation)
    gc.freeze()
    sock.send(pickle.dumps(("ready", os.getpid())))
    while True:
        readable, _, _ = select.select([sock, wake_r], [], [], 1.0)
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        _reap(sock)
        if sock not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 3)
        except InterruptedError:
            continue
        if not data:  # the evaluator's process is gone
            return
        op, request = pickle.loads(data)
        if op != "fork" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            sock.send(pickle.dumps(("error", f"bad request {op!r} with {len(fds)} fds")))
            continue
        pid = os.fork()
        if pid == 0:
            _worker_child(request, fds, [sock.fileno(), wake_r, wake_w])
        for fd in fds:
            os.close(fd)
        sock.send(pickle.dumps(("forked", pid)))


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock.send(pickle.dumps(("exit", pid, os.waitstatus_to_exitcode(status))))


def main() -> None:
    fd = int(sys.argv[1])
    sock = socket.socket(fileno=fd)
    try:
        serve(sock)
    except (BrokenPipeError, ConnectionResetError):
        pass


# -- the evaluator's side -------------------------------------------------------------------


class ForkServer:
    """The evaluator's handle on one fork server (thread-safe)."""

    def __init__(self, env: dict[str, str]):
        self._lock = threading.Lock()
        self._exits: dict[int, int] = {}
        self._ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "live.evaluator.forkserver", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=env, cwd=tempfile.gettempdir(), start_new_session=True,
                pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()
        ready, _, _ = select.select([self._ours], [], [], _START_TIMEOUT_S)
        message = self._receive() if ready else None
        if not message or message[0] != "ready":
            self.close()
            raise ForkServerError("the worker fork server did not start")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _receive(self, block: bool = True) -> Any:
        try:
            data = self._ours.recv(_MAX_MESSAGE, 0 if block else socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return ()
        return pickle.loads(data) if data else ()

    def _keep_exit(self, message: Any) -> bool:  # lock held
        """Keep `message` if it is a worker's end; whether it was."""
        if message[0] != "exit":
            return False
        self._exits[message[1]] = message[2]
        return True

    def _drain(self) -> None:  # lock held: keep every exit that has come
        while (message := self._receive(block=False)):
            self._keep_exit(message)

    def fork(self, request: ForkRequest, fds: tuple[int, int, int]) -> int:
        """Fork a worker with `fds` as its stdin, stdout and stderr; its pid."""
        with self._lock:
            try:
                socket.send_fds(self._ours, [pickle.dumps(("fork", request))], list(fds))
            except OSError as error:
                raise ForkServerError(f"the worker fork server is gone: {error}") from None
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline:
                ready, _, _ = select.select([self._ours], [], [], 1.0)
                if not ready:
                    if not self.alive:
                        break
                    continue
                message = self._receive()
                if not message:
                    break
                if self._keep_exit(message):
                    continue
                if message[0] == "forked":
                    return int(message[1])
                raise ForkServerError(f"the worker fork server refused: {message[1]}")
        raise ForkServerError("the worker fork server did not answer")

    def returncode(self, pid: int, timeout_s: float = 0.0) -> int | None:
        """`pid`'s exit status once the server has seen it end, else None after `timeout_s`
        (a worker whose server is gone: its status if it is gone too, 255 for unknown)."""
        import psutil

        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                self._drain()
                if pid in self._exits:
                    return self._exits[pid]
                if not self.alive and not psutil.pid_exists(pid):
                    return 255
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with self._lock:
                select.select([self._ours], [], [], min(remaining, 0.05))

    def close(self) -> None:
        try:
            self._ours.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class ForkedProcess:
    """A worker forked by a `ForkServer`, behind the part of ``subprocess.Popen``'s interface
    the sandbox uses: ``pid``, ``stdin``, ``stdout``, ``returncode``, ``poll``, ``wait``,
    ``kill``."""

    def __init__(self, server: ForkServer, request: ForkRequest, stderr: IO[bytes]):
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            self.pid = server.fork(request, (in_r, out_w, stderr.fileno()))
        except BaseException:
            for fd in (in_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
        self._server = server
        self.stdin: IO[bytes] = os.fdopen(in_w, "wb")
        self.stdout: IO[bytes] = os.fdopen(out_r, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.returncode(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server.returncode(
                self.pid, timeout_s=1e9 if timeout is None else timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


_servers: dict[tuple, ForkServer] = {}
#: the keys of servers that could not start: not tried again in this process
_failed: set[tuple] = set()
_servers_lock = threading.Lock()


def _server_key(env: dict[str, str]) -> tuple:
    return (sys.executable, tuple(sorted(
        (name, value) for name, value in env.items() if name.startswith(IMPORT_TIME_PREFIXES))))


def server_for(env: dict[str, str]) -> ForkServer:
    """This process's fork server for workers with environment `env` (started at first use,
    started again if it has died). A server that cannot start is not tried again in this
    process: `ForkServerError` at once, and one warning."""
    key = _server_key(env)
    with _servers_lock:
        if key in _failed:
            raise ForkServerError("the worker fork server could not start here before")
        server = _servers.get(key)
        if server is not None and server.alive:
            return server
        if server is not None:
            server.close()
            del _servers[key]
        try:
            server = _servers[key] = ForkServer(env)
        except (ForkServerError, OSError) as error:
            _failed.add(key)
            warnings.warn(f"{error}; evaluator workers start as their own interpreters "
                          "(slower) in this process", RuntimeWarning, stacklevel=2)
            raise ForkServerError(str(error)) from None
        return server


def start_worker(request: ForkRequest, stderr: IO[bytes]) -> ForkedProcess:
    """A worker forked from the fork server for `request`'s environment."""
    server = server_for(request.env)
    try:
        return ForkedProcess(server, request, stderr)
    except ForkServerError:
        with _servers_lock:
            if _servers.get(_server_key(request.env)) is server:
                del _servers[_server_key(request.env)]
        server.close()
        raise


def _forget_servers() -> None:
    """In a child forked from this process (not by a fork server): its parent's servers are
    not its own; it starts its own when it needs one."""
    global _servers_lock
    _servers_lock = threading.Lock()
    for server in _servers.values():
        try:
            server._ours.close()
        except OSError:
            pass
    _servers.clear()
    _failed.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_servers)


@atexit.register
def _close_servers() -> None:
    with _servers_lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


if __name__ == "__main__":
    main()
