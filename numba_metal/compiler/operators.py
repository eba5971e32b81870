"""Python operators with Numba's semantics, spelt in MSL.

Numba's typing picks a signature ``(A, B) -> R`` for each operation; as in Numba's own lowering the
operands are converted to ``R`` (or, for comparisons, to their common type) and the operation is done
there: wrapping integer arithmetic, Python ``//``, ``%`` and ``**``, true division in floating point.
"""

from __future__ import annotations

from numba.core import types

from . import msl
from .lowering import Value

_ARITH = {"+", "-", "*"}
_CMP = {"<", "<=", ">", ">=", "==", "!="}
_BITWISE = {"&", "|", "^"}


def lower_binop(lc, op, sig, a: Value, b: Value) -> Value:
    if not isinstance(op, str):
        lc.error(f"the operator {getattr(op, '__name__', op)} is not supported in Metal kernels")
    at, bt = sig.args
    rt = sig.return_type
    a = Value(lc.cast(a, at), types.unliteral(at))
    b = Value(lc.cast(b, bt), types.unliteral(bt))
    if op in _CMP:
        return Value(_compare(lc, op, a, b), types.boolean)
    if not isinstance(types.unliteral(rt), (types.Number, types.Boolean)):
        lc.error(f"the operator {op} on {at} and {bt} is not supported in Metal kernels")
    rt = types.unliteral(rt)
    rname = lc.msl_type(rt)
    if op == "**":
        return Value(_power(lc, a, b, rt), rt)
    if op in ("<<", ">>"):
        lc.need("shifts")
        helper = msl.HELPERS[(op, "int")]
        return Value(f"{helper}({lc.cast(a, rt)}, {lc.cast(b, rt)})", rt)
    x = lc.cast(a, rt)
    y = lc.cast(b, rt)
    if op in _ARITH:
        if isinstance(rt, types.Integer) and rt.signed:
            u = msl.UNSIGNED_OF[rname]
            return Value(f"{rname}({u}({x}) {op} {u}({y}))", rt)
        if isinstance(rt, types.Integer):
            return Value(f"{rname}({x} {op} {y})", rt)
        return Value(f"({x} {op} {y})", rt)
    if op == "/":
        if not isinstance(rt, types.Float):
            lc.error("true division must produce a float")
        return Value(f"({x} / {y})", rt)
    if op in ("//", "%"):
        kind = "float" if isinstance(rt, types.Float) else "int"
        lc.need("floatdiv" if kind == "float" else "intdiv")
        return Value(f"{msl.HELPERS[(op, kind)]}({x}, {y})", rt)
    if op in _BITWISE:
        if isinstance(rt, types.Boolean):
            return Value(f"bool({x} {op} {y})", rt)
        if isinstance(rt, types.Integer):
            return Value(f"{rname}({x} {op} {y})", rt)
        lc.error(f"the operator {op} is not defined for {rt}")
    lc.error(f"the operator {op} is not supported in Metal kernels")


def _power(lc, a: Value, b: Value, rt) -> str:
    if isinstance(rt, types.Integer):
        lc.need("ipow")
        wide = "long" if rt.signed else "ulong"
        base = f"{wide}({a.expr})" if lc.msl_type(rt) != wide else a.expr
        exp = f"long({b.expr})"
        res = f"nm_ipow({base}, {exp})"
        return res if lc.msl_type(rt) == wide else f"{lc.msl_type(rt)}({res})"
    if isinstance(b.type, types.Integer):
        lc.need("powi")
        return f"nm_powi({lc.cast(a, rt)}, long({b.expr}))"
    return f"pow({lc.cast(a, rt)}, {lc.cast(b, rt)})"


def _compare(lc, op: str, a: Value, b: Value) -> str:
    at, bt = a.type, b.type
    if at != bt:
        if isinstance(at, types.Float) or isinstance(bt, types.Float):
            common = types.float32
            if types.float16 in (at, bt) and not {types.float32, types.float64} & {at, bt}:
                common = types.float16
            return f"({lc.cast(a, common)} {op} {lc.cast(b, common)})"
        if isinstance(at, types.Integer) and isinstance(bt, types.Integer) and at.signed != bt.signed:
            return _mixed_sign_compare(lc, op, a, b)
        if isinstance(at, (types.Integer, types.Boolean)) and isinstance(bt, (types.Integer, types.Boolean)):
            common = types.int64
            return f"({lc.cast(a, common)} {op} {lc.cast(b, common)})"
    if isinstance(at, types.BaseTuple):
        lc.error("comparing tuples is not supported in Metal kernels")
    return f"({a.expr} {op} {b.expr})"


def _mixed_sign_compare(lc, op, a: Value, b: Value) -> str:
    lc.need("mixedcmp")
    x = f"{'long' if a.type.signed else 'ulong'}({a.expr})"
    y = f"{'long' if b.type.signed else 'ulong'}({b.expr})"
    return {
        "<": f"nm_lt({x}, {y})",
        ">": f"nm_lt({y}, {x})",
        "<=": f"(!nm_lt({y}, {x}))",
        ">=": f"(!nm_lt({x}, {y}))",
        "==": f"nm_eq({x}, {y})",
        "!=": f"(!nm_eq({x}, {y}))",
    }[op]


def lower_unary(lc, op, sig, a: Value) -> Value:
    (at,) = sig.args
    rt = types.unliteral(sig.return_type)
    a = Value(lc.cast(a, at), types.unliteral(at))
    if op == "not":
        from .conversions import truth
        return Value(f"(!{truth(lc, a)})", types.boolean)
    if op == "+":
        return Value(lc.cast(a, rt), rt)
    if op == "-":
        x = lc.cast(a, rt)
        if isinstance(rt, types.Integer):
            rname = lc.msl_type(rt)
            u = msl.UNSIGNED_OF.get(rname, rname)
            return Value(f"{rname}({u}(0) - {u}({x}))", rt)
        return Value(f"(-{x})", rt)
    if op == "~":
        if isinstance(rt, types.Boolean):
            return Value(f"(!{a.expr})", rt)
        if isinstance(rt, types.Integer):
            return Value(f"{lc.msl_type(rt)}(~{lc.cast(a, rt)})", rt)
        lc.error(f"~ is not defined for {rt}")
    lc.error(f"the unary operator {op} is not supported in Metal kernels")
