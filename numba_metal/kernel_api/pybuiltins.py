"""Python builtins inside kernels, with Numba's semantics: ``abs``, ``min``, ``max``, ``round``, ``int``,
``float``, ``bool``, ``complex``, ``len``, ``pow``, ``divmod``, ``range`` and ``slice``, the attributes and
methods of complex numbers (``.real``, ``.imag``, ``.conjugate()``: compiler/mslib/complex.metal's rows), and
``.value`` of ``Enum``/``IntEnum`` members (which kernels use as constants, as in numba.cuda).

Typing comes from Numba's own declarations (``numba.core.typing.builtins``), except ``min``, ``max`` and
``int``, which Numba types with ``@overload`` implementations numba-metal cannot run: declared here.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (tools/generate_api.py).
API_TITLE = "Python builtins"

import builtins

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, bound_function, signature

from numba_metal.compiler import iterators, msl, slicing
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.operators import lower_binop
from numba_metal.compiler.declarations import registry as typing

# ---------------------------------------------------------------------------------------------
# Typing
# ---------------------------------------------------------------------------------------------


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
# Lowering
# ---------------------------------------------------------------------------------------------


@lowering.call(builtins.abs)
def _abs(lc, sig, args):
    (at,) = sig.args
    rt = types.unliteral(sig.return_type)
    if isinstance(at, types.Complex):
        # abs(z) is float64 for complex128 (computed exactly), float32 for complex64.
        z = lc.cast(args[0], at)
        if at == types.complex128:
            return Value(lc.library_call("nm_c128_abs", z), types.float64)
        return Value(lc.library_call("nm_c64_abs", z), types.float32)
    x = lc.cast(args[0], rt)
    if isinstance(rt, types.Integer):
        name = lc.msl_type(rt)
        if not rt.signed:
            return Value(x, rt)
        u = msl.UNSIGNED_OF[name]
        xv = lc.tmp(rt, x)
        negated = msl.binary("-", msl.cast(u, "0"), msl.cast(u, xv))
        return Value(msl.cast(name, msl.select(msl.binary("<", xv, "0"), negated, msl.cast(u, xv))), rt)
    if lc.is_float64(rt):
        return Value(lc.library_call("nm_f64_abs", x), rt)
    if isinstance(rt, types.Float):
        return Value(msl.call("fabs", x), rt)
    lc.error(f"abs() of {at} is not supported in Metal kernels")


#: min/max of emulated float64 values: the library's functions with Python's rule.
_FLOAT64_MINMAX = {"<": "nm_f64_py_min", ">": "nm_f64_py_max"}


def _minmax(lc, sig, args, op: str):
    rt = types.unliteral(sig.return_type)
    if len(args) == 1 and isinstance(types.unliteral(args[0].type), types.BaseTuple):
        tup = args[0]
        items = [Value(msl.member(tup.expr, msl.tuple_field(k)), t)
                 for k, t in enumerate(types.unliteral(tup.type).types)]
    else:
        items = list(args)
    if not items:
        lc.error("min()/max() of an empty sequence")
    # Python's algorithm (and Numba's): keep the accumulator unless the next value compares
    # strictly better, so min(nan, 1) is nan and min(1, nan) is 1.
    acc = lc.tmp(rt, lc.cast(items[0], rt))
    for item in items[1:]:
        v = lc.tmp(rt, lc.cast(item, rt))
        if lc.is_float64(rt):
            lc.emit(msl.assign(acc, lc.library_call(_FLOAT64_MINMAX[op], acc, v)))
            continue
        lc.emit(msl.assign(acc, msl.select(msl.binary(op, v, acc), v, acc)))
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
        if lc.is_float64(at):
            rounded = lc.library_call("nm_f64_rint", lc.cast(args[0], at))
            return Value(lc.cast(Value(rounded, at), rt), rt)
        # round() rounds half to even; rint is round-to-nearest-even in MSL.
        return Value(msl.cast(lc.msl_type(rt), msl.call("rint", lc.cast(args[0], at))), rt)
    if isinstance(at, types.Integer):
        lc.error("round(int, ndigits) is not supported in Metal kernels")
    if lc.is_float64(at):   # CPython's correctly rounded decimal rounding (float64_math.metal, fm_round)
        x = lc.cast(args[0], at)
        return Value(lc.library_call("nm_f64_round_ndigits", x, msl.cast("long", args[1].expr)), rt)
    lc.need("nm_round_ndigits")
    x = lc.cast(args[0], types.float32)
    return Value(msl.call("nm_round_ndigits", x, msl.cast("long", args[1].expr)), rt)


@lowering.call(builtins.int)
def _int(lc, sig, args):
    rt = types.unliteral(sig.return_type)
    return Value(lc.cast(args[0], rt), rt)


@lowering.call(builtins.float)
def _float(lc, sig, args):
    rt = types.unliteral(sig.return_type)
    if not args:
        return Value(msl.literal(0.0, lc.msl_type(rt)), rt)
    return Value(lc.cast(args[0], rt), rt)


@lowering.call(builtins.bool)
def _bool(lc, sig, args):
    if not args:
        return Value(msl.FALSE, types.boolean)
    return Value(lc.truth(args[0]), types.boolean)


@lowering.call(builtins.len)
def _len(lc, sig, args):
    (x,) = args
    ty = types.unliteral(x.type)
    if isinstance(ty, types.Array):
        if ty.ndim == 0:
            lc.error("len() of a 0-d array: it has no length (NumPy raises TypeError); use .size")
        return Value(msl.index(msl.member(x.expr, "shape"), 0), types.intp)
    if isinstance(ty, types.BaseTuple):
        return Value(msl.long_literal(len(ty)), types.intp)
    if isinstance(ty, types.RangeType):
        lc.need("nm_range_count")
        count = msl.call("nm_range_count", *(msl.member(x.expr, m) for m in ("start", "stop", "step")))
        return Value(msl.cast("long", count), types.intp)
    lc.error(f"len() of {ty} is not supported in Metal kernels")


@lowering.call(builtins.slice)
def _slice(lc, sig, args):
    """``slice(...)``, and every ``a:b:c`` of an index: an array view takes it (compiler/slicing.py)."""
    return slicing.lower_slice_call(lc, sig, args)


@lowering.call(builtins.pow)
def _pow(lc, sig, args):
    if len(args) != 2:
        lc.error("pow() with a modulus is not supported in Metal kernels")
    return lower_binop(lc, "**", sig, args[0], args[1])


@lowering.call(builtins.divmod)
def _divmod(lc, sig, args):
    """``(a // b, a % b)``, each through the operator table (Python's sign rules; Numba's error model)."""
    if len(args) != 2:
        lc.error("divmod() takes two arguments")
    rt = types.unliteral(sig.return_type)
    operand_sig = signature(rt.types[0], *sig.args)
    a = Value(lc.tmp(sig.args[0], lc.cast(args[0], sig.args[0])), types.unliteral(sig.args[0]))
    b = Value(lc.tmp(sig.args[1], lc.cast(args[1], sig.args[1])), types.unliteral(sig.args[1]))
    quotient = lower_binop(lc, "//", operand_sig, a, b)
    remainder = lower_binop(lc, "%", signature(rt.types[1], *sig.args), a, b)
    return Value(msl.aggregate(lc.msl_type(rt), [lc.cast(quotient, rt.types[0]), lc.cast(remainder, rt.types[1])]),
                 rt)


@lowering.call(builtins.complex)
def _complex(lc, sig, args):
    rt = types.unliteral(sig.return_type)
    if len(args) == 1:
        return Value(lc.cast(args[0], rt), rt)
    part = types.float64 if rt == types.complex128 else types.float32
    re, im = (lc.cast(a, part) for a in args)
    if rt == types.complex128:
        return Value(lc.library_call("nm_c128_make", re, im), rt)
    return Value(msl.call(msl.COMPLEX64, re, im), rt)


#: z.real and z.imag: complex128's library functions, complex64's float2 members.
_PARTS = {"real": ("nm_c128_real", msl.COMPLEX64_PARTS[0]), "imag": ("nm_c128_imag", msl.COMPLEX64_PARTS[1])}


@lowering.attribute(types.Complex, "real", "imag")
def _complex_part(lc, z, attr, rt):
    function, member = _PARTS[attr]
    if types.unliteral(z.type) == types.complex128:
        return Value(lc.library_call(function, z.expr), types.float64)
    return Value(msl.member(z.expr, member), types.float32)


@lowering.method(types.Complex, "conjugate")
def _conjugate(lc, sig, z, args):
    ty = types.unliteral(z.type)
    if ty == types.complex128:
        return Value(lc.library_call("nm_c128_conj", z.expr), ty)
    return Value(lc.library_call("nm_c64_conj", z.expr), ty)


@typing.register_attr
class IntegerMethods(AttributeTemplate):
    """``i.bit_count()`` (Python 3.10's ``int.bit_count``) on every integer type: the number of one bits, of
    the argument's type, as numba.cuda's ``overload_method(types.Integer, "bit_count")`` (``cuda.popc``)."""
    key = types.Integer

    @bound_function("int.bit_count")
    def resolve_bit_count(self, ty, args, kws):
        if not args and not kws:
            return signature(types.unliteral(ty))


@lowering.method(types.Integer, "bit_count")
def _bit_count(lc, sig, i, args):
    ty = types.unliteral(i.type)
    return Value(lc.cast(Value(msl.call("popcount", i.expr), ty), sig.return_type), sig.return_type)


@lowering.attribute(types.EnumMember, "value")
def _enum_value(lc, member, attr, result_ty):
    # A member is its value at run time (Enum and IntEnum members, as Numba's typing of them).
    return Value(member.expr, result_ty)


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
    return Value(msl.aggregate(lc.msl_type(rt), [start, stop, step]), rt)


@lowering.call(builtins.enumerate)
def _enumerate(lc, sig, args):
    return iterators.make_enumerate(lc, args[0], args[1] if len(args) > 1 else None, sig.return_type)


@lowering.call(builtins.zip)
def _zip(lc, sig, args):
    return iterators.make_zip(lc, args, sig.return_type)


@lowering.call(builtins.iter)
def _iter(lc, sig, args):
    return lc.getiter(args[0], sig.return_type)


__all__: list[str] = []
