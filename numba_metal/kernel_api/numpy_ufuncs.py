"""NumPy's ufuncs inside kernels: ``np.sin(x[i])`` on scalars and ``np.sin(x, out)`` over arrays, typed
and lowered from the table of :mod:`.ufunc_table` (one row per ufunc).

Typing follows NumPy's loop selection as Numba does it (``ufunc_find_matching_loop``): float32 in gives
float32 out, integers give float64 for the transcendental functions. A call on scalars returns a
scalar (a tuple for ``np.frexp``, ``np.modf``, ``np.divmod``). A call with array inputs must be given its
output arrays positionally, as numba.cuda requires (kernels cannot allocate arrays): ``np.sin(x, out)``
computes every element of ``out`` in the calling thread (numba.cuda's semantics: a ufunc call is not
spread over threads), broadcasting inputs (arrays of fewer dimensions or of extent 1, scalars) to the
output's shape, casting results to the output's dtype as NumPy's ``same_kind`` rule allows. Output arrays
whose shape the inputs cannot be broadcast to are left unwritten (numba.cuda raises a ValueError there,
which a kernel without ``debug=True`` also drops). Every other ufunc of NumPy is refused by name.
"""

from __future__ import annotations

#: This family's section title in docs/api.md (docs/generate_api.py).
API_TITLE = "NumPy ufuncs"

import numpy as np
from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

from numba_metal.compiler import arrays, msl
from numba_metal.compiler.declarations import registry as typing
from numba_metal.compiler.lowering import Value, registry as lowering
from numba_metal.compiler.operators import lower_binop, lower_unary
from numba_metal.errors import UnsupportedFeatureError

from . import functions as F
from .pymath import routine_value
from .ufunc_table import UFUNC, UFUNCS, Ufunc

# ---------------------------------------------------------------------------------------------
# Typing
# ---------------------------------------------------------------------------------------------


def _loop(ufunc, element_types):
    """NumPy's loop for these element types, as Numba chooses it (None if there is none)."""
    from numba.np.numpy_support import ufunc_find_matching_loop
    return ufunc_find_matching_loop(ufunc, element_types)


def _kind(loop) -> str:
    """The kind of a loop (ufunc_table.KINDS, or float16/complex): its first floating-point input type,
    else its first input type."""
    ctype = next((t for t in loop.inputs if isinstance(t, (types.Float, types.Complex))), loop.inputs[0])
    if isinstance(ctype, types.Boolean):
        return "bool"
    if isinstance(ctype, types.Integer):
        return "int" if ctype.signed else "uint"
    return str(ctype)


def error(ufunc, message: str):
    raise UnsupportedFeatureError(f"np.{ufunc.__name__}: {message}")


def _element(ufunc, ty):
    """The element type of an argument: a number or boolean, or an array of them (None otherwise)."""
    ty = types.unliteral(ty)
    if isinstance(ty, types.Optional):
        ty = ty.type
    dtype = ty.dtype if isinstance(ty, types.Array) else ty
    return dtype if isinstance(dtype, (types.Number, types.Boolean)) else None


def ufunc_signature(ufunc, row: Ufunc, args, kws):
    """The Numba signature of a call of ``ufunc`` (see the module docstring), or an error saying why not."""
    if kws:
        error(ufunc, f"keyword arguments ({', '.join(sorted(kws))}) are not supported in Metal kernels; pass "
                     f"the output array positionally, as numba.cuda requires: np.{ufunc.__name__}(x, out)")
    if not ufunc.nin <= len(args) <= ufunc.nargs:
        error(ufunc, f"takes {ufunc.nin} inputs and at most {ufunc.nout} output arrays, got {len(args)} arguments")
    inputs, outputs = args[:ufunc.nin], args[ufunc.nin:]
    elements = [_element(ufunc, t) for t in inputs]
    if None in elements:
        bad = next(t for t, e in zip(inputs, elements) if e is None)
        error(ufunc, f"an input of type {bad} is not supported; inputs are numbers, booleans or arrays of them")
    for out in outputs:
        if not isinstance(out, types.Array) or _element(ufunc, out) is None:
            error(ufunc, f"the output must be an array of numbers or booleans, not {out}")
        if not out.mutable:
            error(ufunc, "the output array is read-only (constant memory)")
    arrays_in = [t for t in inputs if isinstance(types.unliteral(t), types.Array)]
    if arrays_in and len(outputs) < ufunc.nout:
        error(ufunc, f"on arrays it would return a new array, which kernels cannot allocate; pass the output "
                     f"array{'s' if ufunc.nout > 1 else ''} as numba.cuda requires: np.{ufunc.__name__}(x, out)")
    loop = _loop(ufunc, elements)
    if loop is None:
        error(ufunc, f"NumPy has no loop for {', '.join(map(str, elements))}")
    kind = _kind(loop)
    if row.routine(kind) is None:
        error(ufunc, f"its {loop.ufunc_sig} loop ({kind}) is not supported in Metal kernels; the loops kernels "
                     "may use are listed in docs/supported-features.md")
    if outputs:
        ndim = outputs[0].ndim
        from numba.np.numpy_support import as_dtype
        for out, result in zip(outputs, loop.outputs):
            if out.ndim != ndim:
                error(ufunc, "its output arrays must have the same number of dimensions")
            if not np.can_cast(as_dtype(result), as_dtype(out.dtype), "same_kind"):
                error(ufunc, f"can't cast result to explicit result type ({result} to {out.dtype}, NumPy's "
                             "'same_kind' rule)")
        if any(t.ndim > ndim for t in arrays_in):
            error(ufunc, "an input has more dimensions than the output array")
        return signature(outputs[0] if len(outputs) == 1 else types.Tuple(outputs), *args)
    result = loop.outputs[0] if len(loop.outputs) == 1 else types.Tuple(loop.outputs)
    return signature(result, *args)


def _typing_template(ufunc, row: Ufunc):
    def generic(self, args, kws):
        return ufunc_signature(ufunc, row, args, kws)
    return type(f"Ufunc_{row.name}", (AbstractTemplate,), {"generic": generic, "key": ufunc})


def _refusal_template(ufunc):
    def generic(self, args, kws):
        error(ufunc, "this NumPy ufunc is not supported in Metal kernels; the ufuncs kernels may call are "
                     "listed in docs/supported-features.md")
    return type(f"Ufunc_{ufunc.__name__}_unsupported", (AbstractTemplate,), {"generic": generic, "key": ufunc})


# ---------------------------------------------------------------------------------------------
# One element: the row's routine on the loop's types
# ---------------------------------------------------------------------------------------------


def _compare(lc, op, a: Value, b: Value) -> str:
    return lower_binop(lc, op, signature(types.boolean, a.type, b.type), a, b).expr


def _isnan(lc, a: Value) -> str:
    row = F.MATH_BY_NAME["isnan"]
    kind = "float64" if lc.is_float64(a.type) else "float32"
    return routine_value(lc, row, row.routines[kind], str(a.type), signature(types.boolean, a.type), [a],
                         types.boolean).expr


def _parts(lc, z: Value) -> tuple[Value, Value]:
    """The real and imaginary parts of a complex value."""
    if z.type == types.complex64:
        return tuple(Value(msl.member(z.expr, p), types.float32) for p in msl.COMPLEX64_PARTS)
    z = Value(lc.tmp(z.type, z.expr), z.type)
    return (Value(lc.library_call("nm_c128_real", z.expr), types.float64),
            Value(lc.library_call("nm_c128_imag", z.expr), types.float64))


#: NumPy's order of complex numbers (numpy/_core/src/umath/loops.c.src's CGT, CGE...): by the real parts,
#: then, where they are equal, by the imaginary parts.
def _complex_order(lc, op, a: Value, b: Value) -> str:
    (ar, ai), (br, bi) = _parts(lc, a), _parts(lc, b)
    strict = op[0]
    return msl.binary("||", _compare(lc, strict, ar, br),
                      msl.binary("&&", _compare(lc, "==", ar, br), _compare(lc, op, ai, bi)))


def _complex_pick(lc, op, a: Value, b: Value, nan_of: int) -> str:
    """NumPy's complex maximum/minimum (``nan_of`` 0: a NaN in ``a`` wins) and fmax/fmin (1: a NaN in ``b``
    loses)."""
    a, b = (Value(lc.tmp(v.type, v.expr), v.type) for v in (a, b))
    nan = msl.binary("||", *(_isnan(lc, p) for p in _parts(lc, (a, b)[nan_of])))
    return msl.select(msl.binary("||", _complex_order(lc, op, a, b), nan), a.expr, b.expr)


def _log2_complex(lc, z: Value, t) -> str:
    """NumPy's complex log2: both parts of log(z) times log2(e) (so log2(0) is -inf + 0j)."""
    log = Value(lc.library_call("nm_c64_log" if t == types.complex64 else "nm_c128_log", z.expr), t)
    part = t.underlying_float
    log2e = lc.lower_constant(1.4426950408889634, part)
    scaled = [lower_binop(lc, "*", signature(part, part, part), p, log2e).expr for p in _parts(lc, log)]
    return lc.library_call("nm_c64_make" if t == types.complex64 else "nm_c128_make", *scaled)


def _math(lc, name: str, *args: Value) -> Value:
    """``math.<name>`` of real values (float32, or float64 as the kernel computes it): the math table's row."""
    row = F.MATH_BY_NAME[name]
    t = args[0].type
    kind = "float64" if lc.is_float64(t) else "float32"
    return routine_value(lc, row, row.routines[kind], str(t), signature(t, *(a.type for a in args)), list(args), t)


def _real_op(lc, op: str, a: Value, b: Value) -> Value:
    return lower_binop(lc, op, signature(a.type, a.type, a.type), a, b)


def _make(lc, t, re: Value, im: Value) -> str:
    return lc.library_call("nm_c64_make" if t == types.complex64 else "nm_c128_make", re.expr, im.expr)


def _complex_fn(lc, name: str, z: Value, t) -> Value:
    """The complex library's ``cmath.<name>`` of ``z``."""
    return Value(lc.library_call(("nm_c64_" if t == types.complex64 else "nm_c128_") + name, z.expr), t)


def _held(lc, v: Value) -> Value:
    return Value(lc.tmp(v.type, v.expr), v.type)


def _expm1_complex(lc, z: Value, t) -> str:
    """NumPy's complex expm1 (nc_expm1): expm1(x) cos(y) - 2 sin(y/2)^2 + i exp(x) sin(y)."""
    x, y = (_held(lc, p) for p in _parts(lc, z))
    part = t.underlying_float
    half, two = lc.lower_constant(0.5, part), lc.lower_constant(2.0, part)
    s = _held(lc, _math(lc, "sin", _real_op(lc, "*", y, half)))
    re = _real_op(lc, "-", _real_op(lc, "*", _math(lc, "expm1", x), _math(lc, "cos", y)),
                  _real_op(lc, "*", two, _real_op(lc, "*", s, s)))
    return _make(lc, t, re, _real_op(lc, "*", _math(lc, "exp", x), _math(lc, "sin", y)))


def _log1p_complex(lc, z: Value, t) -> str:
    """NumPy's complex log1p (nc_log1p): log(hypot(x + 1, y)) + i atan2(y, x + 1)."""
    x, y = (_held(lc, p) for p in _parts(lc, z))
    x1 = _held(lc, _real_op(lc, "+", x, lc.lower_constant(1.0, t.underlying_float)))
    return _make(lc, t, _math(lc, "log", _math(lc, "hypot", x1, y)), _math(lc, "atan2", y, x1))


def _exp2_complex(lc, z: Value, t) -> str:
    """NumPy's complex exp2 (nc_exp2): exp(z ln 2), both parts of z scaled."""
    ln2 = lc.lower_constant(0.6931471805599453, t.underlying_float)
    scaled = Value(_make(lc, t, *(_real_op(lc, "*", p, ln2) for p in _parts(lc, z))), t)
    return _complex_fn(lc, "exp", scaled, t).expr


def _sign_complex(lc, z: Value, t) -> str:
    """NumPy 2's complex sign: z / |z| (0 for 0, NaN parts for a NaN)."""
    z = _held(lc, z)
    magnitude = _held(lc, Value(lc.library_call("nm_c64_abs" if t == types.complex64 else "nm_c128_abs", z.expr),
                                t.underlying_float))
    zero = lc.lower_constant(0.0, t.underlying_float)
    parts = [_real_op(lc, "/", p, magnitude) for p in _parts(lc, z)]
    return msl.select(_compare(lc, "==", magnitude, zero), z.expr, _make(lc, t, *parts))


def _reciprocal_complex(lc, z: Value, t) -> str:
    """1 / z by NumPy's complex division."""
    one = lc.lower_constant(complex(1.0, 0.0), t)
    return lc.library_call("nm_c64_np_divide" if t == types.complex64 else "nm_c128_np_divide", one.expr, z.expr)


def _pick(lc, op, a: Value, b: Value, t) -> str:
    """NumPy's maximum (op ``>=``) or minimum (``<=``): ``a`` when it wins or is NaN, else ``b``."""
    condition = _compare(lc, op, a, b)
    if isinstance(t, types.Float):
        condition = msl.binary("||", condition, _isnan(lc, a))
    return msl.select(condition, a.expr, b.expr)


def _sign(lc, a: Value, t) -> str:
    zero, one = lc.lower_constant(0, t).expr, lc.lower_constant(1, t).expr
    minus = zero if isinstance(t, types.Integer) and not t.signed else lc.lower_constant(-1, t).expr
    z = Value(zero, t)
    inner = msl.select(_compare(lc, "==", a, z), zero, a.expr) if isinstance(t, types.Float) else zero
    return msl.select(_compare(lc, ">", a, z), one, msl.select(_compare(lc, "<", a, z), minus, inner))


def _fmod_int(lc, a: Value, b: Value, t) -> str:
    # C's % on integers (the sign of the dividend), 0 for a zero divisor (NumPy's result) and for -1 (where
    # the hardware's MIN % -1 is undefined).
    zero = lc.lower_constant(0, t).expr
    undefined = _compare(lc, "==", b, Value(zero, t))
    if t.signed:
        undefined = msl.binary("||", undefined, _compare(lc, "==", b, lc.lower_constant(-1, t)))
    return msl.select(undefined, zero, msl.cast(lc.msl_type(t), msl.binary("%", a.expr, b.expr)))


def _truth(lc, a: Value) -> str:
    return lc.truth(a)


#: The routines of source UFUNC: name -> (lc, arguments in the computation type t, t) -> MSL expression of t
#: (of bool for the logical functions).
_OWN = {
    "maximum": lambda lc, args, t: _pick(lc, ">=", *args, t),
    "minimum": lambda lc, args, t: _pick(lc, "<=", *args, t),
    "sign": lambda lc, args, t: _sign(lc, args[0], t),
    "abs_int": lambda lc, args, t: msl.select(_compare(lc, "<", args[0], lc.lower_constant(0, t)),
                                              lower_unary(lc, "-", signature(t, t), args[0]).expr, args[0].expr),
    "fmod_int": lambda lc, args, t: _fmod_int(lc, *args, t),
    "square": lambda lc, args, t: lower_binop(lc, "*", signature(t, t, t), args[0], args[0]).expr,
    "reciprocal": lambda lc, args, t: lower_binop(lc, "/", signature(t, t, t), lc.lower_constant(1, t), args[0]).expr,
    "logical_and": lambda lc, args, t: msl.binary("&&", *(_truth(lc, a) for a in args)),
    "logical_or": lambda lc, args, t: msl.binary("||", *(_truth(lc, a) for a in args)),
    "logical_xor": lambda lc, args, t: msl.binary("!=", *(_truth(lc, a) for a in args)),
    "logical_not": lambda lc, args, t: msl.unary("!", _truth(lc, args[0])),
    **{"complex" + op: (lambda op: lambda lc, args, t: _complex_order(lc, op, *args))(op)
       for op in ("<", "<=", ">", ">=")},
    "log2_complex": lambda lc, args, t: _log2_complex(lc, args[0], t),
    "exp2_complex": lambda lc, args, t: _exp2_complex(lc, args[0], t),
    "expm1_complex": lambda lc, args, t: _expm1_complex(lc, args[0], t),
    "log1p_complex": lambda lc, args, t: _log1p_complex(lc, args[0], t),
}
#: The routines for complex arguments where the name serves real ones too.
_OWN_COMPLEX = {
    "maximum": lambda lc, args, t: _complex_pick(lc, ">=", *args, 0),
    "minimum": lambda lc, args, t: _complex_pick(lc, "<=", *args, 0),
    "fmax": lambda lc, args, t: _complex_pick(lc, ">=", *args, 1),
    "fmin": lambda lc, args, t: _complex_pick(lc, "<=", *args, 1),
    "sign": lambda lc, args, t: _sign_complex(lc, args[0], t),
    "reciprocal": lambda lc, args, t: _reciprocal_complex(lc, args[0], t),
}

_LOGICAL = ("logical_and", "logical_or", "logical_xor", "logical_not")


def element_value(lc, row: Ufunc, loop, args: list[Value]) -> Value:
    """The ufunc of one element: ``args`` (scalars) converted to the loop's input types, the row's routine,
    the result in the loop's output type (a tuple for two outputs)."""
    ins, outs = list(loop.inputs), list(loop.outputs)
    args = [Value(lc.cast(a, t), t) for a, t in zip(args, ins)]
    kind = _kind(loop)
    routine = row.routine(kind)
    # float64 computed in float32 (a kernel without float64 data) takes the float32 routine, as math does;
    # float16 loops compute in float32 as NumPy's do.
    ctype = {"float16": "float32", "int": None, "uint": None, "bool": None}.get(kind, kind)
    if kind == "float64" and lc.op_kind(types.float64) == "float32":
        routine = row.routines.get("float32", routine)
    if ctype == "float32" and kind == "float16":
        args = [Value(lc.cast(a, types.float32), types.float32) if a.type == types.float16 else a for a in args]
        ins = [types.float32 if t == types.float16 else t for t in ins]
    rt = outs[0] if len(outs) == 1 else types.Tuple(outs)
    if routine.source == UFUNC:
        t = getattr(types, ctype) if ctype else ins[0]
        own = _OWN_COMPLEX if isinstance(t, types.Complex) and routine.name in _OWN_COMPLEX else _OWN
        expr = own[routine.name](lc, [Value(lc.cast(a, t), t) for a in args], t)
        made = types.boolean if routine.name in _LOGICAL or routine.name.startswith("complex") else t
        return Value(lc.cast(Value(expr, made), rt), rt)
    ctype = ctype or str(ins[0])
    if routine.source == F.TUPLE:
        args = [Value(lc.tmp(a.type, a.expr), a.type) for a in args]
        parts = [routine_value(lc, row, part, ctype, signature(t, *ins), args, t).expr
                 for part, t in zip(routine.parts, outs)]
        return Value(msl.aggregate(lc.msl_type(rt), parts), rt)
    return routine_value(lc, row, routine, ctype, signature(rt, *ins), args, rt)


# ---------------------------------------------------------------------------------------------
# Calls: scalars, and arrays element by element
# ---------------------------------------------------------------------------------------------


def _shape(lc, arr: Value) -> list[str]:
    n = arr.type.ndim
    if n == 0:
        return []
    tuple_type = types.UniTuple(types.intp, n)
    shape = lc.tmp(tuple_type, arrays.lower_array_attribute(lc, arr, "shape", tuple_type).expr)
    return [msl.cast(lc.msl_type(types.uint64), msl.member(shape, msl.tuple_field(k))) for k in range(n)]


def _index(lc, comps: list[str]) -> Value:
    """An index value of the components ``comps`` (uint64 expressions)."""
    if not comps:
        return Value(msl.TRUE, types.Tuple(()))
    if len(comps) == 1:
        return Value(comps[0], types.uint64)
    ty = types.UniTuple(types.uint64, len(comps))
    return Value(lc.tmp(ty, msl.aggregate(lc.msl_type(ty), comps)), ty)


def _elementwise(lc, ufunc, row: Ufunc, loop, inputs: list[Value], outputs: list[Value]) -> None:
    what = f"np.{ufunc.__name__}"
    u64 = types.uint64
    shape = _shape(lc, outputs[0])
    n = len(shape)
    one, zero = msl.literal(1, lc.msl_type(u64)), msl.literal(0, lc.msl_type(u64))
    # The inputs' shapes broadcast to the output's (NumPy's rule, axes aligned at the end); every output
    # has the output's shape.
    conditions = []
    in_shapes = {}
    for k, a in enumerate(inputs):
        if isinstance(types.unliteral(a.type), types.Array):
            s = in_shapes[k] = _shape(lc, a)
            conditions += [msl.binary("||", msl.binary("==", e, one), msl.binary("==", e, shape[d + n - len(s)]))
                           for d, e in enumerate(s)]
    for out in outputs[1:]:
        conditions += [msl.binary("==", e, f) for e, f in zip(_shape(lc, out), shape)]
    size = shape[0] if shape else one
    for e in shape[1:]:
        size = msl.binary("*", size, e)
    lc.emit(msl.if_(msl.all_of(conditions) if conditions else msl.TRUE))
    flat = lc.tmp(u64, zero)
    lc.emit(msl.LOOP)
    lc.emit(msl.if_statement(msl.binary(">=", flat, size), msl.BREAK))
    comps = [""] * n
    rest = flat
    for d in reversed(range(n)):
        comps[d] = lc.tmp(u64, msl.binary("%", rest, shape[d])) if d else rest
        if d:
            rest = lc.tmp(u64, msl.binary("/", rest, shape[d]))
    values = []
    for k, a in enumerate(inputs):
        if k not in in_shapes:
            values.append(a)
            continue
        s = in_shapes[k]
        mine = [msl.select(msl.binary("==", e, one), zero, comps[d + n - len(s)]) for d, e in enumerate(s)]
        values.append(arrays.load_element(lc, a, _index(lc, mine), what))
    result = element_value(lc, row, loop, values)
    index = _index(lc, comps)
    if len(outputs) == 1:
        arrays.store_element(lc, outputs[0], index, result, what)
    else:
        held = lc.tmp(result.type, result.expr)
        for k, (out, t) in enumerate(zip(outputs, result.type.types)):
            arrays.store_element(lc, out, index, Value(msl.member(held, msl.tuple_field(k)), t), what)
    lc.emit(msl.assign(flat, msl.binary("+", flat, one)))
    lc.emit(msl.END)
    lc.emit(msl.END)


def _lowering(ufunc, row: Ufunc):
    def lower(lc, sig, args):
        inputs, outputs = list(args[:ufunc.nin]), list(args[ufunc.nin:])
        loop = _loop(ufunc, [_element(ufunc, t) for t in sig.args[:ufunc.nin]])
        if not outputs:
            return element_value(lc, row, loop, inputs)
        _elementwise(lc, ufunc, row, loop, inputs, outputs)
        rt = sig.return_type
        if len(outputs) == 1:
            return Value(outputs[0].expr, rt)
        return Value(msl.aggregate(lc.msl_type(rt), [o.expr for o in outputs]), rt)

    lower.__name__ = f"lower_np_{row.name}"
    return lower


def _register() -> None:
    done = set()
    for row in UFUNCS:
        ufunc = getattr(np, row.name)
        typing.register_global(ufunc)(_typing_template(ufunc, row))
        lowering.call(ufunc)(_lowering(ufunc, row))
        done.add(ufunc)
    for name in dir(np):
        obj = getattr(np, name)
        if isinstance(obj, np.ufunc) and obj not in done:
            typing.register_global(obj)(_refusal_template(obj))
            done.add(obj)


_register()

__all__: list[str] = []
