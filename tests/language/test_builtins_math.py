"""Builtins and the math module inside kernels."""

import math

import numpy as np
import pytest

from numba_metal import metal


@metal.jit
def builtins_kernel(a, b, n, out_f, out_i):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out_f[i, 0] = abs(x)
        out_f[i, 1] = min(x, y)
        out_f[i, 2] = max(x, y, 0.5)
        out_f[i, 3] = round(x, 1)
        out_f[i, 4] = float(n) + x
        out_f[i, 5] = pow(abs(x), 0.5)
        out_i[i, 0] = abs(n - i)
        out_i[i, 1] = min(i, n, 7)
        out_i[i, 2] = max((i, n, 3))        # min/max of a tuple
        out_i[i, 3] = round(x)
        out_i[i, 4] = int(y)
        out_i[i, 5] = bool(i % 3)
        out_i[i, 6] = len(a)
        out_i[i, 7] = pow(i, 2)


def test_builtins_abs_min_max_round_int_float_bool_len_pow():
    a = np.array([-2.25, 1.75, 0.0, 3.05, -0.5, 9.0], dtype=np.float32)
    b = np.array([1.0, -3.5, 0.25, 3.05, 2.0, -9.0], dtype=np.float32)
    n = 4
    of = np.zeros((6, 6), np.float32)
    oi = np.zeros((6, 8), np.int64)
    builtins_kernel[1, 8](a, b, n, of, oi)
    f = np.float32
    ef = [[abs(x), min(x, y), max(x, y, f(0.5)), round(float(x), 1), f(n) + x, abs(x) ** f(0.5)]
          for x, y in zip(a, b)]
    ei = [[abs(n - i), min(i, n, 7), max((i, n, 3)), round(float(x)), int(y), bool(i % 3), 6, i ** 2]
          for i, (x, y) in enumerate(zip(a, b))]
    ef = np.array(ef, np.float32)
    np.testing.assert_allclose(of[:, :5], ef[:, :5], rtol=1e-6)
    # pow: within MSL's precise-math bound (Table 8.1: <= 16 ulp).
    exact_pow = np.array([abs(float(x)) ** 0.5 for x in a])
    assert _ulp_error(of[:, 5], exact_pow).max() <= ULPS["pow"]
    np.testing.assert_array_equal(oi, ei)


def test_min_max_nan_follow_pythons_algorithm():
    @metal.jit
    def k(a, b, out):
        i = metal.grid(1)
        if i < a.size:
            out[i, 0] = min(a[i], b[i])
            out[i, 1] = max(a[i], b[i])

    a = np.array([np.nan, 1.0], np.float32)
    b = np.array([1.0, np.nan], np.float32)
    out = np.zeros((2, 2), np.float32)
    k[1, 2](a, b, out)
    np.testing.assert_array_equal(out, [[min(np.nan, 1.0), max(np.nan, 1.0)],
                                        [min(1.0, np.nan), max(1.0, np.nan)]])


UNARY = ["acos", "asin", "atan", "acosh", "asinh", "atanh", "cos", "sin", "tan", "cosh", "sinh", "tanh",
         "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "erf", "erfc", "gamma", "lgamma",
         "fabs", "degrees", "radians"]
DOMAIN = {"acos": (-1, 1), "asin": (-1, 1), "atanh": (-0.99, 0.99), "acosh": (1, 50), "log": (1e-3, 1e3),
          "log2": (1e-3, 1e3), "log10": (1e-3, 1e3), "log1p": (-0.9, 100), "sqrt": (0, 1e4),
          "gamma": (0.1, 20), "lgamma": (0.1, 50), "exp": (-20, 20), "exp2": (-20, 20), "expm1": (-5, 5),
          "cosh": (-10, 10), "sinh": (-10, 10), "tan": (-1.5, 1.5)}
# Allowed error in float32 ulps: what the MSL specification guarantees for metal:: functions in safe
# mode with precise functions (Table 8.1: correctly rounded sqrt, <= 4 ulp for most, tan 6, atan, atanh and
# tanh 5, pow 16), and the bounds numba-metal's math library documents for the functions MSL lacks
# (docs/math-accuracy.md, asserted by compiler/test_mathlib.py); degrees and radians are one rounded
# multiplication by a rounded constant.
MSL_PRECISE_ULPS = {"acos": 4, "asin": 4, "atan": 5, "acosh": 4, "asinh": 4, "atanh": 5, "cos": 4, "sin": 4,
                    "tan": 6, "cosh": 4, "sinh": 4, "tanh": 5, "exp": 4, "exp2": 4, "log": 4, "log2": 4,
                    "log10": 4, "sqrt": 0.5, "fabs": 0, "pow": 16}
MATHLIB_ULPS = {"erf": 4, "erfc": 4, "expm1": 4, "log1p": 4, "gamma": 8, "lgamma": 8, "degrees": 1, "radians": 1}
ULPS = {**MSL_PRECISE_ULPS, **MATHLIB_ULPS}


def _make_unary_kernel(fn):
    @metal.jit
    def k(a, out):
        i = metal.grid(1)
        if i < a.size:
            out[i] = fn(a[i])
    return k


def _ulp_error(got, exact):
    exact32 = exact.astype(np.float32)
    spacing = np.spacing(np.abs(exact32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@pytest.mark.parametrize("name", UNARY)
def test_math_unary_functions_are_accurate(name):
    fn = getattr(math, name)
    lo, hi = DOMAIN.get(name, (-10, 10))
    a = np.linspace(lo, hi, 257).astype(np.float32)
    out = np.zeros_like(a)
    _make_unary_kernel(fn)[5, 64](a, out)
    exact = np.array([fn(float(x)) for x in a])
    err = _ulp_error(out, exact)
    # lgamma is ill-conditioned near its zeros (x = 1, 2): compare absolutely there.
    near_zero = np.abs(exact) < 1e-3
    assert np.all(np.abs(out[near_zero] - exact[near_zero]) < 1e-6)
    assert err[~near_zero].max() <= ULPS[name], (name, err.max(), a[err.argmax()])


@metal.jit
def math_binary(a, b, out_f, out_b):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out_f[i, 0] = math.atan2(x, y)
        out_f[i, 1] = math.hypot(x, y)
        out_f[i, 2] = math.pow(abs(x), y)
        out_f[i, 3] = math.copysign(x, y)
        out_f[i, 4] = math.fmod(x, y)
        out_f[i, 5] = math.remainder(x, y)
        out_f[i, 6] = math.ldexp(x, 3)
        out_f[i, 7] = math.pi + math.e + math.tau
        out_b[i, 0] = math.isnan(x)
        out_b[i, 1] = math.isinf(y)
        out_b[i, 2] = math.isfinite(x * y)


def test_math_binary_functions_predicates_and_constants():
    a = np.array([1.5, -2.0, 3.25, np.nan, 0.5, -7.0], np.float32)
    b = np.array([0.5, 3.0, -1.5, 1.0, np.inf, 2.0], np.float32)
    of = np.zeros((6, 8), np.float32)
    ob = np.zeros((6, 3), np.bool_)
    math_binary[1, 8](a, b, of, ob)
    ef = []
    for x, y in zip(a.astype(float), b.astype(float)):
        ef.append([math.atan2(x, y), math.hypot(x, y), math.pow(abs(x), y), math.copysign(x, y),
                   math.fmod(x, y) if not math.isinf(y) else x, math.remainder(x, y) if math.isfinite(x) else math.nan,
                   math.ldexp(x, 3), math.pi + math.e + math.tau])
    np.testing.assert_allclose(of, np.array(ef, np.float32), rtol=3e-6, equal_nan=True)
    eb = [[math.isnan(x), math.isinf(y), math.isfinite(np.float32(x) * np.float32(y))] for x, y in zip(a, b)]
    np.testing.assert_array_equal(ob, eb)


def test_math_on_integers_returns_float():
    @metal.jit
    def k(n, out):
        out[0] = math.sqrt(n)
        out[1] = math.floor(n)
        out[2] = math.isnan(n)

    out = np.zeros(3, np.float32)
    k[1, 1](10, out)
    np.testing.assert_allclose(out, [math.sqrt(10), 10, 0], rtol=1e-6)
