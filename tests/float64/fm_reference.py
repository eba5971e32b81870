"""High-precision references (mpmath) for the float64 math library, and errors in ulps.

`reference(fn, *args)` returns the exact result of the Python function a row implements as an mpmath number
(or a float64 for special results: infinities, NaN, signed zeros), computed with enough precision that its
own error is negligible against a float64 ulp. `ulp_error(got, exact)` is |got - exact| / ulp(exact) with
ulp(v) = 2^(max(floor(log2 |v|), -1022) - 52), the distance between float64 numbers around v (Muller's
definition), so a correctly rounded result is within 0.5.
"""

from __future__ import annotations

import math

import mpmath as mp

mp.mp.prec = 96

_INF = math.inf


def _gamma(x):
    if x <= 0 and x == mp.floor(x):
        return mp.nan
    return mp.gamma(x)


def _lgamma(x):
    """log |Gamma(x)|, with 128 more bits: next to the zeros at 1 and 2 the logarithm cancels that much."""
    if x <= 0 and x == mp.floor(x):
        return mp.inf
    with mp.workprec(mp.mp.prec + 128):
        return +(mp.log(abs(mp.gamma(x))) if x < 170 else mp.loggamma(x).real)


REFERENCES = {
    "math.exp": mp.exp,
    "math.exp2": lambda x: mp.power(2, x),
    "math.expm1": mp.expm1,
    "math.sinh": mp.sinh,
    "math.cosh": mp.cosh,
    "math.tanh": mp.tanh,
    "math.log": mp.log,
    "math.log2": lambda x: mp.log(x, 2),
    "math.log10": mp.log10,
    "math.log1p": mp.log1p,
    "math.pow": mp.power,
    "math.sin": mp.sin,
    "math.cos": mp.cos,
    "math.tan": mp.tan,
    "math.asin": mp.asin,
    "math.acos": mp.acos,
    "math.atan": mp.atan,
    "math.atan2": mp.atan2,
    "math.asinh": mp.asinh,
    "math.acosh": mp.acosh,
    "math.atanh": mp.atanh,
    "math.erf": mp.erf,
    "math.erfc": mp.erfc,
    "math.gamma": _gamma,
    "math.lgamma": _lgamma,
    "math.cbrt": lambda x: mp.sign(x) * mp.cbrt(abs(x)),
    "math.hypot": lambda x, y: mp.sqrt(x * x + y * y),
}


def ulp_of(v) -> float:
    """The float64 ulp at the exact value v (an mpmath number or a float): 2^(max(e, -1022) - 52) for
    2^e <= |v| < 2^(e+1)."""
    f = abs(float(v))
    if f == 0:
        return 2.0 ** -1074
    m, e = math.frexp(f)
    e -= 1
    if m == 0.5 and abs(mp.mpf(v)) < f:     # v rounded up to the power of two f
        e -= 1
    return 2.0 ** (max(e, -1022) - 52)


_TOP = mp.mpf(2) ** 1024 * (1 - mp.mpf(2) ** -54)      # values at or above round to infinity


def ulp_error(got: float, exact) -> float:
    """Error of the float64 `got` against the exact value, in ulps of the exact value. Exact values beyond
    the float64 range count as infinity (0 if got is that infinity)."""
    if math.isnan(got):
        return 0.0 if mp.isnan(exact) else math.inf
    if mp.isnan(exact):
        return math.inf
    if mp.isinf(exact) or abs(exact) >= _TOP:
        return 0.0 if math.isinf(got) and (got > 0) == (exact > 0) else math.inf
    if math.isinf(got):
        return math.inf
    return float(abs(mp.mpf(got) - exact) / ulp_of(exact))     # in mpmath: the difference may be below 2^-1074


def reference(python: str, *args):
    """The exact value (NaN where the real function is undefined: mpmath would give a complex number).
    pow is evaluated with log2|y| more bits: mpmath's x**y at a fixed precision loses about that many bits
    of y log x (so x = 1 - 2^-43, y = 2^52 would come out half an ulp off at 96 bits)."""
    fn = REFERENCES[python]
    extra = 0
    if python == "math.pow" and math.isfinite(args[1]) and args[1] != 0:
        extra = max(0, math.frexp(args[1])[1]) + 32
    with mp.workprec(mp.mp.prec + extra):
        v = fn(*[mp.mpf(a) for a in args])
    if isinstance(v, mp.mpc):
        return v.real if v.imag == 0 else mp.nan
    return v
