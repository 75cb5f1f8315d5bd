"""Work-arounds for gaps in Triton's CPU interpreter (``TRITON_INTERPRET=1``), tests only.

NOTE (D1): Triton 3.9's interpreter stores bf16 as raw uint16 bits and its ``tl.dot`` multiplies
those bits as integers, so any bf16 matmul is wrong on CPU (it is right on a GPU). The patch
below converts bf16 dot operands to fp32 first, which is what the GPU's tensor cores compute
(bf16 products are exact in fp32). It touches only the interpreter's builder, never compiled
kernels, and is a no-op if the interpreter's internals change shape.
"""

from __future__ import annotations

_patched = False


def enable_interpreter_compat() -> bool:
    """Install the work-arounds once per process. Returns whether the bf16-dot patch is active."""
    global _patched
    if _patched:
        return True
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder_cls = getattr(interpreter, "InterpreterBuilder", None)
    convert = getattr(interpreter, "_convert_float", None)
    handle_cls = getattr(interpreter, "TensorHandle", None)
    if builder_cls is None or convert is None or handle_cls is None:
        return False
    original_dot = builder_cls.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar == tl.bfloat16 or b.dtype.scalar == tl.bfloat16:
            a = _as_fp32(a)
            b = _as_fp32(b)
        return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    def _as_fp32(handle):
        if handle.dtype.scalar != tl.bfloat16:
            return handle
        data = convert(handle.data, tl.bfloat16, tl.float32, None).view(np.float32)
        return handle_cls(data.reshape(handle.data.shape), tl.float32)

    builder_cls.create_dot = create_dot
    _patched = True
    return True
