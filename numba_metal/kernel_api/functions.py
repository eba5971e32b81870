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

from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------
# Row types
# ---------------------------------------------------------------------------------------------

#: Where a routine comes from.
METAL = "metal"        # MSL's standard library (namespace metal::), which the CPU device's shim declares
PRELUDE = "prelude"    # a numba-metal prelude helper (compiler/prelude.metal, in section `snippet`)
MATHLIB = "mathlib"    # numba-metal's math library (compiler/mathlib.metal)
OPERATOR = "operator"  # the Python operator `name`, as the compiler's operator table lowers it
CONSTANT = "constant"  # the constant `value` whatever the argument (isnan of an integer)
EMULATED = "emulated"  # an entry point of the emulated float64 libraries (rows of compiler/float64_ops.py,
                       # compiler/float64_math_ops.py)
SAME = "same"          # the argument itself (floor of an integer)


@dataclass(frozen=True)
class Routine:
    """How a function is computed for one computation type."""

    source: str                          # METAL, PRELUDE, MATHLIB, OPERATOR, CONSTANT or SAME
    name: str = ""                       # the MSL function, operator or constant
    snippet: str = ""                    # PRELUDE: the prelude section defining it
    params: tuple[str, ...] | None = None  # parameter types when not all the computation type
    result: str | None = None            # result type when not the computation type
    value: object = None                 # CONSTANT: the Python value
    fields: tuple[str, ...] = ()         # a tuple result: the members, in the tuple's order, of the struct
                                         # `result` the routine returns


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


def tuple_items(type_name: str) -> tuple[str, ...] | None:
    """The item types of a tuple type name such as ``"[float64, intc]"`` (a tuple result), else None."""
    if not type_name.startswith("["):
        return None
    return tuple(t.strip() for t in type_name[1:-1].split(","))


def argument_types(signature: str) -> tuple[str, ...]:
    """The argument type names of a signature such as ``"float32(float32, intc)"``."""
    inner = signature[signature.index("(") + 1:signature.rindex(")")]
    return tuple(a.strip() for a in inner.split(",") if a.strip())


def result_type(signature: str) -> str:
    return signature[:signature.index("(")].strip()


def computation_type(signature: str) -> str:
    """The type a call with this signature computes in (see the module docstring)."""
    args = argument_types(signature)
    for t in args:
        if t.startswith("float"):
            return t
    result = result_type(signature)
    return result if result.startswith("float") else args[0]


def metal(name: str, result: str | None = None) -> Routine:
    return Routine(METAL, name, result=result)


def prelude(name: str, snippet: str, params: tuple[str, ...] | None = None) -> Routine:
    return Routine(PRELUDE, name, snippet, params=params)


def mathlib(name: str) -> Routine:
    return Routine(MATHLIB, name)


def emulated(name: str, params: tuple[str, ...] | None = None, result: str | None = None,
             fields: tuple[str, ...] = ()) -> Routine:
    return Routine(EMULATED, name, params=params, result=result, fields=fields)


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
#: Tuple results are written ``[item, item]``.
FREXP = ("[float32, intc](float32)", "[float64, intc](float64)")
MODF = ("[float32, float32](float32)", "[float64, float64](float64)")


def _f64(name: str) -> Routine:
    """The emulated float64 routine of ``math.<name>``: ``nm_f64_<name>``."""
    return emulated("nm_f64_" + name)


def _unary(name, routine, accuracy, float64=None):
    return Function(name, UNARY, floats(routine, float64 or _f64(name)), accuracy)


def _binary(name, signatures, routine, accuracy, float64=None):
    return Function(name, signatures, floats(routine, float64 or _f64(name)), accuracy)


def _rounding(name):
    # The float64 routine rounds to an integral float64; the call converts it to the int64 result.
    return Function(name, TO_INTEGER, {**floats(metal(name), _f64(name)), "int64": Routine(SAME),
                                       "uint64": Routine(SAME)}, EXACT)


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
    _binary("fmod", BINARY_FLOAT, prelude("nm_fmod", "floatdiv"), EXACT),
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
    _binary("ldexp", SCALE, prelude("nm_ldexp", "ldexp", ("float32", "int64")), CORRECTLY_ROUNDED,
            emulated("nm_f64_ldexp", ("float64", "int32"))),
    # x * (180/pi) with the constant rounded to float32: at most one rounding of each.
    _unary("degrees", prelude("nm_degrees", "angles"), Accuracy(1.0, "numba-metal prelude")),
    _unary("radians", prelude("nm_radians", "angles"), Accuracy(1.0, "numba-metal prelude")),
    _predicate("isnan", False),
    _predicate("isinf", False),
    _predicate("isfinite", True),
    # (mantissa, exponent), exact; 0, inf and NaN give (x, 0).
    Function("frexp", FREXP, floats(Routine(PRELUDE, "nm_frexp", "mathpairs", result="nm_frexp_f32",
                                            fields=("mantissa", "exponent")),
                                    emulated("nm_f64_frexp", result="nm_f64_frexp_result",
                                             fields=("mantissa", "exponent"))), EXACT),
    # (fractional part, integral part), both with x's sign (Python's; Numba does not type math.modf).
    Function("modf", MODF, floats(Routine(PRELUDE, "nm_modf", "mathpairs", result="nm_modf_f32",
                                          fields=("first", "second")),
                                  emulated("nm_f64_modf", result="nm_f64_pair", fields=("first", "second"))), EXACT),
    _binary("nextafter", BINARY_FLOAT, prelude("nm_nextafter", "mathpairs"), EXACT),
    # CPython's formula (Numba does not type math.isclose): a float32 kernel computes it in float32.
    Function("isclose", ("bool(float64, float64, float64, float64)",),
             floats(Routine(PRELUDE, "nm_isclose", "mathpairs", result="bool"),
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
    _bits("ffs", Routine(PRELUDE, "nm_ffs", "bits", result="uint32"), result="uint32"),
    _bits("brev", metal("reverse_bits"), argument_types=("uint32", "uint64")),
    Function("fma", ("float32(float32, float32, float32)", "float64(float64, float64, float64)"),
             floats(metal("fma"), _f64("fma")), CORRECTLY_ROUNDED),
    Function("cbrt", ("float32(float32)", "float64(float64)"), floats(mathlib("nm_cbrt"), _f64("cbrt")), mathlib_bound(4)),
)


# ---------------------------------------------------------------------------------------------
# metal.libdevice.<name>: the integer functions of numba.cuda's cuda.libdevice (CUDA's libdevice
# __nv_<name>), with libdevice's signatures: the 32-bit forms take int/uint, the `ll` forms 64-bit ones,
# counts are int32. mul24 multiplies the low 24 bits (sign-extended for mul24), keeping the low 32 bits of
# the product; mulhi and mul64hi give the high half of the full product; sad is |x - y| + z.
# ---------------------------------------------------------------------------------------------


def _int_fn(name, signature, routine):
    ctype = computation_type(signature)
    return Function(name, (signature,), {ctype: routine}, EXACT)


LIBDEVICE: tuple[Function, ...] = (
    _int_fn("popc", "int32(int32)", metal("popcount")),
    _int_fn("popcll", "int32(int64)", Routine(METAL, "popcount", result="int64")),
    _int_fn("clz", "int32(int32)", metal("clz")),
    _int_fn("clzll", "int32(int64)", Routine(METAL, "clz", result="int64")),
    _int_fn("ffs", "int32(int32)", Routine(PRELUDE, "nm_ffs", "bits", result="uint32")),
    _int_fn("ffsll", "int32(int64)", Routine(PRELUDE, "nm_ffs", "bits", result="uint32")),
    _int_fn("brev", "uint32(uint32)", metal("reverse_bits")),
    _int_fn("brevll", "uint64(uint64)", metal("reverse_bits")),
    _int_fn("mulhi", "int32(int32, int32)", metal("mulhi")),
    _int_fn("umulhi", "uint32(uint32, uint32)", metal("mulhi")),
    _int_fn("mul64hi", "int64(int64, int64)", metal("mulhi")),
    _int_fn("umul64hi", "uint64(uint64, uint64)", metal("mulhi")),
    _int_fn("mul24", "int32(int32, int32)", prelude("nm_mul24", "libdevice")),
    _int_fn("umul24", "uint32(uint32, uint32)", prelude("nm_mul24", "libdevice")),
    _int_fn("sad", "uint32(int32, int32, uint32)", prelude("nm_sad", "libdevice", ("int32", "int32", "uint32"))),
    _int_fn("usad", "uint32(uint32, uint32, uint32)", prelude("nm_sad", "libdevice")),
)

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
    _half("hmax", prelude("nm_hmax", "fp16"), EXACT, _H2),
    _half("hmin", prelude("nm_hmin", "fp16"), EXACT, _H2),
    *(_half_operator(name, symbol, ("bool(float16, float16)",), EXACT)
      for name, symbol in (("heq", "=="), ("hne", "!="), ("hlt", "<"), ("hle", "<="), ("hgt", ">"), ("hge", ">="))),
    _half("hsqrt", metal("sqrt"), HALF_CORRECTLY_ROUNDED),
    _half("hrsqrt", metal("rsqrt"), HALF_CORRECTLY_ROUNDED),
    _half("hrcp", prelude("nm_hrcp", "fp16"), HALF_CORRECTLY_ROUNDED),
    _half("hceil", metal("ceil"), EXACT),
    _half("hfloor", metal("floor"), EXACT),
    _half("htrunc", metal("trunc"), EXACT),
    _half("hrint", metal("rint"), EXACT),
    *(_half("h" + name, metal(name), HALF_ONE_ULP)
      for name in ("sin", "cos", "exp", "exp2", "exp10", "log", "log2", "log10", "tanh")),
    # numba.cuda's tanh.approx.f16 (relative error 2^-10.987); MSL's precise tanh is within 1 ulp.
    _half("htanh_approx", metal("tanh"), HALF_ONE_ULP),
)

__all__ = ["Routine", "Accuracy", "Function", "MATH", "MATH_BY_NAME", "INTRINSICS", "INTEGERS", "FP16", "LIBDEVICE",
           "argument_types", "result_type", "tuple_items",
           "computation_type", "METAL", "PRELUDE", "MATHLIB", "OPERATOR", "CONSTANT", "SAME", "EMULATED"]
