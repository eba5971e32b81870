"""Compile-time constants (literals, module globals, closure variables) as MSL expressions."""

from __future__ import annotations

import enum

import numpy as np
from numba.core import types

from . import msl
from .arrays import array_value
from .arraytypes import RECORD_WORD, MetalArray, in_space
from .lowering import Value

#: The largest NumPy array baked into a kernel as constant data.
MAX_CONSTANT_ARRAY_BYTES = 64 * 1024


def lower_constant(lc, pyvalue, ty) -> Value:
    ty_u = types.unliteral(ty)
    if isinstance(ty_u, types.EnumMember) and isinstance(pyvalue, enum.Enum):
        # A member is its value at run time.
        return Value(lower_constant(lc, pyvalue.value, ty_u.dtype).expr, ty_u)
    scalar = msl.scalar_type(ty_u)
    if scalar is not None:
        scalar = lc.msl_type(ty_u)
        if isinstance(pyvalue, (np.generic,)):
            pyvalue = pyvalue.item()
        if isinstance(pyvalue, (bool, int, float)):
            return Value(msl.literal(pyvalue, scalar), ty_u)
    if isinstance(ty_u, types.Complex) and isinstance(pyvalue, (complex, np.complexfloating)):
        z = complex(pyvalue)
        if ty_u == types.complex128:
            return Value(lc.library_call("nm_c128_make", msl.float64_literal(z.real), msl.float64_literal(z.imag)), ty_u)
        return Value(msl.call(msl.COMPLEX64, msl.float_literal(z.real), msl.float_literal(z.imag)), ty_u)
    if isinstance(ty_u, types.BaseTuple) and isinstance(pyvalue, tuple):
        items = [lower_constant(lc, v, t) for v, t in zip(pyvalue, ty_u.types)]
        return Value(msl.aggregate(lc.msl_type(ty_u), [lc.cast(i, t) for i, t in zip(items, ty_u.types)]), ty_u)
    if isinstance(ty_u, types.Array):
        return lower_constant_array(lc, pyvalue, ty_u)
    lc.error(f"the constant {pyvalue!r} (of type {ty}) cannot be used at run time in a Metal kernel")


def lower_constant_array(lc, ary: np.ndarray, rt) -> Value:
    """A host array baked into the MSL as program-scope constant data."""
    ary = np.ascontiguousarray(ary)
    if ary.nbytes > MAX_CONSTANT_ARRAY_BYTES:
        lc.error(f"a constant array of {ary.nbytes} bytes is too large to bake into the kernel (limit "
                 "64 KB); pass it as an argument instead")
    if not isinstance(rt, MetalArray):
        rt = MetalArray(in_space(rt.dtype, "constant"), rt.ndim, "C", "constant", readonly=True)
    if ary.dtype.names:
        return _constant_records(lc, ary, rt)
    elem = lc.element_type(rt.dtype)
    if rt.dtype == types.complex128:
        def spell(v):
            return msl.call(msl.COMPLEX128_STORAGE, msl.float64_bits_literal(v.real), msl.float64_bits_literal(v.imag))
    elif rt.dtype == types.complex64:
        def spell(v):
            return msl.call(msl.COMPLEX64, msl.float_literal(v.real), msl.float_literal(v.imag))
    elif lc.is_float64(rt.dtype):
        spell = msl.float64_bits_literal
    else:
        def spell(v):
            return msl.literal(v, elem)
    name = lc.constant_array(elem, [spell(v) for v in ary.ravel().tolist()])
    return array_value(lc, rt, name, list(ary.shape))


def _constant_records(lc, ary: np.ndarray, rt) -> Value:
    """An array of records baked in as its bytes, in 16-byte words (uint4), so that its fields are as
    aligned as in device memory (records.py reads them at their offsets)."""
    raw = ary.astype(ary.dtype.newbyteorder("<")).tobytes()
    raw += bytes(-len(raw) % 16 or (16 if not raw else 0))
    words = np.frombuffer(raw, dtype="<u4").reshape(-1, 4).tolist()
    name = lc.constant_array(RECORD_WORD, [msl.call(RECORD_WORD, *(msl.literal(w, "uint") for w in q))
                                           for q in words])
    struct = lc.element_type(rt.dtype)
    return array_value(lc, rt, msl.pointer_cast(msl.pointer("constant", struct), name), list(ary.shape))
