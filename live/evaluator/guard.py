"""The worker's audit guard: what a candidate's own code may not do while it runs (worker side).

`install(home)` adds a ``sys.addaudithook`` hook (it cannot be removed) to the worker after torch
and triton are imported. For each audited operation the hook finds the *actor*: the innermost
frame that is neither the standard library nor synthesized code (``<string>``, ``<frozen …>``).
When the actor is a candidate's own file (under the worker's ``home``), the operation is refused
with ``PermissionError("sandbox: …")`` if it would

- open a network connection (sockets: create, connect, bind, send, resolve names);
- start a process (``subprocess``, ``os.system``, ``exec``/``spawn``/``fork``) or load a native
  library with ``ctypes`` (which would slip past every other rule);
- signal another process;
- write, create, delete, rename or chmod anything outside the candidate's own directory.

Operations whose actor is a library (Triton writing its cache, calling ``ptxas``; torch) are not
judged: the guard contains the candidate's code, not its dependencies. ``NOTE (D12)``: an audit
hook is a tripwire, not a jail (a candidate can still reach the OS through a library that does
it on its behalf); the static pre-check and the scrubbed environment are the other layers, and
real isolation of hostile code needs a container or VM around the whole evaluator.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

_NETWORK = {"socket.__new__", "socket.connect", "socket.bind", "socket.sendto",
            "socket.sendmsg", "socket.getaddrinfo", "socket.gethostbyname",
            "socket.gethostbyname_ex", "socket.gethostbyaddr", "socket.getnameinfo"}
_PROCESS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
            "os.fork", "os.forkpty", "pty.spawn", "os.startfile", "ctypes.dlopen",
            "ctypes.dlsym"}
_SIGNAL = {"os.kill", "os.killpg", "signal.pthread_kill"}
#: file events and the argument positions that are paths
_FILES = {"os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1), "os.truncate": (0,),
          "os.chmod": (0,), "os.chown": (0,), "os.mkdir": (0,), "os.symlink": (1,),
          "os.link": (1,), "os.utime": (0,), "shutil.rmtree": (0,), "shutil.move": (0, 1),
          "shutil.copyfile": (1,), "shutil.copytree": (1,), "os.chflags": (0,),
          "os.removexattr": (0,), "os.setxattr": (0,)}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_WATCHED = _NETWORK | _PROCESS | _SIGNAL | set(_FILES) | {"open"}

_STDLIB = tuple(
    {str(Path(p).resolve()) + os.sep for p in (sysconfig.get_paths()["stdlib"],
                                              sysconfig.get_paths()["platstdlib"])}
)
_THIS_FILE = str(Path(__file__).resolve())


class _State(threading.local):
    busy = False


_state = _State()
_home: tuple[str, ...] | None = None
#: what the guard refused, for the worker's log and the tests
refused: list[str] = []


def _trusted_frame(filename: str) -> bool:
    """Frames that never count as the actor: the standard library and synthesized code."""
    if filename.startswith("<"):
        return True
    if filename == _THIS_FILE:
        return True
    return filename.startswith(_STDLIB) and "-packages" not in filename


def _candidate_dir(home: tuple[str, ...]) -> str | None:
    """The acting candidate's own directory, or None when the actor is not a candidate."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _trusted_frame(filename):
            if filename.startswith(home):
                return os.path.realpath(os.path.dirname(filename))
            return None
        frame = frame.f_back
    return None


def _within(path: Any, allowed: str) -> bool:
    if isinstance(path, int):
        return True  # an fd the candidate already holds
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        return True
    resolved = os.path.realpath(os.fspath(path))
    return resolved == allowed or resolved.startswith(allowed + os.sep)


def _refuse(message: str) -> None:
    refused.append(message)
    raise PermissionError(f"sandbox: {message}")


def _hook(event: str, args: tuple) -> None:
    if event not in _WATCHED or _home is None or _state.busy:
        return
    _state.busy = True
    try:
        if event == "open":
            mode, flags = args[1], args[2]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            if not writes:
                return
            own_dir = _candidate_dir(_home)
            if own_dir is not None and not _within(args[0], own_dir):
                _refuse(f"candidate may not write {args[0]!r} outside its directory")
            return
        own_dir = _candidate_dir(_home)
        if own_dir is None:
            return
        if event in _NETWORK:
            _refuse(f"candidate may not use the network ({event})")
        if event in _PROCESS:
            _refuse(f"candidate may not start processes or load native code ({event})")
        if event in _SIGNAL:
            if args and args[0] not in (0, os.getpid()):
                _refuse(f"candidate may not signal process {args[0]} ({event})")
            return
        for index in _FILES.get(event, ()):
            if index < len(args) and not _within(args[index], own_dir):
                _refuse(f"candidate may not {event.split('.')[-1]} {args[index]!r} "
                        "outside its directory")
    finally:
        _state.busy = False


def install(home: str | Path) -> None:
    """Guard every candidate whose file lies under `home` (the worker's temp dir); once only.

    A candidate's own directory is the one its file is in (also the worker's cwd while it runs,
    see ``worker.py``), whatever it later ``chdir``s to.
    """
    global _home
    first = _home is None
    _home = tuple({os.path.realpath(str(home)) + os.sep, os.path.abspath(str(home)) + os.sep})
    if first:
        sys.addaudithook(_hook)
