"""The device gate: an Nsight Compute session holds the device alone only while it measures.

A session's program (`live.profiler.target`) spends most of its time starting Python, importing
torch, building inputs and compiling the candidates; only the measured calls need a quiet GPU.
The runner serves a Unix socket (named to the program by ``KB_PROFILE_GATE``); the program sends
``r`` before each task's measured calls, the gate takes the device (the GPU lock's exclusive side)
and answers ``g``, the program sends ``d`` when done and the gate gives the device back. If the
program dies or is killed mid-turn, the connection's end gives the device back too.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path


class DeviceGate:
    """Serve one session's turns on a Unix socket at `path`, each inside `device_alone()`.

    Use as a context manager around the session; afterwards ``held_s`` is the time the device
    was held and ``turns`` how many turns were served.
    """

    def __init__(self, path: str | Path,
                 device_alone: Callable[[], AbstractContextManager]) -> None:
        self.path = str(path)
        self.device_alone = device_alone
        self.held_s = 0.0
        self.turns = 0
        self._stop = threading.Event()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(1)
        self._server.settimeout(0.1)
        self._thread = threading.Thread(target=self._serve, name="kb-device-gate", daemon=True)

    def __enter__(self) -> DeviceGate:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        with contextlib.suppress(OSError):
            self._server.close()
        with contextlib.suppress(OSError):
            Path(self.path).unlink()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(0.1)
                self._talk(conn)

    def _recv(self, conn: socket.socket) -> bytes:
        """One byte from the program; b"" when it closed the connection or the session ended."""
        while True:
            try:
                return conn.recv(1)
            except TimeoutError:
                if self._stop.is_set():
                    return b""
            except OSError:
                return b""

    def _talk(self, conn: socket.socket) -> None:
        while self._recv(conn) == b"r":
            with self.device_alone():
                started = time.perf_counter()
                try:
                    conn.sendall(b"g")
                    done = self._recv(conn)
                except OSError:
                    done = b""
                self.held_s += time.perf_counter() - started
                self.turns += 1
            if done != b"d":
                return
