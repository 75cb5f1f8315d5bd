"""`copy_into(dst, src)`: copy every array field of a NamedTuple into another, in compiled code.

The engine keeps one policy state per worker and resets it from a template at the start of each
episode; numba cannot loop over the fields of a heterogeneous NamedTuple, so the copy is
generated per type at compile time (a numba overload).
"""

from __future__ import annotations

from numba import types
from numba.extending import overload


def copy_into(dst, src) -> None:  # pragma: no cover - only called from compiled code
    """Copy every array of `src` into the same-shaped array of `dst` (compiled only)."""
    raise NotImplementedError("copy_into runs inside numba-compiled code only")


@overload(copy_into)
def _copy_into_impl(dst, src):
    if not isinstance(dst, types.BaseTuple) or not isinstance(src, types.BaseTuple):
        return None
    lines = ["def impl(dst, src):"]
    for i, field_type in enumerate(dst.types):
        if isinstance(field_type, types.Array):
            lines.append(f"    d{i} = dst[{i}].reshape(dst[{i}].size)")
            lines.append(f"    d{i}[:] = src[{i}].reshape(src[{i}].size)")
    lines.append("    return None")
    namespace: dict = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - generated from the tuple's own field types
    return namespace["impl"]
