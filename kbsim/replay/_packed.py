"""A policy state whose arrays all live in one byte buffer, so a reset is one copy.

The engine resets each worker's state from a template at the start of every episode. With the
state's ~50 arrays packed into one buffer (each field a C-contiguous, 64-byte aligned view of
it), that reset is ``buf[:] = template_buf``: one memcpy, and almost nothing for numba to
compile (a per-field copy, generated per NamedTuple type, took ~9 s of a cold start).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kbsim.policies.state import PolicyState

_ALIGN = 64


class PackedState(NamedTuple):
    """`state`'s arrays are views into `buf` (uint8); copying buf copies the whole state."""

    buf: np.ndarray
    state: PolicyState


def pack_state(state: PolicyState) -> PackedState:
    """A copy of `state` whose arrays are views of one fresh byte buffer."""
    offsets = []
    size = 0
    for arr in state:
        offsets.append(size)
        size += -(-arr.nbytes // _ALIGN) * _ALIGN
    # over-allocate so the first field starts on an aligned address
    raw = np.zeros(size + _ALIGN, np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    buf = raw[start:start + size]
    fields = []
    for arr, offset in zip(state, offsets, strict=True):
        view = np.ndarray(arr.shape, arr.dtype, buffer=buf, offset=offset)
        view[...] = arr
        fields.append(view)
    return PackedState(buf, PolicyState(*fields))
