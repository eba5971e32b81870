"""Conversions between Numba types in MSL (Numba's rules), truth values, and run-time indexing of
homogeneous tuples. float64 is the emulated library's ``nm_f64`` in a kernel that holds float64 data
(converted by the rows of ``TO_FLOAT64``/``FROM_FLOAT64``) and float32 elsewhere (precision.py)."""

from __future__ import annotations

from numba.core import types

from . import kernel_io, msl
from .lowering import Value

#: Conversions to the emulated float64 (float64.metal, rows of float64_ops.py), by the source's Numba
#: type: (library function, the MSL type its argument is converted to first, if any).
TO_FLOAT64 = {
    "bool": ("nm_f64_from_u8", "uchar"),
    "int8": ("nm_f64_from_i8", None), "uint8": ("nm_f64_from_u8", None),
    "int16": ("nm_f64_from_i16", None), "uint16": ("nm_f64_from_u16", None),
    "int32": ("nm_f64_from_i32", None), "uint32": ("nm_f64_from_u32", None),
    "int64": ("nm_f64_from_i64", None), "uint64": ("nm_f64_from_u64", None),
    "float16": ("nm_f64_from_f16", None), "float32": ("nm_f64_from_f32", None),
}

#: Conversions from the emulated float64 by the target's Numba type (to bool: ``truth``). Integers
#: truncate toward zero (NaN and out-of-range values as Numba's njit on Apple silicon).
FROM_FLOAT64 = {
    "int8": "nm_f64_to_i8", "uint8": "nm_f64_to_u8", "int16": "nm_f64_to_i16", "uint16": "nm_f64_to_u16",
    "int32": "nm_f64_to_i32", "uint32": "nm_f64_to_u32", "int64": "nm_f64_to_i64", "uint64": "nm_f64_to_u64",
    "float16": "nm_f64_to_f16", "float32": "nm_f64_to_f32",
}


#: The integer nearest zero that rounds to infinity in half: halfway between half's largest finite value,
#: 65504, and 2^16, so round-to-nearest-even gives 2^16, which overflows.
HALF_OVERFLOW = 65520


def _clamped_to_half_range(expr: str, frm, src: str) -> str:
    """``expr`` limited to +-HALF_OVERFLOW, which converts to half as the unlimited value does (infinity
    beyond half's range). An integer beyond half's range makes the conversion undefined in C, and clang
    then folds float(half(x)) to float(x) for an x with few significant bits: np.float16(4194304) gave
    4194304 instead of inf (found by the long differential run)."""
    if not frm.signed:
        return msl.call("min", expr, msl.int_literal(HALF_OVERFLOW, src))
    return msl.call("clamp", expr, msl.int_literal(-HALF_OVERFLOW, src), msl.int_literal(HALF_OVERFLOW, src))


def cast_expr(lc, value: Value, to) -> str:
    frm = types.unliteral(value.type)
    to = types.unliteral(to)
    if frm == to:
        return value.expr
    if isinstance(frm, types.EnumMember):  # an IntEnum member converts as its value
        return cast_expr(lc, Value(value.expr, frm.dtype), to)
    if isinstance(to, types.Boolean):
        return truth(lc, value)
    if isinstance(to, types.Complex) or isinstance(frm, types.Complex):
        return _complex_conversion(lc, value, frm, to)
    if lc.is_float64(to) and str(frm) in TO_FLOAT64:
        function, through = TO_FLOAT64[str(frm)]
        return lc.library_call(function, value.expr if through is None else msl.cast(through, value.expr))
    if lc.is_float64(frm) and str(to) in FROM_FLOAT64:
        return lc.library_call(FROM_FLOAT64[str(to)], value.expr)
    if lc.is_float64(to) or lc.is_float64(frm):
        lc.error(f"cannot convert {frm} to {to} in a Metal kernel")
    src = msl.scalar_type(frm)
    dst = msl.scalar_type(to)
    if src is not None and dst is not None:
        if src == dst:
            return value.expr
        if dst == "half" and isinstance(frm, types.Integer) and frm.bitwidth >= (16 if not frm.signed else 32):
            return msl.cast(dst, _clamped_to_half_range(value.expr, frm, src))
        return msl.cast(dst, value.expr)
    if isinstance(to, types.BaseTuple) and isinstance(frm, types.BaseTuple) and len(to) == len(frm):
        tmp = lc.tmp(frm, value.expr) if not _is_simple(value.expr) else value.expr
        items = [cast_expr(lc, Value(msl.member(tmp, msl.tuple_field(k)), ft), tt)
                 for k, (ft, tt) in enumerate(zip(frm.types, to.types))]
        return msl.aggregate(lc.msl_type(to), items)
    if isinstance(to, types.Array) and isinstance(frm, types.Array):
        if lc.msl_type(to) == lc.msl_type(frm):
            return value.expr
    if isinstance(to, types.RangeType) and isinstance(frm, types.RangeType):
        t = lc.msl_type(to.dtype)
        return msl.aggregate(lc.msl_type(to), [msl.cast(t, msl.member(value.expr, m))
                                               for m in ("start", "stop", "step")])
    if isinstance(to, types.Optional) or isinstance(frm, types.Optional):
        lc.error("a value that may be None is not supported in Metal kernels")
    if lc.module.type_name(to) is not None and lc.module.type_name(to) == lc.module.type_name(frm):
        return value.expr
    lc.error(f"cannot convert {frm} to {to} in a Metal kernel")


def _complex_conversion(lc, value: Value, frm, to) -> str:
    """Conversions to complex64 (``float2``) and complex128 (two emulated float64), as Numba's: a real
    value becomes the real part (imaginary +0), complex64 <-> complex128 converts each part."""
    if not isinstance(to, types.Complex):
        lc.error(f"cannot convert {frm} to {to} in a Metal kernel; take z.real, z.imag or abs(z)")
    if isinstance(frm, types.Complex):
        z = value.expr if _is_simple(value.expr) else lc.tmp(frm, value.expr)
        if to == types.complex128:
            parts = [lc.library_call("nm_f64_from_f32", msl.member(z, p)) for p in msl.COMPLEX64_PARTS]
            return lc.library_call("nm_c128_make", *parts)
        parts = [lc.library_call("nm_f64_to_f32", msl.member(z, p)) for p in msl.COMPLEX128_PARTS]
        return msl.call(msl.COMPLEX64, *parts)
    if to == types.complex128:
        return lc.library_call("nm_c128_from_f64", cast_expr(lc, value, types.float64))
    return msl.call(msl.COMPLEX64, cast_expr(lc, value, types.float32), msl.float_literal(0.0))


def _is_simple(expr: str) -> bool:
    return expr.replace("_", "").replace(".", "").isalnum()


def truth(lc, value: Value) -> str:
    ty = types.unliteral(value.type)
    if isinstance(ty, types.Boolean):
        return value.expr
    if isinstance(ty, types.Integer):
        return msl.binary("!=", value.expr, "0")
    if lc.is_float64(ty):
        return lc.library_call("nm_f64_truth", value.expr)
    if ty == types.complex128:
        return lc.library_call("nm_c128_ne", value.expr, lc.library_call("nm_c128_from_f64", msl.float64_literal(0.0)))
    if ty == types.complex64:
        return msl.call("any", msl.binary("!=", value.expr, msl.call(msl.COMPLEX64, msl.float_literal(0.0))))
    if isinstance(ty, types.Float):
        return msl.binary("!=", value.expr, msl.float_literal(0.0, msl.scalar_type(ty)))
    if isinstance(ty, types.NoneType):
        return msl.FALSE
    if isinstance(ty, types.BaseTuple):
        return msl.TRUE if len(ty) else msl.FALSE
    lc.error(f"the truth value of {ty} is not defined in Metal kernels")


#: Tuples up to this length are indexed by a chain of selects; longer ones by a balanced tree of them, whose
#: nesting depth is log2 of the length (clang's parser overflows its stack on a chain as deep as a
#: 3,000-element tuple).
SELECT_CHAIN_MAX = 32


def tuple_item(lc, tup: Value, index_expr: str) -> str:
    """Element ``index_expr`` (a run-time integer, negative wraps) of a homogeneous tuple."""
    n = tup.type.count
    if n == 0:
        lc.error("indexing an empty tuple")
    lc.need("nm_wrap")
    raw = msl.cast("long", index_expr)
    if lc.debug:   # numba.cuda's debug=True (Python's error model) raises for an index out of range
        raw = lc.tmp(types.int64, raw)
        kernel_io.raise_if(lc, msl.binary("||", msl.binary("<", raw, msl.long_literal(-n)),
                                          msl.binary(">=", raw, msl.long_literal(n))),
                           IndexError, ("tuple index out of range",))
    idx = lc.tmp(types.int64, msl.call("nm_wrap", raw, msl.long_literal(n)))

    def field(k: int) -> str:
        return msl.member(tup.expr, msl.tuple_field(k))

    if n > SELECT_CHAIN_MAX:
        return _select_tree(idx, 0, n, field)
    expr = field(n - 1)
    for k in range(n - 2, -1, -1):
        expr = msl.select(msl.binary("==", idx, msl.long_literal(k)), field(k), expr)
    return expr


def _select_tree(idx: str, lo: int, hi: int, field) -> str:
    """Element ``idx`` of fields ``lo`` .. ``hi - 1``, halving the range at each select."""
    if hi - lo == 1:
        return field(lo)
    mid = (lo + hi) // 2
    return msl.select(msl.binary("<", idx, msl.long_literal(mid)), _select_tree(idx, lo, mid, field),
                      _select_tree(idx, mid, hi, field))
