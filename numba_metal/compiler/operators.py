"""Python operators with Numba's semantics, as tables: one row per operator, one implementation per kind
of type (tinygrad's ``code_for_op``).

Numba's typing picks a signature ``(A, B) -> R`` for each operation; as in Numba's own lowering the
operands are converted to ``R`` (for comparisons, to their common type; for ``**``, the exponent keeps
its type) and the row's implementation for ``R``'s kind is applied. The kinds are ``bool``, ``int``
(signed), ``uint``, ``float16``, ``float32`` and ``float64``; ``float64`` is IEEE binary64 in software
(an entry point of float64.metal per row); float64 that a kernel computes in float32 (it holds no float64
data, precision.py) takes float32's entries (``FunctionLowering.op_kind``).
"""

from __future__ import annotations

import operator

from numba.core import types

from . import kernel_io, msl
from .lowering import Value


#: The kinds of scalar types: the keys of the implementation tables.
KINDS = ("bool", "int", "uint", "float16", "float32", "float64", "complex64", "complex128")


def kind_of(ty) -> str | None:
    """The kind of a Numba scalar type: the key of the implementation tables."""
    ty = types.unliteral(ty)
    if isinstance(ty, types.Boolean):
        return "bool"
    if isinstance(ty, types.Integer):
        return "int" if ty.signed else "uint"
    if ty in (types.float16, types.float32, types.float64, types.complex64, types.complex128):
        return str(ty)
    return None


# ---------------------------------------------------------------------------------------------
# Implementations: each spells an operation on operands already converted to the operation's type
# ``t`` (MSL name ``name``).
# ---------------------------------------------------------------------------------------------


class Infix:
    """``(a op b)``: the operation in the type itself (floats)."""

    def __init__(self, op: str):
        self.op = op

    def binary(self, lc, name, a, b):
        return msl.binary(self.op, a, b)

    def unary(self, lc, name, a):
        return msl.unary(self.op, a)


class Truncating(Infix):
    """``T(a op b)``: MSL promotes narrow integers to int; the result is converted back."""

    def binary(self, lc, name, a, b):
        return msl.cast(name, msl.binary(self.op, a, b))

    def unary(self, lc, name, a):
        return msl.cast(name, msl.unary(self.op, a))


class Wrapping(Infix):
    """``T(U(a) op U(b))``: signed overflow is undefined in MSL, so wrap through the unsigned type."""

    def binary(self, lc, name, a, b):
        u = msl.UNSIGNED_OF[name]
        return msl.cast(name, msl.binary(self.op, msl.cast(u, a), msl.cast(u, b)))

    def unary(self, lc, name, a):  # -x == 0 - x
        u = msl.UNSIGNED_OF.get(name, name)
        return msl.cast(name, msl.binary(self.op, msl.cast(u, "0"), msl.cast(u, a)))


class Helper:
    """``helper(a, b)``: a prelude function with Python's semantics (its overload for the operands' MSL type
    is included: compiler/mslib/)."""

    def __init__(self, function: str):
        self.function = function

    def binary(self, lc, name, a, b):
        lc.need(self.function, name)
        return msl.call(self.function, a, b)


class Library(Helper):
    """``function(a, b)``: a function of MSL's standard library."""

    def binary(self, lc, name, a, b):
        return msl.call(self.function, a, b)


class Emulated:
    """``function(a, b)``: an entry point of the emulated float64 library (float64.metal)."""

    def __init__(self, function: str):
        self.function = function

    def binary(self, lc, name, a, b):
        return lc.library_call(self.function, a, b)

    def unary(self, lc, name, a):
        return lc.library_call(self.function, a)


class Same:
    """The operand itself (unary ``+``)."""

    def unary(self, lc, name, a):
        return a


def _arithmetic(op: str, emulated: str) -> dict:
    return {"int": Wrapping(op), "uint": Truncating(op), "float16": Infix(op), "float32": Infix(op),
            "float64": Emulated(emulated)}


def _floats(impl, emulated: str) -> dict:
    return {"float16": impl, "float32": impl, "float64": Emulated(emulated)}


def _integers(impl) -> dict:
    return {"int": impl, "uint": impl}


#: Binary operators (other than comparisons and ``**``): operator -> kind of the result -> implementation.
BINARY = {
    "+": {**_arithmetic("+", "nm_f64_add"), "complex64": Infix("+"), "complex128": Emulated("nm_c128_add")},
    "-": {**_arithmetic("-", "nm_f64_sub"), "complex64": Infix("-"), "complex128": Emulated("nm_c128_sub")},
    "*": {**_arithmetic("*", "nm_f64_mul"), "complex64": Emulated("nm_c64_mul"), "complex128": Emulated("nm_c128_mul")},
    "/": {**_floats(Infix("/"), "nm_f64_div"), "complex64": Emulated("nm_c64_div"),
          "complex128": Emulated("nm_c128_div")},
    "//": {**_integers(Helper("nm_floordiv")), **_floats(Helper("nm_floordiv"), "nm_f64_floordiv")},
    "%": {**_integers(Helper("nm_mod")), **_floats(Helper("nm_mod"), "nm_f64_pymod")},
    "<<": _integers(Helper("nm_shl")),
    ">>": _integers(Helper("nm_shr")),
    "&": {k: Truncating("&") for k in ("bool", "int", "uint")},
    "|": {k: Truncating("|") for k in ("bool", "int", "uint")},
    "^": {k: Truncating("^") for k in ("bool", "int", "uint")},
}

#: ``**``: kind of the result -> (implementation for an integer exponent, for a floating-point one).
#: Integer powers compute in the 64-bit type of their signedness (Numba's), then convert.
POWER = {
    "int": (Helper("nm_ipow"), None),
    "uint": (Helper("nm_ipow"), None),
    **{k: (Helper("nm_powi"), Library("pow")) for k in ("float16", "float32")},
    "float64": (Emulated("nm_f64_powi"), Emulated("nm_f64_pow")),
    # Numba types every complex power with a complex exponent; the library finds integer ones (CPython's).
    "complex64": (None, Emulated("nm_c64_pow")),
    "complex128": (None, Emulated("nm_c128_pow")),
}

COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")

#: Comparisons of float64 values: quiet (false with a NaN operand, ``!=`` true), ``-0.0 == 0.0``.
FLOAT64_COMPARISONS = {"<": "nm_f64_lt", "<=": "nm_f64_le", ">": "nm_f64_gt", ">=": "nm_f64_ge",
                       "==": "nm_f64_eq", "!=": "nm_f64_ne"}

#: Complex numbers compare only for equality: complex128's library functions; complex64's parts
#: (``all``/``any`` of MSL's elementwise comparison of float2).
COMPLEX128_COMPARISONS = {"==": "nm_c128_eq", "!=": "nm_c128_ne"}
COMPLEX64_COMPARISONS = {"==": "all", "!=": "any"}

#: Comparisons of a signed with an unsigned 64-bit value compare values (``-1 < 2**63`` is true), through
#: prelude helpers: operator -> (helper, swap the operands, negate the result).
MIXED_SIGN_COMPARISONS = {
    "<": ("nm_lt", False, False),
    ">": ("nm_lt", True, False),
    "<=": ("nm_lt", True, True),
    ">=": ("nm_lt", False, True),
    "==": ("nm_eq", False, False),
    "!=": ("nm_eq", False, True),
}

#: Unary operators (other than ``not``): operator -> kind -> implementation.
UNARY = {
    "-": {"int": Wrapping("-"), "uint": Wrapping("-"), **_floats(Infix("-"), "nm_f64_neg"),
          "complex64": Infix("-"), "complex128": Emulated("nm_c128_neg")},
    "+": {k: Same() for k in ("bool", "int", "uint", "float16", "float32", "float64", "complex64", "complex128")},
    "~": {"bool": Infix("!"), "int": Truncating("~"), "uint": Truncating("~")},
}


#: Numba's operator functions (plain and in-place) -> the table's operator symbols.
BINARY_SYMBOLS = {
    operator.add: "+", operator.iadd: "+", operator.sub: "-", operator.isub: "-",
    operator.mul: "*", operator.imul: "*", operator.truediv: "/", operator.itruediv: "/",
    operator.floordiv: "//", operator.ifloordiv: "//", operator.mod: "%", operator.imod: "%",
    operator.pow: "**", operator.ipow: "**", operator.lshift: "<<", operator.ilshift: "<<",
    operator.rshift: ">>", operator.irshift: ">>", operator.and_: "&", operator.iand: "&",
    operator.or_: "|", operator.ior: "|", operator.xor: "^", operator.ixor: "^",
    operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
    operator.ne: "!=",
}

UNARY_SYMBOLS = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not"}


# ---------------------------------------------------------------------------------------------
# Lowering
# ---------------------------------------------------------------------------------------------


def lower_binop(lc, op, sig, a: Value, b: Value) -> Value:
    if op in (operator.is_, operator.is_not):
        return _identity(lc, op, sig, a, b)
    if not isinstance(op, str):
        lc.error(f"the operator {getattr(op, '__name__', op)} is not supported in Metal kernels")
    at, bt = sig.args
    a = Value(lc.cast(a, at), types.unliteral(at))
    b = Value(lc.cast(b, bt), types.unliteral(bt))
    if op in COMPARISONS:
        return Value(_compare(lc, op, a, b), types.boolean)
    rt = types.unliteral(sig.return_type)
    kind = lc.op_kind(rt)
    if kind is None:
        lc.error(f"the operator {op} on {at} and {bt} is not supported in Metal kernels")
    if op == "**":
        return Value(_power(lc, a, b, rt, kind), rt)
    impl = BINARY.get(op, {}).get(kind)
    if impl is None:
        lc.error(f"the operator {op} is not defined for {rt}" if op in BINARY else
                 f"the operator {op} is not supported in Metal kernels")
    if op in ZERO_DIVISION and lc.debug:
        _check_zero_division(lc, op, kind, b)
    return Value(impl.binary(lc, lc.msl_type(rt), lc.cast(a, rt), lc.cast(b, rt)), rt)


def _identity(lc, op, sig, a: Value, b: Value) -> Value:
    """``a is b`` / ``a is not b`` as Numba's default: values of different types are never the same
    object; values of one immutable type (numbers, enum members: a member is the one object of its
    value) are when they are equal; Numba has no ``is`` for mutable values (arrays, records)."""
    at, bt = (types.unliteral(t) for t in sig.args)
    if at != bt:
        same = msl.literal(False, "bool")
    elif at.mutable:
        lc.error(f"`is` between two {at} values is not supported (Numba has no `is` for mutable values); "
                 "compare their contents or indices instead")
    else:
        same = _compare(lc, "==", Value(a.expr, at), Value(b.expr, bt))
    return Value(same if op is operator.is_ else msl.unary("!", same), types.boolean)


#: Under debug=True numba.cuda uses Python's error model: a zero divisor raises ZeroDivisionError with
#: Numba's message: operator -> kind of the result -> message (numba/cpython/numbers.py).
ZERO_DIVISION = {
    "/": {"float16": "division by zero", "float32": "division by zero", "float64": "division by zero",
          "complex64": "complex division by zero", "complex128": "complex division by zero"},
    "//": {"int": "integer division by zero", "uint": "integer division by zero",
           "float16": "division by zero", "float32": "division by zero", "float64": "division by zero"},
    "%": {"int": "integer modulo by zero", "uint": "integer modulo by zero",
          "float16": "modulo by zero", "float32": "modulo by zero", "float64": "modulo by zero"},
}


def _check_zero_division(lc, op: str, kind: str, divisor: Value) -> None:
    message = ZERO_DIVISION[op].get(kind)
    if message is not None:
        zero = lc.lower_constant(0, types.int64)
        kernel_io.raise_if(lc, _compare(lc, "==", divisor, zero), ZeroDivisionError, (message,))


def _power(lc, a: Value, b: Value, rt, kind) -> str:
    if kind not in POWER:
        lc.error(f"the operator ** is not supported for {rt} in Metal kernels")
    integer_exponent, float_exponent = POWER[kind]
    name = lc.msl_type(rt)
    if kind in ("int", "uint"):
        wide = types.int64 if kind == "int" else types.uint64
        result = integer_exponent.binary(lc, name, lc.cast(a, wide), msl.cast("long", b.expr))
        return result if wide == rt else msl.cast(name, result)
    if isinstance(b.type, types.Integer) and integer_exponent is not None:
        return integer_exponent.binary(lc, name, lc.cast(a, rt), msl.cast("long", b.expr))
    return float_exponent.binary(lc, name, lc.cast(a, rt), lc.cast(b, rt))


def _compare(lc, op: str, a: Value, b: Value) -> str:
    # Enum members compare as their values (a float64 value is an nm_f64 in an exact kernel).
    a, b = (Value(v.expr, v.type.dtype) if isinstance(v.type, types.EnumMember) else v for v in (a, b))
    at, bt = a.type, b.type
    if isinstance(at, types.Complex) or isinstance(bt, types.Complex):
        if op not in COMPLEX128_COMPARISONS:
            lc.error(f"complex numbers have no order: {op} is not defined for {at} and {bt}")
        if types.complex128 in (at, bt) or not (isinstance(at, types.Complex) and isinstance(bt, types.Complex)):
            common = types.complex128 if types.complex128 in (at, bt) or lc.is_float64(at) or lc.is_float64(bt) \
                else types.complex64
        else:
            common = types.complex64
        x, y = lc.cast(a, common), lc.cast(b, common)
        if common == types.complex128:
            return lc.library_call(COMPLEX128_COMPARISONS[op], x, y)
        return msl.call(COMPLEX64_COMPARISONS[op], msl.binary(op, x, y))
    if lc.is_float64(at) or lc.is_float64(bt):
        return lc.library_call(FLOAT64_COMPARISONS[op], lc.cast(a, types.float64), lc.cast(b, types.float64))
    if at != bt:
        if isinstance(at, types.Float) or isinstance(bt, types.Float):
            common = types.float32
            if types.float16 in (at, bt) and not {types.float32, types.float64} & {at, bt}:
                common = types.float16
            return msl.binary(op, lc.cast(a, common), lc.cast(b, common))
        if isinstance(at, types.Integer) and isinstance(bt, types.Integer) and at.signed != bt.signed:
            return _mixed_sign_compare(lc, op, a, b)
        if isinstance(at, (types.Integer, types.Boolean)) and isinstance(bt, (types.Integer, types.Boolean)):
            return msl.binary(op, lc.cast(a, types.int64), lc.cast(b, types.int64))
    if isinstance(at, types.BaseTuple):
        lc.error("comparing tuples is not supported in Metal kernels")
    return msl.binary(op, a.expr, b.expr)


def _mixed_sign_compare(lc, op, a: Value, b: Value) -> str:
    x = msl.cast("long" if a.type.signed else "ulong", a.expr)
    y = msl.cast("long" if b.type.signed else "ulong", b.expr)
    helper, swap, negate = MIXED_SIGN_COMPARISONS[op]
    lc.need(helper)
    result = msl.call(helper, *((y, x) if swap else (x, y)))
    return msl.unary("!", result) if negate else result


def lower_unary(lc, op, sig, a: Value) -> Value:
    (at,) = sig.args
    rt = types.unliteral(sig.return_type)
    a = Value(lc.cast(a, at), types.unliteral(at))
    if op == "not":
        return Value(msl.unary("!", lc.truth(a)), types.boolean)
    impl = UNARY.get(op, {}).get(lc.op_kind(rt))
    if impl is None:
        lc.error(f"{op} is not defined for {rt}" if op in UNARY else
                 f"the unary operator {op} is not supported in Metal kernels")
    return Value(impl.unary(lc, lc.msl_type(rt), lc.cast(a, rt)), rt)
