"""The public entry points of the complex library (complex.metal), one row each.

Data for the compiler's operator and math tables, as float64_math_ops.py: the MSL function, its parameter
and result types as spelled in MSL (`nm_c128` is a complex128, a struct of two `nm_f64`; complex64 is MSL's
`float2`, .x real and .y imaginary), the `//@@` section that defines it (resolve its `requires:` closure with
compiler/mslib/), the Python operation it implements and its measured maximum error: for
cmath functions the largest error of either part in ulps of the larger part of the exact result (so a part
far smaller than the other is judged against the whole number), from the long run
(tools/math_long_run.py; docs/math-accuracy.md). `ulp` is 0.0 for exact results and None where an
error in ulps is not the measure (arithmetic checked bit for bit against Numba and NumPy, predicates).
complex64 figures are measured on the CPU reference device (glibc's float32 functions behind metal::);
an Apple GPU's metal:: functions have MSL's precise-mode bounds instead.
"""

from __future__ import annotations

from numba_metal.compiler.float64_math_ops import MathFunction

C128 = "nm_c128"
C64 = "float2"
F64 = "nm_f64"
_F = MathFunction

_CMATH = ("exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
          "asinh", "acosh", "atanh")
# Measured maximum errors of the cmath functions (the long run), complex128 in float64 ulps and complex64 in
# float32 ulps of the larger part of the exact result.
_C128_ULP = {
    "acos": 0.510, "acosh": 0.508, "asin": 0.510, "asinh": 0.506, "atan": 0.509, "atanh": 0.508,
    "cos": 0.505, "cosh": 0.505, "exp": 0.504, "log": 0.524, "log10": 0.516, "sin": 0.505, "sinh": 0.505,
    "sqrt": 0.502, "tan": 0.507, "tanh": 0.506
}
_C64_ULP = {
    "acos": 3.326, "acosh": 2.898, "asin": 3.410, "asinh": 3.225, "atan": 2.883, "atanh": 2.780,
    "cos": 2.622, "cosh": 2.789, "exp": 1.905, "log": 1.973, "log10": 2.641, "sin": 2.668, "sinh": 2.706,
    "sqrt": 1.525, "tan": 5.780, "tanh": 5.082
}

FUNCTIONS: tuple[MathFunction, ...] = (
    _F("nm_c128_make", (F64, F64), C128, "c128_base", "complex(re, im)", 0.0),
    _F("nm_c128_from_f64", (F64,), C128, "c128_base", "complex(x)", 0.0),
    _F("nm_c128_real", (C128,), F64, "c128_base", "z.real", 0.0),
    _F("nm_c128_imag", (C128,), F64, "c128_base", "z.imag", 0.0),
    _F("nm_c128_conj", (C128,), C128, "c128_base", "z.conjugate()", 0.0),
    _F("nm_c128_neg", (C128,), C128, "c128_base", "-z", 0.0),
    _F("nm_c128_add", (C128, C128), C128, "c128_base", "a + b", None),
    _F("nm_c128_sub", (C128, C128), C128, "c128_base", "a - b", None),
    _F("nm_c128_mul", (C128, C128), C128, "c128_base", "a * b", None),
    _F("nm_c128_div", (C128, C128), C128, "c128_base", "a / b", None),
    _F("nm_c128_np_divide", (C128, C128), C128, "c128_base", "np.divide", None),
    _F("nm_c128_eq", (C128, C128), "bool", "c128_base", "a == b", None),
    _F("nm_c128_ne", (C128, C128), "bool", "c128_base", "a != b", None),
    _F("nm_c128_isnan", (C128,), "bool", "c128_base", "cmath.isnan", None),
    _F("nm_c128_isinf", (C128,), "bool", "c128_base", "cmath.isinf", None),
    _F("nm_c128_isfinite", (C128,), "bool", "c128_base", "cmath.isfinite", None),
    _F("nm_c128_abs", (C128,), F64, "c128_abs", "abs(z)", 0.5),
    *(_F(f"nm_c128_{fn}", (C128,), C128, "c128_math", f"cmath.{fn}", _C128_ULP[fn]) for fn in _CMATH),
    _F("nm_c128_phase", (C128,), F64, "c128_math", "cmath.phase", None),
    _F("nm_c128_polar", (C128,), "nm_f64_pair", "c128_math", "cmath.polar", None),
    _F("nm_c128_rect", (F64, F64), C128, "c128_math", "cmath.rect", None),
    _F("nm_c128_pow", (C128, C128), C128, "c128_pow", "a ** b", None),
    _F("nm_c64_make", ("float", "float"), C64, "c64_base", "complex(re, im)", 0.0),
    _F("nm_c64_conj", (C64,), C64, "c64_base", "z.conjugate()", 0.0),
    _F("nm_c64_mul", (C64, C64), C64, "c64_base", "a * b", None),
    _F("nm_c64_div", (C64, C64), C64, "c64_base", "a / b", None),
    _F("nm_c64_np_divide", (C64, C64), C64, "c64_base", "np.divide", None),
    _F("nm_c64_abs", (C64,), "float", "c64_base", "abs(z)", None),
    _F("nm_c64_isnan", (C64,), "bool", "c64_base", "cmath.isnan", None),
    _F("nm_c64_isinf", (C64,), "bool", "c64_base", "cmath.isinf", None),
    _F("nm_c64_isfinite", (C64,), "bool", "c64_base", "cmath.isfinite", None),
    *(_F(f"nm_c64_{fn}", (C64,), C64, "c64_math", f"cmath.{fn}", _C64_ULP[fn]) for fn in _CMATH),
    _F("nm_c64_phase", (C64,), "float", "c64_math", "cmath.phase", None),
    _F("nm_c64_polar", (C64,), C64, "c64_math", "cmath.polar", None),
    _F("nm_c64_rect", ("float", "float"), C64, "c64_math", "cmath.rect", None),
    _F("nm_c64_pow", (C64, C64), C64, "c64_pow", "a ** b", None),
)
