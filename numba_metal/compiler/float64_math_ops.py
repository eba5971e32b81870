"""The public entry points of the float64 math library (float64_math.metal), one row each.

Data for the compiler's math table: a row names the MSL function, its parameter and result types as spelled
in MSL (`nm_f64` is a float64 value, see float64_ops.py), the `//@@` section of float64_math.metal that
defines it (its `requires:` closure spans the library's files: compiler/mslib/ resolves it),
the Python function it implements (what Numba's @njit computes on float64: C99 Annex F results, values
instead of exceptions), and the maximum error in ulps measured against mpmath by the long run
(tools/math_long_run.py; docs/math-accuracy.md has the inputs, the machine and the command). `ulp` is
0.0 for functions that are exact (correctly rounded or exact by construction), and None where an error in
ulps is not the measure (integer results, predicates, float ** int as Numba's repeated multiplication).
tests/float64/test_fm_library.py checks that the rows and the MSL agree, and that docs/math-accuracy.md
quotes these bounds.
"""

from __future__ import annotations

from typing import NamedTuple


class MathFunction(NamedTuple):
    """One entry point of an MSL math library (this module's and complex_ops.py's rows)."""
    name: str
    params: tuple[str, ...]
    result: str
    section: str
    python: str
    ulp: float | None


F64 = "nm_f64"
_F = MathFunction

FUNCTIONS: tuple[MathFunction, ...] = (
    _F("nm_f64_exp", (F64,), F64, "fm_exp", "math.exp", 0.502),
    _F("nm_f64_exp2", (F64,), F64, "fm_exp", "math.exp2", 0.502),
    _F("nm_f64_expm1", (F64,), F64, "fm_exp", "math.expm1", 0.511),
    _F("nm_f64_sinh", (F64,), F64, "fm_exp", "math.sinh", 0.503),
    _F("nm_f64_cosh", (F64,), F64, "fm_exp", "math.cosh", 0.502),
    _F("nm_f64_tanh", (F64,), F64, "fm_exp", "math.tanh", 0.506),
    _F("nm_f64_log", (F64,), F64, "fm_log", "math.log", 0.500),
    _F("nm_f64_log2", (F64,), F64, "fm_log", "math.log2", 0.500),
    _F("nm_f64_log10", (F64,), F64, "fm_log", "math.log10", 0.500),
    _F("nm_f64_log1p", (F64,), F64, "fm_log", "math.log1p", 0.500),
    _F("nm_f64_pow", (F64, F64), F64, "fm_pow", "math.pow", 0.502),
    _F("nm_f64_powi", (F64, "long"), F64, "fm_pow", "float ** int", None),
    _F("nm_f64_sin", (F64,), F64, "fm_trig", "math.sin", 0.503),
    _F("nm_f64_cos", (F64,), F64, "fm_trig", "math.cos", 0.503),
    _F("nm_f64_tan", (F64,), F64, "fm_trig", "math.tan", 0.503),
    _F("nm_f64_asin", (F64,), F64, "fm_atan", "math.asin", 0.511),
    _F("nm_f64_acos", (F64,), F64, "fm_atan", "math.acos", 0.513),
    _F("nm_f64_atan", (F64,), F64, "fm_atan", "math.atan", 0.505),
    _F("nm_f64_atan2", (F64, F64), F64, "fm_atan", "math.atan2", 0.520),
    _F("nm_f64_asinh", (F64,), F64, "fm_ahyp", "math.asinh", 0.501),
    _F("nm_f64_acosh", (F64,), F64, "fm_ahyp", "math.acosh", 0.501),
    _F("nm_f64_atanh", (F64,), F64, "fm_ahyp", "math.atanh", 0.502),
    _F("nm_f64_cbrt", (F64,), F64, "fm_cbrt", "math.cbrt", 0.517),
    _F("nm_f64_hypot", (F64, F64), F64, "fm_hypot", "math.hypot", 0.500),
    _F("nm_f64_erf", (F64,), F64, "fm_erf", "math.erf", 0.503),
    _F("nm_f64_erfc", (F64,), F64, "fm_erf", "math.erfc", 0.510),
    _F("nm_f64_gamma", (F64,), F64, "fm_gamma", "math.gamma", 0.507),
    _F("nm_f64_lgamma", (F64,), F64, "fm_gamma", "math.lgamma", 0.510),
    _F("nm_f64_remainder", (F64, F64), F64, "fm_misc", "math.remainder", 0.0),
    _F("nm_f64_modf", (F64,), "nm_f64_pair", "fm_misc", "math.modf", 0.0),
    _F("nm_f64_degrees", (F64,), F64, "fm_misc", "math.degrees", None),
    _F("nm_f64_radians", (F64,), F64, "fm_misc", "math.radians", None),
    _F("nm_f64_isclose", (F64, F64, F64, F64, "bool"), "bool", "fm_misc", "np.isclose", None),
    _F("nm_f64_math_isclose", (F64, F64, F64, F64), "bool", "fm_misc", "math.isclose", None),
    _F("nm_f64_round_ndigits", (F64, "long"), F64, "fm_round", "round(x, ndigits)", 0.0),
)
