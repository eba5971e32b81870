"""Conversions between Numba types in MSL (Numba's rules; float64 is float32 on Metal), truth
values, and run-time indexing of homogeneous tuples."""

from __future__ import annotations

from numba.core import types

from . import msl
from .lowering import Value


def cast_expr(lc, value: Value, to) -> str:
    frm = types.unliteral(value.type)
    to = types.unliteral(to)
    if frm == to:
        return value.expr
    if isinstance(frm, types.EnumMember):  # an IntEnum member converts as its value
        return cast_expr(lc, Value(value.expr, frm.dtype), to)
    if isinstance(to, types.Boolean):
        return truth(lc, value)
    src = msl.scalar_type(frm)
    dst = msl.scalar_type(to)
    if src is not None and dst is not None:
        if src == dst:
            return value.expr
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


def _is_simple(expr: str) -> bool:
    return expr.replace("_", "").replace(".", "").isalnum()


def truth(lc, value: Value) -> str:
    ty = types.unliteral(value.type)
    if isinstance(ty, types.Boolean):
        return value.expr
    if isinstance(ty, types.Integer):
        return msl.binary("!=", value.expr, "0")
    if isinstance(ty, types.Float):
        return msl.binary("!=", value.expr, msl.float_literal(0.0, msl.scalar_type(ty)))
    if isinstance(ty, types.NoneType):
        return msl.FALSE
    if isinstance(ty, types.BaseTuple):
        return msl.TRUE if len(ty) else msl.FALSE
    lc.error(f"the truth value of {ty} is not defined in Metal kernels")


def tuple_item(lc, tup: Value, index_expr: str) -> str:
    """Element ``index_expr`` (a run-time integer, negative wraps) of a homogeneous tuple."""
    n = tup.type.count
    if n == 0:
        lc.error("indexing an empty tuple")
    lc.need("array")
    idx = lc.tmp(types.int64, msl.call("nm_wrap", msl.cast("long", index_expr), msl.long_literal(n)))
    expr = msl.member(tup.expr, msl.tuple_field(n - 1))
    for k in range(n - 2, -1, -1):
        expr = msl.select(msl.binary("==", idx, msl.long_literal(k)), msl.member(tup.expr, msl.tuple_field(k)), expr)
    return expr
