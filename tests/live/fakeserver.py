"""A scripted, local OpenAI-compatible Chat Completions server for tests.

A real HTTP server on 127.0.0.1 (random free port, stdlib ``http.server`` in a thread) that
answers ``POST …/chat/completions`` from a script of responses, in order: status code, headers
(``Retry-After``), a delay (to provoke client timeouts) and a body. It records every request it
received, answers 503 once the script is exhausted, and stops by itself after ``lifetime_s``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_DELAY_S = 10.0


@dataclass(frozen=True)
class Scripted:
    """One scripted response."""

    status: int = 200
    body: dict[str, Any] | str | None = None
    #: a value may be a function, called when the response is sent (a date relative to then)
    headers: dict[str, str | Callable[[], str]] = field(default_factory=dict)
    delay_s: float = 0.0


def chat_reply(
    content: str | None,
    *,
    prompt_tokens: int = 120,
    completion_tokens: int = 80,
    model: str = "fake-model",
    finish_reason: str = "stop",
    with_usage: bool = True,
) -> Scripted:
    """A 200 response shaped like the Chat Completions API."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }
    if with_usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return Scripted(200, body)


def error_reply(status: int, message: str = "scripted error",
                **headers: str | Callable[[], str]) -> Scripted:
    body = {"error": {"message": message, "type": "server_error", "code": None}}
    return Scripted(status, body, {k.replace("_", "-"): v for k, v in headers.items()})


class FakeOpenAIServer:
    """Use as a context manager; ``base_url`` is what the client needs."""

    def __init__(self, script: list[Scripted], *, lifetime_s: float = 60.0) -> None:
        self._script = list(script)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.lifetime_s = lifetime_s
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    payload = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    payload = {"_raw": raw.decode("utf-8", "replace")}
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(Scripted(404, {"error": {"message": f"no route {self.path}"}}))
                    return
                with server._lock:
                    server.requests.append(payload)
                    server.auth_headers.append(self.headers.get("Authorization"))
                    scripted = (
                        server._script.pop(0)
                        if server._script
                        else Scripted(503, {"error": {"message": "script exhausted"}})
                    )
                deadline = time.monotonic() + min(scripted.delay_s, MAX_DELAY_S)
                while time.monotonic() < deadline and not server._stop.is_set():
                    time.sleep(0.01)
                self._send(scripted)

            def _send(self, scripted: Scripted) -> None:
                if isinstance(scripted.body, (dict, list)):
                    data = json.dumps(scripted.body).encode()
                    ctype = "application/json"
                else:
                    data = (scripted.body or "").encode()
                    ctype = "text/plain"
                try:
                    self.send_response(scripted.status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in scripted.headers.items():
                        self.send_header(name, value() if callable(value) else value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): that is the point of a delay

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._timer is not None and threading.current_thread() is not self._timer:
            self._timer.cancel()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests need ------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not running"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)
