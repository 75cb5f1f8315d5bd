"""Named tuples of arrays handed to compiled code as one pointer (`tuple_image`, `TupleRef`).

numba passes a named tuple by value: every call to a compiled function that is not inlined gets
each field of each of its arrays as a separate argument (the policy state's 51 arrays are ~360
values), each level of numba's IR inlining copies the whole struct into a stack slot of its
own, and a function Python calls unboxes every array of every tuple it takes. In the replay
engine that was most of the code LLVM had to optimise (docs/benchmarks.md, *First contact*).

`tuple_image(tup)` (Python) writes the tuple's value, as numba lays it out, into an int64 array.
A compiled function given that array and the image's `tuple_type` calls
``ref_of_image(image, tuple_type)`` and gets a `TupleRef`: a typed pointer to the value, one
machine word wherever it goes, whose attributes read like the tuple's (``ref.mu[c, s] += 1``
writes the array ``tup.mu`` sees). A function written against a named tuple of arrays takes
either, and is compiled once per type. The compiled entry point unboxes one int64 array instead
of each of the tuple's arrays.

The image holds raw pointers to the arrays' data, not references: it is valid while they live
(a `TupleImage` keeps its tuple; whoever passes only ``image`` must keep the arrays alive for
the call), and the arrays seen through it have no reference-counted owner, so compiled code
must not keep them past the call. The tuple's fields cannot be reassigned through a reference
(a named tuple's cannot either); the arrays they hold are mutable as usual. No reference
counting is involved: a `TupleRef` works in functions compiled with or without numba's runtime
(``_nrt=False``).

Code that holds the tuples by value (the step-by-step entry points, `kbsim.policies.kernels`)
makes a reference with `ref_of_value` at each call of a function compiled for references: a
copy of the whole tuple (~470 words for the state and the pool), made only when that call is.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple

import numba
import numpy as np
from numba.core import cgutils, types
from numba.core.datamodel import models
from numba.core.extending import (
    infer_getattr,
    intrinsic,
    lower_getattr_generic,
    register_model,
)
from numba.core.imputils import impl_ret_borrowed
from numba.core.typing.templates import AttributeTemplate


class TupleRef(types.Type):
    """numba type of a pointer to the value of a named tuple (`tuple_type`) in memory."""

    def __init__(self, tuple_type: types.BaseNamedTuple) -> None:
        self.tuple_type = tuple_type
        super().__init__(name=f"Ref[{tuple_type.instance_class.__name__}]({tuple_type})")

    @property
    def key(self) -> Any:
        return self.tuple_type


@register_model(TupleRef)
class _TupleRefModel(models.PrimitiveModel):
    def __init__(self, dmm: Any, fe_type: TupleRef) -> None:
        pointee = dmm.lookup(fe_type.tuple_type).get_value_type()
        super().__init__(dmm, fe_type, pointee.as_pointer())


@infer_getattr
class _TupleRefAttributes(AttributeTemplate):
    key = TupleRef

    def generic_resolve(self, typ: TupleRef, attr: str) -> Any:
        fields = typ.tuple_type.fields
        if attr in fields:
            return typ.tuple_type.types[fields.index(attr)]
        return None


@lower_getattr_generic(TupleRef)
def _tuple_ref_getattr(context: Any, builder: Any, typ: TupleRef, value: Any, attr: str) -> Any:
    index = typ.tuple_type.fields.index(attr)
    field = builder.load(cgutils.gep_inbounds(builder, value, 0, index))
    return impl_ret_borrowed(context, builder, typ.tuple_type.types[index], field)


@intrinsic
def ref_of_image(typingctx: Any, image: Any, tuple_type: Any) -> Any:
    """The `TupleRef` of a `TupleImage`'s ``image`` array; ``tuple_type`` its `tuple_type`."""
    if not (isinstance(image, types.Array) and image.dtype == types.int64
            and image.ndim == 1 and isinstance(tuple_type, types.TypeRef)
            and isinstance(tuple_type.instance_type, types.BaseNamedTuple)):
        return None
    target = tuple_type.instance_type

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        pointee = context.data_model_manager[target].get_value_type()
        return builder.bitcast(data, pointee.as_pointer())

    return TupleRef(target)(image, tuple_type), codegen


@intrinsic
def ref_of_value(typingctx: Any, tup: Any) -> Any:
    """A `TupleRef` to a copy of the named tuple value ``tup`` in the calling function's stack
    frame; a `TupleRef` is returned as it is. One slot per tuple type and function: the
    reference is valid until the next ``ref_of_value`` of a tuple of the same type in the same
    function (after numba's inlining), so pass it straight to the callee, never keep it. For
    code that may hold tuples by value and calls a function compiled for references: written
    ``leaf(ref_of_value(state), ...)`` at the call, the copy is made only when that call is
    (`kbsim.policies.kernels`' step-by-step entry points; in the replay engine, which holds
    references, it is no code at all)."""
    if isinstance(tup, TupleRef):
        return tup(tup), lambda context, builder, sig, args: args[0]
    if not isinstance(tup, types.BaseNamedTuple):
        return None

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        # not cgutils.alloca_once: it also zero-fills the slot in the entry block, and LLVM's
        # dead-store elimination gives up on the hundreds of stores below (a ~2.6 KB memset
        # stayed on every call). Field by field: LLVM lowers one store of the whole aggregate
        # (hundreds of words) into far slower code than a store per field.
        slots = builder.function.__dict__.setdefault("_kbsim_ref_slots", {})
        ptr = slots.get(tup)
        if ptr is None:
            with builder.goto_entry_block():
                ptr = slots[tup] = builder.alloca(args[0].type)
        for i in range(len(tup)):
            builder.store(builder.extract_value(args[0], i),
                          cgutils.gep_inbounds(builder, ptr, 0, i))
        return ptr

    return TupleRef(tup)(tup), codegen


@intrinsic
def inline_into_callers(typingctx: Any) -> Any:
    """Mark the function calling this LLVM ``alwaysinline``: LLVM inlines it into every
    compiled function that calls it (not into numba's Python and C wrappers, whose calls are
    ``noinline``). Unlike numba's ``forceinline`` option, which a function compiled while the
    marked one is being compiled inherits unless it sets it, this marks only the calling
    function."""

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        builder.function.attributes.add("alwaysinline")
        return context.get_dummy_value()

    return types.none(), codegen


#: numba's array value, field by field (numba.core.datamodel.models.ArrayModel)
_ARRAY_FIELDS = ("meminfo", "parent", "nitems", "itemsize", "data", "shape", "strides")


class TupleImage(NamedTuple):
    """A named tuple of arrays as numba lays out its value: pass `image` and `tuple_type` to a
    compiled function, which calls ``ref_of_image(image, tuple_type)``."""

    image: np.ndarray  # int64, per array: 0, 0, size, itemsize, data address, shape, strides
    tuple_type: types.BaseNamedTuple
    arrays: tuple  # the tuple itself: the image points into its arrays


def tuple_image(tup: tuple) -> TupleImage:
    """The image of the named tuple of numpy arrays `tup` (module docstring)."""
    tuple_type = numba.typeof(tup)
    _check_layout(tuple_type)
    words: list[int] = []
    for arr in tup:
        words += (0, 0, arr.size, arr.itemsize, arr.ctypes.data, *arr.shape, *arr.strides)
    return TupleImage(np.array(words, np.int64), tuple_type, tup)


@cache
def _check_layout(tuple_type: types.Type) -> None:
    """Raise unless numba lays `tuple_type` out as `tuple_image` writes it: a named tuple of
    arrays, each array value 5 + 2 * ndim machine words in `_ARRAY_FIELDS` order, no padding."""
    from numba.core.registry import cpu_target

    if not isinstance(tuple_type, types.BaseNamedTuple) or not all(
            isinstance(t, types.Array) for t in tuple_type.types):
        raise TypeError(f"tuple_image needs a named tuple of numpy arrays, got {tuple_type}")
    context = cpu_target.target_context
    words = 0
    for t in tuple_type.types:
        model = context.data_model_manager[t]
        if tuple(model._fields) != _ARRAY_FIELDS:
            raise RuntimeError(f"numba {numba.__version__} lays arrays out as {model._fields}, "
                               f"not as kbsim._byref expects ({_ARRAY_FIELDS})")
        words += 5 + 2 * t.ndim
    size = context.get_abi_sizeof(context.data_model_manager[tuple_type].get_value_type())
    if size != 8 * words:
        raise RuntimeError(f"numba {numba.__version__} lays {tuple_type} out in {size} bytes, "
                           f"not the {8 * words} kbsim._byref expects")
