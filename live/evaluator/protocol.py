"""Framing between the evaluator and its workers: 8-byte big-endian length, then a pickle.

Only plain data crosses: the typed records of ``live.evaluator.messages`` (frozen dataclasses
of str/int/float/None/tuples/dicts), phase tuples and small dicts; candidates' objects never
do.
"""

from __future__ import annotations

import os
import pickle
import struct
from typing import Any, BinaryIO

_HEADER = struct.Struct(">Q")


def write_frame(stream: BinaryIO, message: Any) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def read_exact_fd(fd: int, n_bytes: int) -> bytes | None:
    """Exactly `n_bytes` from `fd`, or None at end of file (the other side died)."""
    chunks = []
    remaining = n_bytes
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame_fd(fd: int) -> Any | None:
    """One message from `fd`, or None at end of file."""
    header = read_exact_fd(fd, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    payload = read_exact_fd(fd, length)
    if payload is None:
        return None
    return pickle.loads(payload)
