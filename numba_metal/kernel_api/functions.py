"""Tables of the elementwise functions kernels call, one row per function: Python's ``math`` module
(a family of ``metal.<name>`` functions is a table of the same rows, registered by ``pymath.register``).

A row says everything about one function: its Python name, the Numba signatures it is typed with (its
types and arity), the routine that computes it for each computation type, and the accuracy that
routine guarantees. The kernel API's typing and lowering (``pymath.py``), ``metal.math_functions()``
(the advisor's list of math functions), the differential test's vocabulary, the tests of every function
and the lists in docs/supported-features.md and docs/math-accuracy.md are derived from these rows (tests
fail when they disagree), so supporting a function is adding a row.

The *computation type* of a call is the first floating-point argument type of its signature, else its
result type if that is floating-point, else its first argument type: ``sin(int64) -> float64`` computes
in float64, ``floor(float32) -> int64`` in float32, ``floor(int64)`` in int64. Arguments are converted
to the routine's parameter types (the computation type unless the routine says otherwise), and its
result to the signature's result type. The float64 routines are entry points of the emulated float64
library (float64.metal, float64_math.metal); a kernel that holds no float64 data computes float64 in
float32 (compiler/precision.py) and uses the float32 routine.

This module imports nothing else (``metal.math_functions()`` reads it without Numba).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------
# Row types
# ---------------------------------------------------------------------------------------------

#: Where a routine comes from.
METAL = "metal"        # MSL's standard library (namespace metal::), which the CPU device's shim declares
PRELUDE = "prelude"    # a numba-metal prelude helper (compiler/mslib/prelude.metal)
MATHLIB = "mathlib"    # numba-metal's math library (compiler/mslib/mathlib.metal)
OPERATOR = "operator"  # the Python operator `name`, as the compiler's operator table lowers it
CONSTANT = "constant"  # the constant `value` whatever the argument (isnan of an integer)
EMULATED = "emulated"  # an entry point of the emulated float64 libraries (rows of compiler/float64_ops.py,
                       # compiler/float64_math_ops.py)
SAME = "same"          # the argument itself (floor of an integer)
TUPLE = "tuple"        # a tuple of the values of the routines `parts`, on the same arguments
REFUSED = "refused"    # no routine: a compile-time error saying `name` (why)


@dataclass(frozen=True)
class Routine:
    """How a function is computed for one computation type."""

    source: str                          # METAL, PRELUDE, MATHLIB, OPERATOR, CONSTANT or SAME
    name: str = ""                       # the MSL function, operator or constant
    params: tuple[str, ...] | None = None  # parameter types when not all the computation type
    result: str | None = None            # result type when not the computation type
    value: object = None                 # CONSTANT: the Python value
    extra: tuple[int, ...] = ()          # constant int arguments passed after the call's own
    via: str | None = None               # a type the result is converted to before the signature's result
    parts: tuple["Routine", ...] = ()    # TUPLE: one routine per member of the tuple result
    member: str = ""                     # the member of the routine's (struct) result that is the value


@dataclass(frozen=True)
class Accuracy:
    """The largest error a routine guarantees, in units in the last place of the result type (plus an
    absolute error where the function is judged absolutely, near its zeros), and where that bound comes
    from."""

    ulps: float
    source: str
    absolute: float = 0.0


EXACT = Accuracy(0.0, "exact")
CORRECTLY_ROUNDED = Accuracy(0.5, "correctly rounded")


def msl_bound(ulps: float) -> Accuracy:
    """MSL's bound for its precise functions (Metal Shading Language specification, Table 8.1)."""
    return Accuracy(ulps, "MSL Table 8.1")


def mathlib_bound(ulps: float, absolute: float = 0.0) -> Accuracy:
    """numba-metal's math library's target (docs/math-accuracy.md)."""
    return Accuracy(ulps, "docs/math-accuracy.md", absolute)


@dataclass(frozen=True)
class Function:
    """One function kernels may call."""

    name: str                                # the Python name (math.<name>)
    signatures: tuple[str, ...]              # the Numba signatures it is typed with
    routines: dict[str, Routine] = field(hash=False)  # computation type -> routine
    accuracy: Accuracy
    #: Trailing parameters passed by keyword only, with their defaults (math.isclose's rel_tol, abs_tol).
    keywords: tuple[tuple[str, float], ...] = ()

    @property
    def arity(self) -> int:
        return len(argument_types(self.signatures[0]))

    def result_for(self, argument_type: str) -> str | None:
        """The result type of its signature whose first argument is ``argument_type``, if any."""
        for s in self.signatures:
            if argument_types(s)[0] == argument_type:
                return result_type(s)
        return None


def _split(signature: str) -> tuple[str, str]:
    """The result and the argument list of a signature; a result may be a tuple ``Tuple(a, b)``."""
    depth = 0
    for i in range(len(signature) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(signature[i], 0)
        if depth == 0:
            return signature[:i].strip(), signature[i + 1:-1]
    raise ValueError(f"not a signature: {signature!r}")


def argument_types(signature: str) -> tuple[str, ...]:
    """The argument type names of a signature such as ``"float32(float32, intc)"``."""
    return tuple(a.strip() for a in _split(signature)[1].split(",") if a.strip())


def result_type(signature: str) -> str:
    """The result type name: a type, or ``Tuple(a, b)`` for numba.cuda's tuple results."""
    return _split(signature)[0]


def tuple_members(type_name: str) -> tuple[str, ...] | None:
    """The member types of a ``Tuple(a, b)`` type name, None for other types."""
    if not type_name.startswith("Tuple("):
        return None
    return tuple(t.strip() for t in type_name[len("Tuple("):-1].split(","))


def computation_type(signature: str) -> str:
    """The type a call with this signature computes in (see the module docstring)."""
    args = argument_types(signature)
    for t in args:
        if t.startswith("float"):
            return t
    result = result_type(signature)
    result = (tuple_members(result) or (result,))[0]
    return result if result.startswith("float") or not args else args[0]


def metal(name: str, result: str | None = None) -> Routine:
    return Routine(METAL, name, result=result)


def prelude(name: str, params: tuple[str, ...] | None = None) -> Routine:
    return Routine(PRELUDE, name, params=params)


def mathlib(name: str) -> Routine:
    return Routine(MATHLIB, name)


def emulated(name: str, params: tuple[str, ...] | None = None, result: str | None = None,
             member: str = "") -> Routine:
    return Routine(EMULATED, name, params=params, result=result, member=member)


def floats(routine: Routine, float64: Routine) -> dict[str, Routine]:
    """The float32 routine and the float64 one."""
    return {"float32": routine, "float64": float64}


# ---------------------------------------------------------------------------------------------
# Signatures (those of Numba's own typing of the math module)
# ---------------------------------------------------------------------------------------------

UNARY = ("float64(int64)", "float64(uint64)", "float32(float32)", "float64(float64)")
BINARY = ("float64(int64, int64)", "float64(uint64, uint64)", "float32(float32, float32)",
          "float64(float64, float64)")
BINARY_FLOAT = ("float32(float32, float32)", "float64(float64, float64)")
TO_INTEGER = ("intp(intp)", "int64(int64)", "uint64(uint64)", "int64(float32)", "int64(float64)")
PREDICATE = ("bool(int64)", "bool(uint64)", "bool(float32)", "bool(float64)")
POWER = ("float64(float64, int64)", "float64(float64, uint64)", "float32(float32, float32)",
         "float64(float64, float64)")
SCALE = ("float64(float64, intc)", "float32(float32, intc)")
FREXP = ("Tuple(float32, intc)(float32)", "Tuple(float64, intc)(float64)")
MODF = ("Tuple(float32, float32)(float32)", "Tuple(float64, float64)(float64)")


def _f64(name: str) -> Routine:
    """The emulated float64 routine of ``math.<name>``: ``nm_f64_<name>``."""
    return emulated("nm_f64_" + name)


#: numba.cuda's math functions of float16 that give float16 (numba-cuda's cudamath: Math_unary_with_fp16),
#: computed by MSL's half functions: within 1 ulp of half for sin ... exp, correctly rounded or exact for
#: sqrt, fabs and the roundings (MSL Table 8.3); the row's accuracy is its float32 one.
FLOAT16_MATH = ("sin", "cos", "ceil", "floor", "sqrt", "log", "log2", "log10", "exp", "fabs", "trunc")
FLOAT16_UNARY = ("float16(float16)",)


def _unary(name, routine, accuracy, float64=None):
    if name in FLOAT16_MATH:
        return Function(name, UNARY + FLOAT16_UNARY,
                        {**floats(routine, float64 or _f64(name)), "float16": metal(name)}, accuracy)
    return Function(name, UNARY, floats(routine, float64 or _f64(name)), accuracy)


def _binary(name, signatures, routine, accuracy, float64=None):
    return Function(name, signatures, floats(routine, float64 or _f64(name)), accuracy)


def _rounding(name):
    # The float64 routine rounds to an integral float64; the call converts it to the int64 result. float16
    # gives float16, as numba.cuda's.
    return Function(name, TO_INTEGER + FLOAT16_UNARY, {**floats(metal(name), _f64(name)), "int64": Routine(SAME),
                                                       "uint64": Routine(SAME), "float16": metal(name)}, EXACT)


def _predicate(name, integer_value: bool):
    constant = Routine(CONSTANT, value=integer_value, result="bool")
    return Function(name, PREDICATE, {**floats(metal(name, result="bool"), emulated("nm_f64_" + name, result="bool")),
                                      "int64": constant, "uint64": constant}, EXACT)


# ---------------------------------------------------------------------------------------------
# math
# ---------------------------------------------------------------------------------------------

MATH: tuple[Function, ...] = (
    _unary("acos", metal("acos"), msl_bound(4)),
    _unary("asin", metal("asin"), msl_bound(4)),
    _unary("atan", metal("atan"), msl_bound(5)),
    _binary("atan2", BINARY, metal("atan2"), msl_bound(6)),
    _unary("acosh", metal("acosh"), msl_bound(4)),
    _unary("asinh", metal("asinh"), msl_bound(4)),
    _unary("atanh", metal("atanh"), msl_bound(5)),
    _unary("cos", metal("cos"), msl_bound(4)),
    _unary("sin", metal("sin"), msl_bound(4)),
    _unary("tan", metal("tan"), msl_bound(6)),
    _unary("cosh", metal("cosh"), msl_bound(4)),
    _unary("sinh", metal("sinh"), msl_bound(4)),
    _unary("tanh", metal("tanh"), msl_bound(5)),
    _unary("exp", metal("exp"), msl_bound(4)),
    _unary("exp2", metal("exp2"), msl_bound(4)),
    _unary("log", metal("log"), msl_bound(4)),
    _unary("log2", metal("log2"), msl_bound(4)),
    _unary("log10", metal("log10"), msl_bound(4)),
    _unary("sqrt", metal("sqrt"), CORRECTLY_ROUNDED),
    _unary("fabs", metal("fabs"), EXACT, _f64("abs")),
    _binary("copysign", BINARY_FLOAT, metal("copysign"), EXACT),
    _binary("fmod", BINARY_FLOAT, prelude("nm_fmod"), EXACT),
    _rounding("floor"),
    _rounding("ceil"),
    _rounding("trunc"),
    _binary("hypot", BINARY, mathlib("nm_hypot"), mathlib_bound(4)),
    _unary("expm1", mathlib("nm_expm1"), mathlib_bound(4)),
    _unary("log1p", mathlib("nm_log1p"), mathlib_bound(4)),
    _unary("erf", mathlib("nm_erf"), mathlib_bound(4)),
    _unary("erfc", mathlib("nm_erfc"), mathlib_bound(4)),
    _unary("gamma", mathlib("nm_tgamma"), mathlib_bound(8)),
    # Judged absolutely near its zeros (x = 1, 2 and the negative ones).
    _unary("lgamma", mathlib("nm_lgamma"), mathlib_bound(8, absolute=1e-6)),
    _unary("cbrt", mathlib("nm_cbrt"), mathlib_bound(4)),
    _binary("remainder", BINARY_FLOAT, mathlib("nm_remainder"), EXACT),
    _binary("pow", POWER, Routine(OPERATOR, "**"), msl_bound(16), Routine(OPERATOR, "**")),
    _binary("ldexp", SCALE, prelude("nm_ldexp", ("float32", "int64")), CORRECTLY_ROUNDED,
            emulated("nm_f64_ldexp", ("float64", "int32"))),
    # x * (180/pi) with the constant rounded to float32: at most one rounding of each.
    _unary("degrees", prelude("nm_degrees"), Accuracy(1.0, "numba-metal prelude")),
    _unary("radians", prelude("nm_radians"), Accuracy(1.0, "numba-metal prelude")),
    _predicate("isnan", False),
    _predicate("isinf", False),
    _predicate("isfinite", True),
    # (mantissa, exponent), exact; 0, inf and NaN give (x, 0). Members of the routines' struct results.
    Function("frexp", FREXP, floats(
        Routine(TUPLE, parts=(Routine(PRELUDE, "nm_frexp", result="float32", member="mantissa"),
                              Routine(PRELUDE, "nm_frexp", result="intc", member="exponent"))),
        Routine(TUPLE, parts=(emulated("nm_f64_frexp", result="float64", member="mantissa"),
                              emulated("nm_f64_frexp", result="int32", member="exponent")))), EXACT),
    # (fractional part, integral part), both with x's sign (Python's; Numba does not type math.modf).
    Function("modf", MODF, floats(
        Routine(TUPLE, parts=(Routine(PRELUDE, "nm_modf", result="float32", member="first"),
                              Routine(PRELUDE, "nm_modf", result="float32", member="second"))),
        Routine(TUPLE, parts=(emulated("nm_f64_modf", member="first"),
                              emulated("nm_f64_modf", member="second")))), EXACT),
    _binary("nextafter", BINARY_FLOAT, prelude("nm_nextafter"), EXACT),
    # CPython's formula (Numba does not type math.isclose): a float32 kernel computes it in float32.
    Function("isclose", ("bool(float64, float64, float64, float64)",),
             floats(Routine(PRELUDE, "nm_isclose", result="bool"),
                    emulated("nm_f64_math_isclose", result="bool")), EXACT,
             keywords=(("rel_tol", 1e-09), ("abs_tol", 0.0))),
)

MATH_BY_NAME = {f.name: f for f in MATH}


# ---------------------------------------------------------------------------------------------
# metal.<name>: numba.cuda's bit and arithmetic intrinsics (cuda.popc ...), with numba.cuda's
# signatures (numba-cuda's cudadecl.py): popc and clz keep the argument's type and count in its
# width, ffs gives a uint32 (1-based position of the lowest set bit, 0 for 0, as CUDA's __ffs),
# brev reverses 32 or 64 bits.
# ---------------------------------------------------------------------------------------------

INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _bits(name, routine, result=None, argument_types=INTEGERS):
    return Function(name, tuple((result or t) + "(" + t + ")" for t in argument_types),
                    {t: routine for t in argument_types}, EXACT)


INTRINSICS: tuple[Function, ...] = (
    _bits("popc", metal("popcount")),
    _bits("clz", metal("clz")),
    _bits("ffs", Routine(PRELUDE, "nm_ffs", result="uint32"), result="uint32"),
    _bits("brev", metal("reverse_bits"), argument_types=("uint32", "uint64")),
    Function("fma", ("float32(float32, float32, float32)", "float64(float64, float64, float64)"),
             floats(metal("fma"), _f64("fma")), CORRECTLY_ROUNDED),
    # cuda.cbrt is math.cbrt's row with numba.cuda's float-only signatures (cudadecl.py).
    dataclasses.replace(MATH_BY_NAME["cbrt"], signatures=("float32(float32)", "float64(float64)")),
)


# ---------------------------------------------------------------------------------------------
# metal.libdevice.<name>: numba.cuda's cuda.libdevice (CUDA's libdevice __nv_<name>), one row per function
# with numba.cuda's signature from the checked-in list libdevice_signatures.py (numba.cuda types the
# unsigned functions with signed types: umax, brev, double2uint_rn... take and give int32/int64 bit
# patterns). The `f` forms compute in float32, the others in float64 (float32 in a kernel that computes
# float64 in float32, except where only exact float64 can give libdevice's result: directed rounding to or
# of float64, and bit patterns of float64, which are refused there). Each row names the routine:
# - the math table's routine of the same function (sinf, sin -> math.sin's), MSL's functions where they
#   are libdevice's (rsqrtf, exp10f, fmaxf, fdimf, hadd, sinpif...), fast:: for the fast_ forms;
# - libdevice.metal's helpers (compiler/libdevice_ops.py) for bit patterns, CUDA's special values
#   (saturatef, ilogbf, logbf...) and directed rounding (`_rz`, `_rd`, `_ru`: exact, see libdevice.metal);
# - `_rn` forms are the plain operation or conversion (MSL's float32 + - * /, 1/x, sqrt, rsqrt and fma are
#   correctly rounded, MSL Table 8.1);
# - float-to-integer conversions round with floor/ceil/rint/trunc, then convert as Numba does (saturating;
#   the unsigned forms through uint32/uint64, keeping numba.cuda's signed result type).
# ---------------------------------------------------------------------------------------------

from numba_metal.compiler import libdevice_ops  # noqa: E402

from .libdevice_signatures import SIGNATURES as LIBDEVICE_SIGNATURES  # noqa: E402


def _ld(name: str, *extra: int, params=None, result=None, via=None) -> Routine:
    """An entry point of libdevice.metal (compiler/libdevice_ops.py)."""
    return Routine(EMULATED, name, params=params, result=result, extra=extra, via=via)


def _refused(why: str) -> Routine:
    return Routine(REFUSED, why)


_NEEDS_EXACT = _refused("needs float64 computed exactly, and this kernel computes float64 in float32 (it holds "
                        "no float64 data): pass float64 data or compile with float64='exact'")
_ROUNDINGS = {"rn": "rint", "rz": "trunc", "rd": "floor", "ru": "ceil"}
FAST_MATH_BOUND = Accuracy(float("inf"), "MSL Table 8.2 (fast math)")   # Table 8.2 bounds some, not all
#: j0 j1 y0 y1 jn yn: 1e-15 absolute or 7 ulp (j0 j1 y0 y1 below |x| = 8: 7 ulp, CUDA's bound, also at the
#: zeros; yn: CUDA's ceil(2 + 2.5 n) ulp), measured against mpmath.
BESSEL_BOUND = Accuracy(7.0, "measured against mpmath (tests/language/test_libdevice_bessel.py)", 1e-15)
#: math-table functions libdevice has under the same name (tgamma is math.gamma).
_SAME_AS_MATH = {n: n for n in ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "copysign",
                                "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "fabs", "fmod", "hypot",
                                "lgamma", "log", "log10", "log1p", "log2", "pow", "remainder", "sin", "sinh",
                                "sqrt", "tan", "tanh", "ceil", "floor", "trunc", "ldexp")}
_SAME_AS_MATH.update(tgamma="gamma", scalbn="ldexp")


def _float_fn(base: str, f32: Routine, f64: Routine, accuracy: Accuracy):
    return {base: ({"float32": f32, "float64": f64}, accuracy), base + "f": ({"float32": f32}, accuracy)}


def _libdevice_routines() -> dict:
    """libdevice name -> (routines by computation type, accuracy)."""
    r: dict = {}
    for base, math_name in _SAME_AS_MATH.items():
        row = MATH_BY_NAME[math_name]
        r.update(_float_fn(base, row.routines["float32"], row.routines["float64"], row.accuracy))
    fma = INTRINSICS[4]
    r.update(_float_fn("fma", fma.routines["float32"], fma.routines["float64"], fma.accuracy))
    r["fmaf_rn"] = ({"float32": fma.routines["float32"]}, fma.accuracy)
    r["fma_rn"] = ({"float64": fma.routines["float64"], "float32": fma.routines["float32"]}, fma.accuracy)
    r.update(_float_fn("exp10", metal("exp10"), _ld("nm_ld_exp10"), msl_bound(4)))
    r.update(_float_fn("rsqrt", metal("rsqrt"), _ld("nm_ld_rsqrt"), CORRECTLY_ROUNDED))
    r.update(_float_fn("fdim", _ld("nm_ld_fdimf"), _ld("nm_ld_fdim"), EXACT))
    r.update(_float_fn("fmax", metal("fmax"), emulated("nm_f64_np_fmax"), EXACT))
    r.update(_float_fn("fmin", metal("fmin"), emulated("nm_f64_np_fmin"), EXACT))
    r.update(_float_fn("nextafter", _ld("nm_ld_nextafter"), emulated("nm_f64_nextafter"), EXACT))
    r.update(_float_fn("rint", metal("rint"), emulated("nm_f64_rint"), EXACT))
    r.update(_float_fn("nearbyint", metal("rint"), emulated("nm_f64_rint"), EXACT))
    r.update(_float_fn("round", metal("round"), _ld("nm_ld_round"), EXACT))
    r.update(_float_fn("logb", _ld("nm_ld_logb"), _ld("nm_ld_logb64"), EXACT))
    r.update(_float_fn("ilogb", _ld("nm_ld_ilogb", result="int32"), _ld("nm_ld_ilogb64", result="int32"), EXACT))
    r["llrint"] = ({"float64": emulated("nm_f64_rint"), "float32": metal("rint")}, EXACT)
    r["llrintf"] = ({"float32": metal("rint")}, EXACT)
    r["llround"] = ({"float64": _ld("nm_ld_round"), "float32": metal("round")}, EXACT)
    r["llroundf"] = ({"float32": metal("round")}, EXACT)
    r.update(_float_fn("powi", Routine(OPERATOR, "**"), Routine(OPERATOR, "**"), msl_bound(16)))
    # sin/cos of pi r after an exact reduction (libdevice.metal): MSL's 4 ulp plus pi r's rounding.
    pi_bound = Accuracy(4.5, "MSL Table 8.1 (sin, cos) and one rounding of pi r")
    r["sinpif"] = ({"float32": _ld("nm_ld_sinpi")}, pi_bound)
    r["cospif"] = ({"float32": _ld("nm_ld_cospi")}, pi_bound)
    r["sincospif"] = ({"float32": Routine(TUPLE, parts=(_ld("nm_ld_sinpi"), _ld("nm_ld_cospi")))}, pi_bound)
    # float64: the float64 library's sin/cos (0.503 ulp) of pi r, one more rounding (libdevice.metal).
    pi64_bound = Accuracy(1.5, "float64 library sin/cos and one rounding of pi r")
    sinpi, cospi = Routine(EMULATED, "nm_ld_sinpi64"), Routine(EMULATED, "nm_ld_cospi64")
    r["sinpi"] = ({"float64": sinpi, "float32": _ld("nm_ld_sinpi")}, pi64_bound)
    r["cospi"] = ({"float64": cospi, "float32": _ld("nm_ld_cospi")}, pi64_bound)
    r["sincospi"] = ({"float64": Routine(TUPLE, parts=(sinpi, cospi)),
                      "float32": Routine(TUPLE, parts=(_ld("nm_ld_sinpi"), _ld("nm_ld_cospi")))}, pi64_bound)
    # 1/cbrt: the float32 math library's cbrt (4 ulp) and a correctly rounded division; float64: 0.52 + 0.5.
    r.update(_float_fn("rcbrt", _ld("nm_ld_rcbrtf"), _ld("nm_ld_rcbrt64"), mathlib_bound(4.5)))
    # normcdf: erfc(-x/sqrt(2))/2 with the rounding of -x/sqrt(2) corrected (libdevice.metal): the math
    # libraries' erfc (4 ulp float32, 0.51 float64) plus the final rounding and the correction's error.
    r["normcdff"] = ({"float32": _ld("nm_ld_normcdff")}, mathlib_bound(5))
    r["normcdf"] = ({"float64": _ld("nm_ld_normcdf64"), "float32": _ld("nm_ld_normcdff")}, mathlib_bound(5))
    # erfinv, erfcinv, normcdfinv: Newton's method on the float64 library's erf/erfc (libdevice.metal); the
    # float32 forms are its result rounded once more. Bounds: tests/language/test_libdevice_float.py's.
    inverse_bound = Accuracy(2.0, "measured against mpmath (float32: within 1 ulp)")
    for name in ("erfinv", "erfcinv", "normcdfinv"):
        r[name] = ({"float64": _ld("nm_ld_" + name + "64"), "float32": _ld("nm_ld_" + name + "f")}, inverse_bound)
        r[name + "f"] = ({"float32": _ld("nm_ld_" + name + "f")}, inverse_bound)
    # erfcx: exp(x^2) erfc(x) on the float64 library (libdevice.metal); the float32 form rounds it once more.
    r.update(_float_fn("erfcx", _ld("nm_ld_erfcxf"), _ld("nm_ld_erfcx64"),
                       Accuracy(3.0, "measured against mpmath (float32: within 1 ulp)")))
    # Bessel functions (libdevice.metal's ld_bessel): float64 on the emulated float64, the float32 forms its
    # result rounded once more. Judged absolutely near the zeros, as CUDA documents them; the bounds are
    # tests/language/test_libdevice_bessel.py's measurements against mpmath (docs/math-accuracy.md).
    for base, arity in (("j0", 1), ("j1", 1), ("y0", 1), ("y1", 1), ("jn", 2), ("yn", 2)):
        p64, p32 = (("int32", "float64"), ("int32", "float32")) if arity == 2 else (None, None)
        r.update(_float_fn(base, _ld("nm_ld_" + base + "f", params=p32), _ld("nm_ld_" + base + "_64", params=p64),
                           BESSEL_BOUND))
    # remquo: (remainder(x, y), the low three bits of its quotient with the sign of x/y), as CUDA's.
    r.update(_float_fn("remquo", Routine(TUPLE, parts=(mathlib("nm_remainder"),
                                                       _ld("nm_ld_remquo_bitsf", result="int32"))),
                       Routine(TUPLE, parts=(emulated("nm_f64_remainder"),
                                             _ld("nm_ld_remquo_bits64", result="int32"))), EXACT))
    sin, cos = MATH_BY_NAME["sin"].routines, MATH_BY_NAME["cos"].routines
    r.update(_float_fn("sincos", Routine(TUPLE, parts=(sin["float32"], cos["float32"])),
                       Routine(TUPLE, parts=(sin["float64"], cos["float64"])), MATH_BY_NAME["sin"].accuracy))
    r.update(_float_fn("frexp", Routine(TUPLE, parts=(_ld("nm_ld_frexp_mantissa"),
                                                      _ld("nm_ld_frexp_exponent", result="int32"))),
                       Routine(TUPLE, parts=(emulated("nm_f64_frexp", result="float64", member="mantissa"),
                                             emulated("nm_f64_frexp", result="int32", member="exponent"))), EXACT))
    r.update(_float_fn("modf", Routine(TUPLE, parts=(_ld("nm_ld_modf_fraction"), _ld("nm_ld_modf_integral"))),
                       Routine(TUPLE, parts=(emulated("nm_f64_modf", member="first"),
                                             emulated("nm_f64_modf", member="second"))), EXACT))
    for name in ("isnan", "isinf"):
        row = MATH_BY_NAME[name].routines
        r[name + "f"] = ({"float32": row["float32"]}, EXACT)
        r[name + "d"] = ({"float32": row["float32"], "float64": row["float64"]}, EXACT)
    isfinite = MATH_BY_NAME["isfinite"].routines
    r["finitef"] = ({"float32": isfinite["float32"]}, EXACT)
    r["isfinited"] = ({"float32": isfinite["float32"], "float64": isfinite["float64"]}, EXACT)
    r["signbitf"] = ({"float32": metal("signbit", result="bool")}, EXACT)
    r["signbitd"] = ({"float32": metal("signbit", result="bool"),
                      "float64": emulated("nm_f64_signbit", result="bool")}, EXACT)
    r["saturatef"] = ({"float32": _ld("nm_ld_saturate")}, EXACT)
    # fast_<f>: MSL's fast:: functions (Table 8.2's accuracy, as libdevice's are its own approximations).
    for name, msl_name in (("cosf", "cos"), ("exp10f", "exp10"), ("expf", "exp"), ("log10f", "log10"),
                           ("log2f", "log2"), ("logf", "log"), ("powf", "pow"), ("sinf", "sin"), ("tanf", "tan"),
                           ("fdividef", "divide")):
        r["fast_" + name] = ({"float32": metal("fast::" + msl_name)}, FAST_MATH_BOUND)
    r["fast_sincosf"] = ({"float32": Routine(TUPLE, parts=(metal("fast::sin"), metal("fast::cos")))},
                         FAST_MATH_BOUND)
    # Integer functions (numba.cuda's signed types; the unsigned ones compute on the bit patterns).
    u32, u64 = ("uint32", "uint32"), ("uint64", "uint64")
    r["abs"] = ({"int32": _ld("nm_ld_abs")}, EXACT)
    r["llabs"] = ({"int64": _ld("nm_ld_llabs")}, EXACT)
    for name, fn, params, ctype in (("max", "max", None, "int32"), ("min", "min", None, "int32"),
                                    ("umax", "max", u32, "int32"), ("umin", "min", u32, "int32"),
                                    ("llmax", "max", None, "int64"), ("llmin", "min", None, "int64"),
                                    ("ullmax", "max", u64, "int64"), ("ullmin", "min", u64, "int64"),
                                    ("hadd", "hadd", None, "int32"), ("rhadd", "rhadd", None, "int32"),
                                    ("uhadd", "hadd", u32, "int32"), ("urhadd", "rhadd", u32, "int32"),
                                    ("mulhi", "mulhi", None, "int32"), ("umulhi", "mulhi", u32, "int32"),
                                    ("mul64hi", "mulhi", None, "int64"), ("umul64hi", "mulhi", u64, "int64")):
        r[name] = ({ctype: Routine(METAL, fn, params=params, result=params[0] if params else None)}, EXACT)
    r["popc"] = ({"int32": Routine(METAL, "popcount", params=("uint32",), result="uint32")}, EXACT)
    r["popcll"] = ({"int64": Routine(METAL, "popcount", params=("uint64",), result="uint64")}, EXACT)
    r["clz"] = ({"int32": Routine(METAL, "clz", params=("uint32",), result="uint32")}, EXACT)
    r["clzll"] = ({"int64": Routine(METAL, "clz", params=("uint64",), result="uint64")}, EXACT)
    r["ffs"] = ({"int32": prelude("nm_ffs", ("uint32",))}, EXACT)
    r["ffsll"] = ({"int64": prelude("nm_ffs", ("uint64",))}, EXACT)
    r["brev"] = ({"int32": Routine(METAL, "reverse_bits", params=("uint32",), result="uint32")}, EXACT)
    r["brevll"] = ({"int64": Routine(METAL, "reverse_bits", params=("uint64",), result="uint64")}, EXACT)
    r["mul24"] = ({"int32": prelude("nm_mul24")}, EXACT)
    r["umul24"] = ({"int32": Routine(PRELUDE, "nm_mul24", params=u32, result="uint32")}, EXACT)
    r["sad"] = ({"int32": Routine(PRELUDE, "nm_sad", params=("int32", "int32", "uint32"),
                                  result="uint32")}, EXACT)
    r["usad"] = ({"int32": Routine(PRELUDE, "nm_sad", params=("uint32",) * 3, result="uint32")}, EXACT)
    r["byte_perm"] = ({"int32": _ld("nm_ld_byte_perm", params=("uint32",) * 3, result="uint32")}, EXACT)
    # Bit patterns and half precision.
    r["float_as_int"] = ({"float32": _ld("nm_ld_float_as_int", result="int32")}, EXACT)
    r["int_as_float"] = ({"float32": _ld("nm_ld_int_as_float", params=("int32",))}, EXACT)
    r["float2half_rn"] = ({"float32": _ld("nm_ld_float2half_rn", result="int16")}, CORRECTLY_ROUNDED)
    r["half2float"] = ({"float32": _ld("nm_ld_half2float", params=("int16",))}, EXACT)
    r["double_as_longlong"] = ({"float64": emulated("nm_f64_to_bits", result="uint64"), "float32": _NEEDS_EXACT},
                               EXACT)
    r["longlong_as_double"] = ({"float64": emulated("nm_f64_from_bits", params=("uint64",)),
                                "float32": _NEEDS_EXACT}, EXACT)
    r["double2hiint"] = ({"float64": emulated("nm_f64_hi_word", result="uint32"), "float32": _NEEDS_EXACT}, EXACT)
    r["double2loint"] = ({"float64": emulated("nm_f64_lo_word", result="uint32"), "float32": _NEEDS_EXACT}, EXACT)
    r["hiloint2double"] = ({"float64": _ld("nm_ld_hiloint2double", params=("int32", "int32")),
                            "float32": _NEEDS_EXACT}, EXACT)
    # Conversions.
    same = Routine(SAME)
    for mode, fn in _ROUNDINGS.items():
        for target, via in (("int", None), ("uint", "uint32"), ("ll", None), ("ull", "uint64")):
            r[f"float2{target}_{mode}"] = ({"float32": Routine(METAL, fn, via=via)}, EXACT)
            r[f"double2{target}_{mode}"] = ({"float64": Routine(EMULATED, "nm_f64_" + fn, via=via),
                                             "float32": Routine(METAL, fn, via=via)}, EXACT)
    r["double2float_rn"] = ({"float64": same, "float32": same}, CORRECTLY_ROUNDED)
    r["int2float_rn"] = ({"float32": same}, CORRECTLY_ROUNDED)
    r["uint2float_rn"] = ({"float32": Routine(SAME, params=("uint32",))}, CORRECTLY_ROUNDED)
    r["ll2float_rn"] = ({"float32": same}, CORRECTLY_ROUNDED)
    r["ull2float_rn"] = ({"float32": Routine(SAME, params=("uint64",))}, CORRECTLY_ROUNDED)
    r["int2double_rn"] = ({"float64": same, "float32": same}, EXACT)
    r["uint2double_rn"] = ({"float64": Routine(SAME, params=("uint32",)),
                            "float32": Routine(SAME, params=("uint32",))}, EXACT)
    r["ll2double_rn"] = ({"float64": same, "float32": same}, CORRECTLY_ROUNDED)
    r["ull2double_rn"] = ({"float64": Routine(SAME, params=("uint64",)),
                           "float32": Routine(SAME, params=("uint64",))}, CORRECTLY_ROUNDED)
    for mode, code in libdevice_ops.MODES.items():
        r[f"double2float_{mode}"] = ({"float64": _ld("nm_ld_double2float", code, result="float32"),
                                      "float32": _NEEDS_EXACT}, EXACT)
        r[f"int2float_{mode}"] = ({"float32": _ld("nm_ld_ll2float", code, params=("int64",))}, EXACT)
        r[f"uint2float_{mode}"] = ({"float32": _ld("nm_ld_ull2float", code, params=("uint64",))}, EXACT)
        r[f"ll2float_{mode}"] = ({"float32": _ld("nm_ld_ll2float", code, params=("int64",))}, EXACT)
        r[f"ull2float_{mode}"] = ({"float32": _ld("nm_ld_ull2float", code, params=("uint64",))}, EXACT)
        r[f"ll2double_{mode}"] = ({"float64": _ld("nm_ld_ll2double", code, params=("int64",)),
                                   "float32": _NEEDS_EXACT}, EXACT)
        r[f"ull2double_{mode}"] = ({"float64": _ld("nm_ld_ull2double", code, params=("uint64",)),
                                    "float32": _NEEDS_EXACT}, EXACT)
        # float32 arithmetic, exact through float64 (libdevice.metal).
        for op in ("fadd", "fsub", "fmul", "fdiv"):
            r[f"{op}_{mode}"] = ({"float32": _ld("nm_ld_" + op, code)}, EXACT)
        r[f"frcp_{mode}"] = ({"float32": _ld("nm_ld_frcp", code)}, EXACT)
        r[f"fsqrt_{mode}"] = ({"float32": _ld("nm_ld_fsqrt", code)}, EXACT)
        r[f"fmaf_{mode}"] = ({"float32": _ld("nm_ld_fmaf", code)}, EXACT)
        for op in ("dadd", "dmul", "ddiv"):
            r[f"{op}_{mode}"] = ({"float64": _ld("nm_ld_" + op, code), "float32": _NEEDS_EXACT}, EXACT)
        r[f"dsqrt_{mode}"] = ({"float64": _ld("nm_ld_dsqrt", code), "float32": _NEEDS_EXACT}, EXACT)
        r[f"drcp_{mode}"] = ({"float64": _ld("nm_ld_drcp", code), "float32": _NEEDS_EXACT}, EXACT)
        r[f"fma_{mode}"] = ({"float64": _ld("nm_ld_dfma", code), "float32": _NEEDS_EXACT}, EXACT)
    for op, symbol in (("fadd", "+"), ("fsub", "-"), ("fmul", "*"), ("fdiv", "/")):
        r[op + "_rn"] = ({"float32": Routine(OPERATOR, symbol)}, CORRECTLY_ROUNDED)
    for op, symbol in (("dadd", "+"), ("dmul", "*"), ("ddiv", "/")):
        r[op + "_rn"] = ({"float64": Routine(OPERATOR, symbol), "float32": Routine(OPERATOR, symbol)},
                         CORRECTLY_ROUNDED)
    r["frcp_rn"] = ({"float32": _ld("nm_ld_rcp")}, CORRECTLY_ROUNDED)
    r["fsqrt_rn"] = ({"float32": metal("sqrt")}, CORRECTLY_ROUNDED)
    r["frsqrt_rn"] = ({"float32": metal("rsqrt")}, CORRECTLY_ROUNDED)
    r["dsqrt_rn"] = ({"float64": emulated("nm_f64_sqrt"), "float32": metal("sqrt")}, CORRECTLY_ROUNDED)
    r["drcp_rn"] = ({"float64": _ld("nm_ld_drcp_rn"), "float32": _ld("nm_ld_rcp")}, CORRECTLY_ROUNDED)
    return r


_LIBDEVICE_ROUTINES = _libdevice_routines()


def _libdevice_signature(results: tuple[str, ...], args: tuple[str, ...]) -> str:
    result = results[0] if len(results) == 1 else "Tuple(" + ", ".join(results) + ")"
    return result + "(" + ", ".join(args) + ")"


#: Every one of numba.cuda's libdevice functions (a KeyError here names one without a routine).
LIBDEVICE: tuple[Function, ...] = tuple(
    Function(name, (_libdevice_signature(results, args),), *_LIBDEVICE_ROUTINES[name])
    for name, results, args in LIBDEVICE_SIGNATURES)

# ---------------------------------------------------------------------------------------------
# metal.fp16.<name>: numba.cuda's cuda.fp16 functions, on MSL's half. MSL Table 8.3 (half): the
# arithmetic, fma, sqrt, rsqrt, 1/x and the roundings are correctly rounded, the transcendental
# functions within 1 ulp. hmax/hmin are numba.cuda's `a if a > b else b` (NaN gives b).
# ---------------------------------------------------------------------------------------------

HALF_CORRECTLY_ROUNDED = Accuracy(0.5, "MSL Table 8.3")
HALF_ONE_ULP = Accuracy(1.0, "MSL Table 8.3")
_H1, _H2, _H3 = ("float16(float16)",), ("float16(float16, float16)",), ("float16(float16, float16, float16)",)


def _half(name, routine, accuracy, signatures=_H1):
    return Function(name, signatures, {"float16": routine}, accuracy)


def _half_operator(name, symbol, signatures=_H2, accuracy=HALF_CORRECTLY_ROUNDED):
    return _half(name, Routine(OPERATOR, symbol), accuracy, signatures)


FP16: tuple[Function, ...] = (
    _half_operator("hadd", "+"),
    _half_operator("hsub", "-"),
    _half_operator("hmul", "*"),
    _half_operator("hdiv", "/"),
    _half("hfma", metal("fma"), HALF_CORRECTLY_ROUNDED, _H3),
    _half_operator("hneg", "-", _H1, EXACT),
    _half("habs", metal("fabs"), EXACT),
    _half("hmax", prelude("nm_hmax"), EXACT, _H2),
    _half("hmin", prelude("nm_hmin"), EXACT, _H2),
    *(_half_operator(name, symbol, ("bool(float16, float16)",), EXACT)
      for name, symbol in (("heq", "=="), ("hne", "!="), ("hlt", "<"), ("hle", "<="), ("hgt", ">"), ("hge", ">="))),
    _half("hsqrt", metal("sqrt"), HALF_CORRECTLY_ROUNDED),
    _half("hrsqrt", metal("rsqrt"), HALF_CORRECTLY_ROUNDED),
    _half("hrcp", prelude("nm_hrcp"), HALF_CORRECTLY_ROUNDED),
    _half("hceil", metal("ceil"), EXACT),
    _half("hfloor", metal("floor"), EXACT),
    _half("htrunc", metal("trunc"), EXACT),
    _half("hrint", metal("rint"), EXACT),
    *(_half("h" + name, metal(name), HALF_ONE_ULP)
      for name in ("sin", "cos", "exp", "exp2", "exp10", "log", "log2", "log10", "tanh")),
    # numba.cuda's tanh.approx.f16 (relative error 2^-10.987); MSL's precise tanh is within 1 ulp.
    _half("htanh_approx", metal("tanh"), HALF_ONE_ULP),
)


# ---------------------------------------------------------------------------------------------
# metal.fp16.__h*: the CUDA-C spellings numba.cuda's cuda.fp16 also exports (numba-cuda's fp16.py, bound to
# cuda_fp16.h): __hadd ... (the functions above), `_rn` forms (the plain operation: MSL's half arithmetic
# is correctly rounded and never contracted here), `_sat` forms (clamped to [0, 1], NaN -> +0), __hfma_relu,
# NaN-propagating __hmax_nan/__hmin_nan, NaN-ignoring __hmax/__hmin (CUDA's fmax/fmin), unordered
# comparisons (`u`: true when either is NaN), __hisnan, __hisinf (-1, 0, 1), bit patterns, conversions
# to half (directed ones rounded by hand) and from half to integers (CUDA's saturation and NaN values):
# libdevice.metal's section ld_half.
# ---------------------------------------------------------------------------------------------

def _h(name, routine, signatures=_H2, accuracy=HALF_CORRECTLY_ROUNDED):
    return _half(name, routine, accuracy, signatures)


def _h_ld(name, entry, signatures=_H2, accuracy=HALF_CORRECTLY_ROUNDED, **kw):
    return Function(name, signatures, {computation_type(signatures[0]): Routine(EMULATED, entry, **kw)}, accuracy)


def _sig(result: str, *args: str) -> str:
    return result + "(" + ", ".join(args) + ")"


_FP16_BY_NAME = {f.name: f for f in FP16}
_HMODES = ("rn", "rz", "rd", "ru")
_HMODE_CODES = {"rn": 0, "rz": 1, "rd": 2, "ru": 3}
_HCMP = ("bool(float16, float16)",)
_TO_HALF = {"float": "float32", "int": "int32", "short": "int16", "ll": "int64", "uint": "uint32",
            "ushort": "uint16", "ull": "uint64"}

FP16_CUDA_C: tuple[Function, ...] = (
    *(Function("__" + f.name, f.signatures, f.routines, f.accuracy) for f in FP16
      if f.name in ("habs", "hadd", "hsub", "hmul", "hdiv", "hfma", "hneg", "heq", "hne", "hlt", "hle", "hgt",
                    "hge")),
    *(Function("__" + op + "_rn", _FP16_BY_NAME[op].signatures, _FP16_BY_NAME[op].routines, HALF_CORRECTLY_ROUNDED)
      for op in ("hadd", "hsub", "hmul")),
    _h_ld("__hadd_sat", "nm_h_add_sat"), _h_ld("__hsub_sat", "nm_h_sub_sat"), _h_ld("__hmul_sat", "nm_h_mul_sat"),
    _h_ld("__hfma_sat", "nm_h_fma_sat", _H3), _h_ld("__hfma_relu", "nm_h_fma_relu", _H3),
    _h("__hmax", metal("fmax"), accuracy=EXACT), _h("__hmin", metal("fmin"), accuracy=EXACT),
    _h_ld("__hmax_nan", "nm_h_max_nan", accuracy=EXACT), _h_ld("__hmin_nan", "nm_h_min_nan", accuracy=EXACT),
    *(_h_ld(f"__h{c}u", f"nm_h_{c}u", _HCMP, EXACT, result="bool") for c in ("eq", "ne", "lt", "le", "gt", "ge")),
    _h("__hisnan", metal("isnan", result="bool"), ("bool(float16)",), EXACT),
    _h_ld("__hisinf", "nm_h_isinf", ("int32(float16)",), EXACT, result="int32"),
    _h_ld("__half_as_short", "nm_h_as_short", ("int16(float16)",), EXACT, result="int16"),
    _h_ld("__half_as_ushort", "nm_h_as_ushort", ("uint16(float16)",), EXACT, result="uint16"),
    _h_ld("__short_as_half", "nm_h_from_short_bits", ("float16(int16)",), EXACT, params=("int16",),
          result="float16"),
    _h_ld("__ushort_as_half", "nm_h_from_ushort_bits", ("float16(uint16)",), EXACT, params=("uint16",),
          result="float16"),
    Function("__half2float", ("float32(float16)",), {"float16": Routine(SAME)}, EXACT),
    Function("__float2half", ("float16(float32)",), {"float32": Routine(SAME)}, HALF_CORRECTLY_ROUNDED),
    # float64 to half rounded once (the float64 library's conversion); float32 in a kernel computing float64
    # in float32.
    Function("__double2half", ("float16(float64)",), {"float64": Routine(SAME), "float32": Routine(SAME)},
             HALF_CORRECTLY_ROUNDED),
    *(Function(f"__{src}2half_rn", (_sig("float16", t),), {computation_type(_sig("float16", t)): Routine(SAME)},
               HALF_CORRECTLY_ROUNDED) for src, t in _TO_HALF.items()),
    *(Function(f"__{src}2half_{mode}", (_sig("float16", t),),
               {computation_type(_sig("float16", t)): Routine(EMULATED, "nm_h_from_float", params=("float32",),
                                                           result="float16", extra=(code,))}, EXACT)
      for src, t in _TO_HALF.items() for mode, code in (("rz", 1), ("rd", 2), ("ru", 3))),
    *(Function(f"__half2{dst}_{mode}", (_sig(t, "float16"),),
               {"float16": Routine(EMULATED, "nm_h_to_unsigned" if t.startswith("u") else "nm_h_to_signed",
                                   result="uint64" if t.startswith("u") else "int64",
                                   extra=(code, int(t.strip("uint"))))}, EXACT)
      for dst, t, modes in (("char", "int8", ("rz",)), ("uchar", "uint8", ("rz",)), ("short", "int16", _HMODES),
                            ("ushort", "uint16", _HMODES), ("int", "int32", _HMODES), ("uint", "uint32", _HMODES),
                            ("ll", "int64", _HMODES), ("ull", "uint64", _HMODES))
      for mode, code in ((m, _HMODE_CODES[m]) for m in modes)),
)

__all__ = ["Routine", "Accuracy", "Function", "MATH", "MATH_BY_NAME", "INTRINSICS", "INTEGERS", "FP16", "FP16_CUDA_C",
           "LIBDEVICE", "LIBDEVICE_SIGNATURES", "FLOAT16_MATH", "argument_types", "result_type",
           "tuple_members", "computation_type", "METAL", "PRELUDE", "MATHLIB", "OPERATOR", "CONSTANT", "SAME",
           "EMULATED", "TUPLE", "REFUSED"]
