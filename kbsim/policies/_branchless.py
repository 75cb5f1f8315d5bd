"""`select_unpredictable(cond, a, b)`: `a if cond else b` that LLVM keeps free of branches.

LLVM turns a select whose operands are costly (a division) or loaded into a conditional
branch, on the guess that the branch predicts well. In the bandit step several conditions are
coin flips (the sign of a reward, which parent the softmax drew), and a mispredicted branch
that waits on a division costs tens of cycles. This intrinsic emits one LLVM ``select`` marked
``!unpredictable``, which LLVM leaves as a conditional move or blend. The value is exactly
`a if cond else b` (no arithmetic on a or b).
"""

from __future__ import annotations

from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic


@intrinsic
def select_unpredictable(typingctx, cond, a, b):
    """`a if cond else b` without a branch; cond a bool, a and b numbers (unified type)."""
    if not isinstance(cond, types.Boolean):
        raise TypingError(f"select_unpredictable: cond must be a bool, got {cond}")
    if not isinstance(a, (types.Float, types.Integer)) or not isinstance(
        b, (types.Float, types.Integer)
    ):
        raise TypingError(f"select_unpredictable: a and b must be numbers, got {a}, {b}")
    out = typingctx.unify_types(a, b)
    sig = out(cond, a, b)

    def codegen(context, builder, signature, args):
        flag, x, y = args
        x = context.cast(builder, x, signature.args[1], out)
        y = context.cast(builder, y, signature.args[2], out)
        inst = builder.select(flag, x, y)
        inst.set_metadata("unpredictable", builder.module.add_metadata([]))
        return inst

    return sig, codegen
