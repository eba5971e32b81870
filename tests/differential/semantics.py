"""Scalar semantics of the reference: what a numba-metal kernel value means, computed in Python.

The rules (docs/testing.md, "The oracle"):

- **Types** are Numba's: every operation asks Numba's CPU typing context for its signature and
  converts the operands to the signature's argument types, as Numba's lowering does.
- **Integers** wrap to their width. ``//`` and ``%`` floor; ``x // 0 == x % 0 == 0`` and
  ``MIN // -1 == MIN % -1 == 0`` (Numba's NumPy error model). ``**`` is Numba's ``int_power``.
  Shift counts are taken modulo the width of the result type (the MSL rule numba-metal documents).
- **Floats**: float64 does not exist on the device, so a float64-typed value is computed in
  float32 (contract 4). Values are kept as float32 numbers; a float64-typed value is a Python
  ``float`` holding a float32 value, float32 is ``np.float32``, float16 is ``np.float16``.
  ``+ - * /`` and ``sqrt`` are correctly rounded (computed in double and rounded once: double
  rounding is innocuous for these operations since 53 >= 2*24 + 2). Denormal float32 results are
  flushed to zero, as on Apple GPUs and the CPU reference device.
- **Transcendental functions** may differ from the correctly rounded result by K ulp (MSL's
  precise table, numba-metal's math library bounds). Their results are :class:`U` values: a float
  with an absolute error bound. Operations on ``U`` values propagate the bound to first order
  (plus one ulp for the device's own rounding). A comparison, truth test or float→int conversion
  whose outcome the bound leaves open raises :class:`Unstable`; the harness then does not compare
  that thread's outputs of that case (and counts it).
- Float→int conversion truncates, NaN gives 0; an out-of-range conversion raises
  :class:`Unspecified` (the generator clamps, so this means a generator bug).
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numba.core import types as T

from numba_metal.kernel_api.functions import MATH as MATH_TABLE

FLT_MAX = float(np.finfo(np.float32).max)
FLT_MIN = 2.0 ** -126
HALF_MAX = 65504.0


class Unstable(Exception):
    """An outcome the reference cannot decide: an uncertain float decides control flow or a
    conversion. The thread's outputs of the current case are not compared."""


class Unspecified(Exception):
    """An operation whose result numba-metal leaves unspecified (out-of-range float→int, huge
    integer exponents): the generator must not produce it."""


class GeneratorError(Exception):
    """The generated program broke a rule the generator promises (e.g. an out-of-bounds index)."""


# ---------------------------------------------------------------------------------------------
# Types of values
# ---------------------------------------------------------------------------------------------

NB_OF_NP = {
    np.bool_: T.boolean, np.int8: T.int8, np.int16: T.int16, np.int32: T.int32, np.int64: T.int64,
    np.uint8: T.uint8, np.uint16: T.uint16, np.uint32: T.uint32, np.uint64: T.uint64,
    np.float16: T.float16, np.float32: T.float32,
}
NP_OF_NB = {v: k for k, v in NB_OF_NP.items()}
_NBT = dict(NB_OF_NP)
_NBT.update({bool: T.boolean, int: T.int64, float: T.float64})


class U:
    """An uncertain float: value ``v`` (a float32 number) with absolute error bound ``e`` (> 0)."""

    __slots__ = ("v", "e", "t")

    def __init__(self, v: float, e: float, t):
        self.v = v
        self.e = e
        self.t = t

    def __repr__(self):
        return f"U({self.v!r} ± {self.e:.3g}, {self.t})"

    def __bool__(self):
        if abs(self.v) > self.e:
            return True
        raise Unstable(f"truth value of {self!r}")

    def __index__(self):  # pragma: no cover - generated code never indexes with a float
        raise GeneratorError("a float used as an index")


def nbt(x):
    """The Numba type of a reference value."""
    t = _NBT.get(type(x))
    if t is not None:
        return t
    if type(x) is U:
        return x.t
    if type(x) is tuple:
        return T.BaseTuple.from_types(tuple(nbt(i) for i in x))
    if isinstance(x, np.ndarray):
        return T.Array(NB_OF_NP[x.dtype.type], x.ndim, "C")
    raise GeneratorError(f"no Numba type for reference value {x!r} ({type(x).__name__})")


def fval(x) -> float:
    """The float value of a float (or U) reference value (a Python float literal is a double:
    its value on the device is its float32 rounding)."""
    t = type(x)
    if t is U:
        return x.v
    if t is float:
        return f32r(x)
    return float(x)


def ferr(x) -> float:
    return x.e if type(x) is U else 0.0


# ---------------------------------------------------------------------------------------------
# Numba's typing (CPU target), cached
# ---------------------------------------------------------------------------------------------

_ctx = None
_sig_cache: dict = {}


def typing_context():
    """Numba's typing (its CPU target's registries), plus the math functions of numba-metal's math table
    that Numba does not type (math.cbrt), with the table's signatures, and numba-metal's float16 typing."""
    global _ctx
    if _ctx is None:
        from numba.core.typing.context import Context
        from numba.core.typing.templates import Registry

        from numba_metal.kernel_api import fp16, functions, pymath
        ctx = Context()
        ctx.refresh()
        missing = Registry()
        for fn, template in fp16.TEMPLATES:  # float16 arithmetic stays float16 (numba.cuda's typing)
            # Before Numba's own templates, as in numba-metal's typing (there for target 'metal').
            missing.register_global(fn)(type(template.__name__, (template,), {"metadata": {"target": "cpu"}}))
        for f in functions.MATH:
            fn = getattr(math, f.name)
            try:
                ctx.resolve_value_type(fn)
            except Exception:  # noqa: BLE001 - Numba does not know this function
                missing.register_global(fn)(pymath.typing_template(f))
        ctx.install_registry(missing)
        _ctx = ctx
    return _ctx


def resolve(fn, argtypes):
    """Numba's signature for ``fn(*argtypes)``, or None when Numba cannot type it."""
    key = (fn, argtypes)
    try:
        return _sig_cache[key]
    except KeyError:
        pass
    sig = None
    try:
        sig = typing_context().resolve_function_type(fn, argtypes, {})
    except Exception:  # noqa: BLE001 - any typing failure means "not typeable"
        sig = None
    _sig_cache[key] = sig
    return sig


def unify(*tys):
    return typing_context().unify_types(*tys)


OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "<<": operator.lshift,
    ">>": operator.rshift, "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
    "!=": operator.ne,
}
CMP_OPS = {"<", "<=", ">", ">=", "==", "!="}
UNARY = {"-": operator.neg, "+": operator.pos, "~": operator.invert, "not": operator.not_}


def binop_sig(op, ta, tb):
    return resolve(OPS[op], (ta, tb))


# ---------------------------------------------------------------------------------------------
# Number formats
# ---------------------------------------------------------------------------------------------


_F32_OVERFLOW = 2.0 ** 128 - 2.0 ** 103  # halfway between FLT_MAX and 2**128: rounds to inf


def f32r(x: float) -> float:
    """Round a double to float32 (flushing float32 denormals to signed zero)."""
    if not -_F32_OVERFLOW < x < _F32_OVERFLOW:
        return x if x != x else math.copysign(math.inf, x)
    r = float(np.float32(x))
    if r != 0.0 and -FLT_MIN < r < FLT_MIN:
        return math.copysign(0.0, r)
    return r


def f16r(x: float) -> float:
    return float(np.float16(x))


def ulp32(x: float) -> float:
    """The float32 ulp at |x| (normal binades; 2**-149 below)."""
    ax = abs(x)
    if ax < FLT_MIN or not math.isfinite(ax):
        return 2.0 ** -149 if ax < FLT_MIN else 2.0 ** 104
    _, e = math.frexp(ax)
    return 2.0 ** (e - 24)


def ulp16(x: float) -> float:
    ax = abs(x)
    if ax < 2.0 ** -14:
        return 2.0 ** -24
    if not math.isfinite(ax):
        return 2.0 ** 5
    _, e = math.frexp(ax)
    return 2.0 ** (e - 11)


def round_int_bits(n: int, p: int) -> int:
    """Integer ``n`` rounded to ``p`` significant bits, ties to even."""
    if n == 0:
        return 0
    s = -1 if n < 0 else 1
    m = -n if n < 0 else n
    b = m.bit_length()
    if b <= p:
        return n
    shift = b - p
    q, r = divmod(m, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return s * (q << shift)


def int_to_f32(n: int) -> float:
    if -(1 << 53) < n < (1 << 53):
        return f32r(float(n))
    r = round_int_bits(n, 24)
    if abs(r) > FLT_MAX:
        return math.copysign(math.inf, r)
    return float(r)


def int_to_f16(n: int) -> float:
    r = round_int_bits(n, 11)
    if abs(r) > HALF_MAX:
        return math.copysign(math.inf, r)
    return float(r)


def wrap(n: int, ty) -> int:
    bits = ty.bitwidth
    n &= (1 << bits) - 1
    if ty.signed and n >> (bits - 1):
        n -= 1 << bits
    return n


def int_range(ty):
    if ty.signed:
        return -(1 << (ty.bitwidth - 1)), (1 << (ty.bitwidth - 1)) - 1
    return 0, (1 << ty.bitwidth) - 1


# ---------------------------------------------------------------------------------------------
# Values and conversions
# ---------------------------------------------------------------------------------------------


def make(value, ty):
    """A reference value of Numba type ``ty`` from a Python number already in range."""
    if isinstance(ty, T.Boolean):
        return np.bool_(value)
    if isinstance(ty, T.Integer):
        return NP_OF_NB[ty](value)
    if ty == T.float64:
        return float(value)
    if ty == T.float32:
        return np.float32(value)
    if ty == T.float16:
        return np.float16(value)
    raise GeneratorError(f"cannot make a {ty}")


def truth(x) -> bool:
    if type(x) is U:
        return bool(x)
    return bool(x)


def to_int(x) -> int:
    """The Python int value of an integer or boolean reference value."""
    return int(x)


def float_to_int(v: float, e: float, ty, how=math.trunc) -> int:
    """Float → integer type ``ty`` (truncating unless ``how`` says otherwise); NaN gives 0."""
    if v != v:
        if e:
            raise Unstable("NaN with an error bound converted to an integer")
        return 0
    if math.isinf(v):
        raise Unspecified(f"float→{ty} conversion of {v}")
    lo, hi = int_range(ty)
    r = how(v)
    if e:
        if how(v - e) != r or how(v + e) != r:
            raise Unstable(f"float→int conversion of {v} ± {e}")
    if not lo <= r <= hi:
        raise Unspecified(f"float→{ty} conversion of {v} is out of range")
    return r


def cast(x, to):
    """Numba's conversion of reference value ``x`` to type ``to`` (float64 computed as float32)."""
    frm = nbt(x)
    if frm == to:
        if type(x) is float:
            return f32r(x)  # a float64-typed value is a float32 number on the device
        return x
    if isinstance(to, T.Boolean):
        return np.bool_(truth(x))
    if isinstance(to, T.Integer):
        if isinstance(frm, T.Float):
            return NP_OF_NB[to](float_to_int(fval(x), ferr(x), to))
        return NP_OF_NB[to](wrap(int(x), to))
    if isinstance(to, T.Float):
        if type(x) is U:
            if to == T.float16:
                v = f16r(x.v)
                return U(v, x.e + ulp16(v), to)
            return U(x.v, x.e, to)
        if isinstance(frm, T.Float):
            v = fval(x)
            if to == T.float16:
                v = f16r(v)
        elif isinstance(frm, (T.Integer, T.Boolean)):
            v = int_to_f16(int(x)) if to == T.float16 else int_to_f32(int(x))
        else:
            raise GeneratorError(f"cannot convert {frm} to {to}")
        return make(v, to)
    if isinstance(to, T.BaseTuple) and type(x) is tuple and len(x) == len(to):
        return tuple(cast(i, t) for i, t in zip(x, to.types))
    raise GeneratorError(f"cannot convert {frm} to {to}")


# ---------------------------------------------------------------------------------------------
# Float arithmetic in float32
# ---------------------------------------------------------------------------------------------


def fdiv(a: float, b: float) -> float:
    if b == 0.0:
        if a != a or a == 0.0:
            return math.nan
        neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
        return -math.inf if neg else math.inf
    return f32r(a / b)


def fmod(a: float, b: float) -> float:
    if a != a or b != b or math.isinf(a) or b == 0.0:
        return math.nan
    if math.isinf(b):
        return a
    return f32r(math.fmod(a, b))


def float_floordiv_mod(vx: float, wx: float):
    """CPython's float_divmod, every step rounded to float32 (numba-metal's contract)."""
    if wx == 0.0:
        return fdiv(vx, wx), math.nan
    mod = fmod(vx, wx)
    div = fdiv(f32r(vx - mod), wx)
    if mod:
        if (wx < 0) != (mod < 0):
            mod = f32r(mod + wx)
            div = f32r(div - 1.0)
    else:
        mod = math.copysign(0.0, wx)
    if div:
        floordiv = float(math.floor(div)) if math.isfinite(div) else div
        if f32r(div - floordiv) > 0.5:
            floordiv = f32r(floordiv + 1.0)
    else:
        floordiv = math.copysign(0.0, fdiv(vx, wx))
    return floordiv, mod


def float_int_power(a: float, b: int) -> float:
    """Numba's ``int_power`` for a float base: repeated squaring in float32; 1/r for b < 0."""
    exp = -b if b < 0 else b
    if exp > 0x10000:
        return f32r(_pow64(a, int_to_f32(b)))
    r = 1.0
    x = a
    while exp:
        if exp & 1:
            r = f32r(r * x)
        exp >>= 1
        x = f32r(x * x)
    if b < 0:
        return fdiv(1.0, r)
    return r


def int_power(a: int, b: int, rt) -> int:
    """Numba's ``int_power`` for integers (NumPy error model), in type ``rt``."""
    if b < 0:
        if a == 0:
            return wrap(-1 << (rt.bitwidth - 1), rt)
        if a != 1 and a != -1:
            return 0
        return a if (-b) & 1 else 1
    if b > 0x10000 and a not in (0, 1, -1):
        raise Unspecified(f"integer power with exponent {b}")
    if a in (0, 1):
        return a if b else 1
    if a == -1:
        return -1 if b & 1 else 1
    return wrap(pow(a, b, 1 << rt.bitwidth), rt)


def _pow64(a: float, b: float) -> float:
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(a), np.float64(b)))


# ---------------------------------------------------------------------------------------------
# Binary operators
# ---------------------------------------------------------------------------------------------


def _int_op(op, x: int, y: int, rt) -> int:
    if op == "+":
        r = x + y
    elif op == "-":
        r = x - y
    elif op == "*":
        r = x * y
    elif op == "//":
        if y == 0:
            return 0
        if rt.signed and y == -1 and x == -(1 << (rt.bitwidth - 1)):
            return 0
        r = x // y
    elif op == "%":
        if y == 0:
            return 0
        r = x % y
    elif op == "&":
        r = x & y
    elif op == "|":
        r = x | y
    elif op == "^":
        r = x ^ y
    elif op == "<<":
        r = x << (y & (rt.bitwidth - 1))
    elif op == ">>":
        r = x >> (y & (rt.bitwidth - 1))
    elif op == "**":
        return int_power(x, y, rt)
    else:
        raise GeneratorError(f"integer operator {op}")
    return wrap(r, rt)


def _float_op(op, x: float, y: float, bt) -> float:
    if op == "+":
        return f32r(x + y)
    if op == "-":
        return f32r(x - y)
    if op == "*":
        return f32r(x * y)
    if op == "/":
        return fdiv(x, y)
    if op == "//":
        return float_floordiv_mod(x, y)[0]
    if op == "%":
        return float_floordiv_mod(x, y)[1]
    raise GeneratorError(f"float operator {op}")


def _compare(op, x, y) -> bool:
    if op == "<":
        return x < y
    if op == "<=":
        return x <= y
    if op == ">":
        return x > y
    if op == ">=":
        return x >= y
    if op == "==":
        return x == y
    return x != y


_bin_cache: dict = {}


def _bin_plan(op, ta, tb):
    key = (op, ta, tb)
    plan = _bin_cache.get(key)
    if plan is None:
        sig = binop_sig(op, ta, tb)
        if sig is None:
            raise GeneratorError(f"Numba cannot type {ta} {op} {tb}")
        at, bt = (T.unliteral(t) for t in sig.args)
        rt = T.unliteral(sig.return_type)
        if op in CMP_OPS:
            kind = "cmp"
        elif isinstance(rt, T.Boolean):
            kind = "bool"
        elif isinstance(rt, T.Integer):
            kind = "int"
        elif isinstance(rt, T.Float):
            if op == "**":
                kind = "fpowi" if isinstance(bt, T.Integer) else "fpow"
            else:
                kind = "float"
        else:
            raise GeneratorError(f"{ta} {op} {tb} -> {rt}")
        plan = (at, bt, rt, kind)
        _bin_cache[key] = plan
    return plan


def binop(op, a, b):
    at, bt, rt, kind = _bin_plan(op, nbt(a), nbt(b))
    if type(a) is U or type(b) is U:
        return _ubinop(op, a, b, at, bt, rt, kind)
    x = cast(a, at)
    y = cast(b, bt)
    if kind == "cmp":
        if isinstance(at, T.Float) or isinstance(bt, T.Float):
            return np.bool_(_compare(op, float(x), float(y)))
        return np.bool_(_compare(op, int(x), int(y)))
    if kind == "int":
        if op == "**":
            return NP_OF_NB[rt](int_power(int(cast(x, rt)), int(y), rt))
        return NP_OF_NB[rt](_int_op(op, int(cast(x, rt)), int(cast(y, rt)), rt))
    if kind == "bool":
        xb, yb = bool(x), bool(y)
        r = {"&": xb and yb, "|": xb or yb, "^": xb != yb}.get(op)
        if r is None:
            raise GeneratorError(f"bool operator {op}")
        return np.bool_(r)
    xf = float(cast(x, rt))
    if kind == "fpowi":
        return make(float_int_power(xf, int(y)), rt)
    if kind == "fpow":
        return transcendental_value("pow", _pow64, (xf, float(cast(y, rt))), rt)
    return make(_float_op(op, xf, float(cast(y, rt)), bt), rt)


# -- uncertain operands ---------------------------------------------------------------------


def _finite_or_unstable(v: float, e: float, what: str) -> None:
    if not math.isfinite(v) or not math.isfinite(e):
        raise Unstable(f"{what}: non-finite result {v} with an error bound")


def _uval(v: float, e: float, rt):
    """A U result of type rt: error e plus one ulp for the device's own rounding."""
    _finite_or_unstable(v, e, "operation")
    e = e + ulp32(abs(v) + e)
    if abs(v) + e > FLT_MAX:
        raise Unstable("result may overflow")
    return U(v, e, rt)


def _ubinop(op, a, b, at, bt, rt, kind):
    if kind in ("int", "bool"):
        raise GeneratorError(f"uncertain float in integer operation {op}")
    # Operands as floats of the operation's type.
    if type(a) is U:
        xa, ea = a.v, a.e
    else:
        xa, ea = float(cast(cast(a, at), rt if kind != "cmp" else at)), 0.0
    if type(b) is U:
        xb, eb = b.v, b.e
    else:
        xb, eb = float(cast(cast(b, bt), rt if kind != "cmp" else bt)), 0.0
    if kind == "cmp":
        if xa != xa or xb != xb:
            raise Unstable("comparison with an uncertain NaN")
        if abs(xa - xb) <= ea + eb:
            raise Unstable(f"comparison {xa} {op} {xb} within error {ea + eb}")
        return np.bool_(_compare(op, xa, xb))
    if kind == "fpowi":
        n = int(cast(b, bt))
        v = float_int_power(xa, n)
        lo, hi = float_int_power(f32r(xa - ea), n), float_int_power(f32r(xa + ea), n)
        e = 2.0 * max(abs(lo - v), abs(hi - v)) + abs(n) * ulp32(v)
        return _uval(v, e, rt)
    if kind == "fpow":
        v = f32r(_pow64(xa, xb))
        corners = [f32r(_pow64(p, q)) for p in (xa - ea, xa + ea) for q in (xb - eb, xb + eb)]
        e = 2.0 * max(abs(c - v) for c in corners) + (FUNCTION_ULPS["pow"] + 1) * ulp32(v)
        return _uval(v, e, rt)
    if op == "+":
        return _uval(f32r(xa + xb), ea + eb, rt)
    if op == "-":
        return _uval(f32r(xa - xb), ea + eb, rt)
    if op == "*":
        return _uval(f32r(xa * xb), abs(xa) * eb + abs(xb) * ea + ea * eb, rt)
    if op == "/":
        if abs(xb) <= eb:
            raise Unstable("division by an uncertain value near zero")
        v = fdiv(xa, xb)
        return _uval(v, (ea + abs(xa / xb) * eb) / (abs(xb) - eb), rt)
    if op in ("//", "%"):
        if abs(xb) <= eb or xb == 0.0:
            raise Unstable("floor division by an uncertain value near zero")
        q = [(xa + sa * ea) / (xb + sb * eb) for sa in (-1, 1) for sb in (-1, 1)]
        if not all(math.isfinite(t) for t in q) or len({math.floor(t) for t in q}) != 1:
            raise Unstable("floor division of uncertain values")
        fd, md = float_floordiv_mod(xa, xb)
        if op == "//":
            return make(fd, rt) if fd == fd else U(fd, 0.0, rt)
        return _uval(md, ea + abs(fd) * eb, rt)
    raise GeneratorError(f"operator {op} on uncertain floats")


# ---------------------------------------------------------------------------------------------
# Unary operators
# ---------------------------------------------------------------------------------------------

_un_cache: dict = {}


def unop(op, a):
    ta = nbt(a)
    key = (op, ta)
    plan = _un_cache.get(key)
    if plan is None:
        sig = resolve(UNARY[op], (ta,))
        if sig is None:
            raise GeneratorError(f"Numba cannot type {op}{ta}")
        plan = (T.unliteral(sig.args[0]), T.unliteral(sig.return_type))
        _un_cache[key] = plan
    at, rt = plan
    if op == "not":
        return np.bool_(not truth(a))
    x = cast(cast(a, at), rt)
    if isinstance(rt, T.Float):
        if type(x) is U:
            if op == "-":
                return U(-x.v, x.e, rt)
            return x
        if op == "-":
            return make(-float(x), rt)
        return x
    if isinstance(rt, T.Boolean):
        if op == "~":
            return np.bool_(not bool(x))
        return x
    n = int(x)
    if op == "-":
        return NP_OF_NB[rt](wrap(-n, rt))
    if op == "~":
        return NP_OF_NB[rt](wrap(~n, rt))
    return x


def cmp_chain(first, *rest):
    """``a < b < c``: rest alternates operator strings and thunks; each operand evaluated once."""
    left = first
    for i in range(0, len(rest), 2):
        op, thunk = rest[i], rest[i + 1]
        right = thunk()
        r = binop(op, left, right)
        if not r:
            return r
        left = right
    return r


# ---------------------------------------------------------------------------------------------
# Transcendental functions
# ---------------------------------------------------------------------------------------------

#: Allowed error of the device's result in float32 ulps, from numba-metal's math table: MSL's precise
#: table (Table 8.1) for Metal's functions, numba-metal's math-library targets for its own. (Functions
#: accurate to half an ulp or better are computed exactly by the reference.)
FUNCTION_ULPS = {f.name: f.accuracy.ulps for f in MATH_TABLE if f.accuracy.ulps > 0.5}
#: Absolute error allowed on top (lgamma near its zeros at 1 and 2 is judged absolutely).
FUNCTION_ABS = {f.name: f.accuracy.absolute for f in MATH_TABLE if f.accuracy.absolute}


def _math64(name):
    fn = getattr(math, name)

    def call(*args):
        try:
            return fn(*args)
        except OverflowError:
            return math.inf
        except ValueError:
            if name in ("log", "log2", "log10") and args[0] == 0.0:
                return -math.inf
            if name == "gamma" and args[0] == 0.0:
                return math.copysign(math.inf, args[0])
            if name == "lgamma":
                return math.inf
            if name == "atanh" and abs(args[0]) == 1.0:
                return math.copysign(math.inf, args[0])
            return math.nan
    return call


_MATH64 = {name: _math64(name) for name in FUNCTION_ULPS if name != "pow"}
_MATH64["pow"] = _pow64

#: Functions whose derivative magnitude is at most 1 (error propagates at most 1:1).
_LIPSCHITZ1 = {"sin", "cos", "atan", "tanh", "erf", "asinh"}


def transcendental_value(name, fn64, args, rt):
    """f(args) for exact float32 args: the correctly rounded value, as a U with K ulp of error.
    Non-finite results (poles, overflow, NaN) are exact special values."""
    v = f32r(fn64(*args))
    if not math.isfinite(v):
        return make(v, rt)
    e = (FUNCTION_ULPS[name] + 1) * ulp32(v) + FUNCTION_ABS.get(name, 0.0)
    if abs(v) + e > FLT_MAX:
        raise Unstable(f"{name}{args} is near overflow")
    if v == 0.0 and name in ("sin", "tan", "asin", "atan", "sinh", "tanh", "asinh", "atanh",
                             "erf", "expm1", "log1p") and all(a == 0.0 for a in args):
        return make(v, rt)  # f(±0) = ±0 exactly
    return U(v, e, rt)


def apply_math(name, fargs, errs, rt):
    """A math function of float32 values ``fargs`` with error bounds ``errs``."""
    fn64 = _MATH64[name]
    if not any(errs):
        return transcendental_value(name, fn64, tuple(fargs), rt)
    v = f32r(fn64(*fargs))
    _finite_or_unstable(v, 0.0, name)
    if len(fargs) == 1 and name in _LIPSCHITZ1:
        prop = errs[0]
    else:
        # First order: the function's change over the corners of the error box, doubled.
        corners = [[]]
        for x, e in zip(fargs, errs):
            corners = [c + [p] for c in corners for p in ((x - e, x, x + e) if e else (x,))]
        prop = 0.0
        for c in corners:
            w = fn64(*c)
            if not math.isfinite(w):
                raise Unstable(f"{name} near a pole or domain edge")
            prop = max(prop, abs(w - v))
        prop *= 2.0
    e = prop + (FUNCTION_ULPS[name] + 1) * ulp32(v) + FUNCTION_ABS.get(name, 0.0)
    return _uval(v, e, rt)
