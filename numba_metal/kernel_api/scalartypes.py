"""Scalar types as numba.cuda has them: ``metal.int32``, ``metal.float32``, ``metal.void``... are Numba's
type objects, so ``int32[:]``, ``float32[:, ::1]``, ``float32(float32, float32)`` build array types and
signatures, ``int32(x)`` converts inside a kernel, and each is accepted wherever a dtype is expected
(``metal.shared.array(16, int32)``), as NumPy's scalar classes (``np.int32``) still are.

This module is the one owner of these names: the ``metal`` namespace finds them in the kernel API's
index, and signatures written with them are Numba's own objects (``metal.float32 is numba.float32``).
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Scalar types"

from numba.core import types

#: ``metal.<name>`` -> Numba type, with numba.cuda's names (those of ``numba.core.types``).
SCALAR_TYPES = {
    "boolean": types.boolean, "bool_": types.bool_,
    "int8": types.int8, "int16": types.int16, "int32": types.int32, "int64": types.int64,
    "uint8": types.uint8, "uint16": types.uint16, "uint32": types.uint32, "uint64": types.uint64,
    "intp": types.intp, "uintp": types.uintp,
    "float16": types.float16, "float32": types.float32, "float64": types.float64,
    "complex64": types.complex64, "complex128": types.complex128,
    "void": types.void,
    # numba.core.types' short names.
    "b1": types.b1, "i1": types.i1, "i2": types.i2, "i4": types.i4, "i8": types.i8,
    "u1": types.u1, "u2": types.u2, "u4": types.u4, "u8": types.u8,
    "f2": types.f2, "f4": types.f4, "f8": types.f8, "c8": types.c8, "c16": types.c16,
    # numba.cuda's C names (numba.cuda.types' ``__all__``): ``double`` is float64, ``short`` int16...
    "byte": types.byte, "char": types.char, "uchar": types.uchar, "short": types.short, "ushort": types.ushort,
    "intc": types.intc, "uintc": types.uintc, "int_": types.int_, "uint": types.uint, "long_": types.long_,
    "ulong": types.ulong, "longlong": types.longlong, "ulonglong": types.ulonglong, "double": types.double,
}

globals().update(SCALAR_TYPES)

__all__ = list(SCALAR_TYPES)
