"""Python builtins and the ``math`` module inside kernels, with Numba's semantics.

Typing comes from Numba's own declarations (``numba.core.typing.builtins`` and ``mathdecl``) plus
``math.fmod`` and ``math.remainder``, declared here. float64 results compute in float32 on Metal.
"""

from __future__ import annotations

import builtins
import math

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, ConcreteTemplate, signature

from numba_metal.compiler import msl
from numba_metal.compiler.conversions import truth
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.typing import registry as typing

# ---------------------------------------------------------------------------------------------
# Typing numba lacks for the metal target
# ---------------------------------------------------------------------------------------------


@typing.register_global(math.fmod)
@typing.register_global(math.remainder)
class Math_binary_float(ConcreteTemplate):
    cases = [
        signature(types.float32, types.float32, types.float32),
        signature(types.float64, types.float64, types.float64),
    ]


class _MetalTemplate(AbstractTemplate):
    # Numba 0.68 types min, max and int with @overload implementations, which need a jit numba-metal
    # does not have; these templates are tried first (they are specific to the metal target).
    metadata = {"target": "metal"}


@typing.register_global(builtins.min)
@typing.register_global(builtins.max)
class MinMax(_MetalTemplate):
    def generic(self, args, kws):
        if kws:
            return None
        if len(args) == 1 and isinstance(args[0], types.BaseTuple) and len(args[0]):
            tys = args[0].types
        elif len(args) >= 2:
            tys = args
        else:
            return None
        tys = [types.unliteral(t) for t in tys]
        if not all(isinstance(t, (types.Number, types.Boolean)) for t in tys):
            return None
        unified = self.context.unify_types(*tys)
        if unified is None:
            return None
        return signature(unified, *args)


@typing.register_global(builtins.int)
class Int(_MetalTemplate):
    def generic(self, args, kws):
        if kws or len(args) != 1:
            return None
        (x,) = args
        ux = types.unliteral(x)
        if isinstance(ux, types.Integer):
            # As Numba: int() of an integer keeps its type, so its value (int(uint64) stays unsigned).
            return signature(ux, x)
        if isinstance(ux, (types.Number, types.Boolean)):
            return signature(types.intp, x)
        return None


# ---------------------------------------------------------------------------------------------
# Builtins
# ---------------------------------------------------------------------------------------------


@lowering.call(builtins.abs)
def _abs(lc, sig, args):
    (at,) = sig.args
    rt = types.unliteral(sig.return_type)
    x = lc.cast(args[0], rt)
    if isinstance(rt, types.Integer):
        name = lc.msl_type(rt)
        if not rt.signed:
            return Value(x, rt)
        u = msl.UNSIGNED_OF[name]
        xv = lc.tmp(rt, x)
        return Value(f"{name}({xv} < 0 ? {u}(0) - {u}({xv}) : {u}({xv}))", rt)
    if isinstance(rt, types.Float):
        return Value(f"fabs({x})", rt)
    lc.error(f"abs() of {at} is not supported in Metal kernels")


def _minmax(lc, sig, args, op: str):
    rt = types.unliteral(sig.return_type)
    if len(args) == 1 and isinstance(types.unliteral(args[0].type), types.BaseTuple):
        tup = args[0]
        items = [Value(f"{tup.expr}.f{k}", t) for k, t in enumerate(types.unliteral(tup.type).types)]
    else:
        items = list(args)
    if not items:
        lc.error("min()/max() of an empty sequence")
    # Python's algorithm (and Numba's): keep the accumulator unless the next value compares
    # strictly better, so min(nan, 1) is nan and min(1, nan) is 1.
    acc = lc.tmp(rt, lc.cast(items[0], rt))
    for item in items[1:]:
        v = lc.tmp(rt, lc.cast(item, rt))
        lc.emit(f"{acc} = ({v} {op} {acc}) ? {v} : {acc};")
    return Value(acc, rt)


@lowering.call(builtins.min)
def _min(lc, sig, args):
    return _minmax(lc, sig, args, "<")


@lowering.call(builtins.max)
def _max(lc, sig, args):
    return _minmax(lc, sig, args, ">")


@lowering.call(builtins.round)
def _round(lc, sig, args):
    rt = types.unliteral(sig.return_type)
    at = types.unliteral(sig.args[0])
    if len(args) == 1:
        if isinstance(at, types.Integer):
            return Value(lc.cast(args[0], rt), rt)
        # round() rounds half to even; rint is round-to-nearest-even in MSL.
        return Value(f"{lc.msl_type(rt)}(rint({lc.cast(args[0], at)}))", rt)
    if isinstance(at, types.Integer):
        lc.error("round(int, ndigits) is not supported in Metal kernels")
    lc.need("round")
    x = lc.cast(args[0], types.float32)
    return Value(f"nm_round_ndigits({x}, long({args[1].expr}))", rt)


@lowering.call(builtins.int)
def _int(lc, sig, args):
    rt = types.unliteral(sig.return_type)
    return Value(lc.cast(args[0], rt), rt)


@lowering.call(builtins.float)
def _float(lc, sig, args):
    rt = types.unliteral(sig.return_type)
    if not args:
        return Value("0.0f", rt)
    return Value(lc.cast(args[0], rt), rt)


@lowering.call(builtins.bool)
def _bool(lc, sig, args):
    if not args:
        return Value("false", types.boolean)
    return Value(truth(lc, args[0]), types.boolean)


@lowering.call(builtins.len)
def _len(lc, sig, args):
    (x,) = args
    ty = types.unliteral(x.type)
    if isinstance(ty, types.Array):
        return Value(f"{x.expr}.shape[0]", types.intp)
    if isinstance(ty, types.BaseTuple):
        return Value(f"{len(ty)}l", types.intp)
    if isinstance(ty, types.RangeType):
        lc.need("range")
        return Value(f"long(nm_range_count({x.expr}.start, {x.expr}.stop, {x.expr}.step))", types.intp)
    lc.error(f"len() of {ty} is not supported in Metal kernels")


@lowering.call(builtins.pow, math.pow)
def _pow(lc, sig, args):
    from numba_metal.compiler.operators import lower_binop
    if len(args) != 2:
        lc.error("pow() with a modulus is not supported in Metal kernels")
    return lower_binop(lc, "**", sig, args[0], args[1])


@lowering.call(builtins.range)
def _range(lc, sig, args):
    rt = sig.return_type
    dtype = rt.dtype
    vals = [lc.cast(a, dtype) for a in args]
    zero, one = msl.literal(0, lc.msl_type(dtype)), msl.literal(1, lc.msl_type(dtype))
    if len(vals) == 1:
        start, stop, step = zero, vals[0], one
    elif len(vals) == 2:
        start, stop, step = vals[0], vals[1], one
    else:
        start, stop, step = vals
    return Value(f"{lc.msl_type(rt)}{{{start}, {stop}, {step}}}", rt)


# ---------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------


def _float_args(lc, sig, args, ftype=None):
    ftype = ftype or types.float32
    return [lc.cast(a, ftype if isinstance(types.unliteral(t), types.Integer) else types.unliteral(t))
            for a, t in zip(args, sig.args)]


def _make_math(pyname: str, mslname: str):
    def lower(lc, sig, args):
        if mslname in msl.MATHLIB_FUNCTIONS:
            lc.need("mathlib")
        elif mslname.startswith("nm_"):
            lc.need({"nm_degrees": "angles", "nm_radians": "angles", "nm_ldexp": "ldexp",
                     "nm_fmod": "floatdiv"}.get(mslname, "base"))
        rt = types.unliteral(sig.return_type)
        if pyname in ("floor", "ceil", "trunc"):
            at = types.unliteral(sig.args[0])
            if isinstance(at, types.Integer):
                return Value(lc.cast(args[0], rt), rt)
            return Value(f"{lc.msl_type(rt)}({mslname}({lc.cast(args[0], at)}))", rt)
        if pyname == "ldexp":
            return Value(f"nm_ldexp({lc.cast(args[0], types.float32)}, long({args[1].expr}))", rt)
        if pyname == "log" and len(args) == 2:
            x, b = _float_args(lc, sig, args)
            return Value(f"(log({x}) / log({b}))", rt)
        name = "log" if pyname == "log" else mslname
        fargs = _float_args(lc, sig, args)
        call = f"{name}({', '.join(fargs)})"
        return Value(lc.cast(Value(call, _arg_float(sig)), rt), rt)

    return lower


def _arg_float(sig):
    for t in sig.args:
        t = types.unliteral(t)
        if isinstance(t, types.Float):
            return t
    return types.float32


for _pyname, _mslname in msl.MATH_FUNCTIONS.items():
    if _pyname == "pow":
        continue
    lowering.call(getattr(math, _pyname))(_make_math(_pyname, _mslname))


@lowering.call(math.isnan, math.isinf, math.isfinite)
def _predicate(lc, sig, args):
    fn = lc.resolve_current_callee()
    at = types.unliteral(sig.args[0])
    if isinstance(at, types.Integer):
        return Value("true" if fn is math.isfinite else "false", types.boolean)
    return Value(f"{fn.__name__}({lc.cast(args[0], at)})", types.boolean)


__all__: list[str] = []
