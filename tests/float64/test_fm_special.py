"""Special values of float64_math.metal (C99 Annex F, which Numba's @njit gets from the C library), and the
entry points whose results are exact, bit for bit.

Every special operand (signed zeros, infinities, NaN, +-1, subnormals, the thresholds of overflow and
underflow, exact cases) goes through every function and through the same function under Numba's @njit; where
@njit's result is a zero, an infinity, a NaN or an exactly representable value (exact cases such as
pow(2, 10), log(1), cbrt(-8)) ours must be the same bits (NaNs: any NaN; their payloads are not
specified). Elsewhere the two must be within one ulp of each other (both are within about half an ulp of the
exact value; test_fm_accuracy.py measures that). remainder and modf are exact and compared with Python's
math bit for bit, degrees, radians, float ** int and np.isclose with Numba's.
"""

from __future__ import annotations

import itertools
import math
import struct

import numpy as np
import pytest
from numba import njit

import fm_reference as R
from fm_fixtures import mathlib  # noqa: F401  (fixture)

inf, nan = math.inf, math.nan
TINY, DMIN, DMAX = 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 8.0, -8.0, 27.0, 10.0, 100.0, 1000.0, 0.1,
           inf, -inf, nan, -nan, TINY, -TINY, DMIN, -DMIN, DMAX, -DMAX, 1e-300, -1e-300, 1e300, -1e300,
           709.78, 709.79, 710.5, -708.4, -745.13, -745.14, -746.0, 1024.0, -1074.0, -1075.0, -1076.0,
           171.6, 171.7, 172.0, -170.5, -180.5, -184.5, 1e-20, -1e-20, 2.0 ** -28, 2.0 ** -54, 2.0 ** -55,
           math.pi / 2, math.pi, -math.pi, 1e22, 2.0 ** 53, -2.0 ** 53, 2.0 ** 1023, 6.0, -6.0, 27.2, 27.3,
           19.1, 22.0, -40.0, 0.75, 1 + 2.0 ** -52, 1 - 2.0 ** -53, 0.9999999, 4.0]

UNARY = ("exp", "exp2", "expm1", "sinh", "cosh", "tanh", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
         "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "erfc", "gamma", "lgamma")
BINARY_OPERANDS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, inf, -inf, nan, TINY, 1e300, -1e300, 2.5,
                   -2.5, 1e-300, 1 + 2.0 ** -52, 1 - 2.0 ** -53, 1e10, -1e10, 0.1]


def _bits(v: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def _njit_unary(fn):
    ns = {"math": math, "np": np}
    exec(f"def f(xs, out):\n    for i in range(xs.size):\n        out[i] = {fn}(xs[i])\n", ns)
    return njit(error_model="numpy")(ns["f"])


def _njit_binary(expr):
    ns = {"math": math, "np": np}
    exec(f"def f(xs, ys, out):\n    for i in range(xs.size):\n        x = xs[i]\n        y = ys[i]\n"
         f"        out[i] = {expr}\n", ns)
    return njit(error_model="numpy")(ns["f"])


def _agree(got: np.ndarray, ref: np.ndarray, exact):
    """Indices where got and ref disagree: where the exact result is a float64 (exact[k] not None) got must be
    it (or NaN when it is); where ref is a zero, an infinity or NaN got must be the same; within one ulp
    elsewhere."""
    bad = []
    for k, (g, r) in enumerate(zip(got, ref)):
        if exact[k] is not None:
            ok = (math.isnan(g) and math.isnan(exact[k])) or _bits(g) == _bits(exact[k])
        elif math.isnan(r):
            ok = math.isnan(g)
        elif not math.isfinite(r) or r == 0:
            ok = _bits(g) == _bits(r)
        else:
            ok = math.isfinite(g) and abs(g - r) <= math.ulp(r) * (1.0001)
        if not ok:
            bad.append(k)
    return bad


def _exact_float(python: str, args, ref: float):
    """The exact result of python(*args) when it is a float64 (any correct library returns it), else None.
    Infinite and undefined results are taken from Numba's `ref` (the sign of a pole is the C library's)."""
    try:
        exact = R.reference(python, *args)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    if R.mp.isnan(exact) or R.mp.isinf(exact):
        return ref if (math.isnan(ref) or math.isinf(ref)) else None
    if exact == 0:
        return ref if ref == 0 else None        # mpmath has no signed zeros: atan2(0, -0) is pi
    return float(exact) if exact == R.mp.mpf(float(exact)) else None


@pytest.mark.parametrize("fn", UNARY)
def test_special_operands_match_numba(mathlib, fn):  # noqa: F811
    xs = np.array(SPECIAL)
    ref = np.empty_like(xs)
    _njit_unary(f"math.{fn}")(xs, ref)
    got = mathlib.call(f"nm_f64_{fn}", xs)
    exact = [_exact_float(f"math.{fn}", (x,), r) for x, r in zip(SPECIAL, ref)]
    bad = _agree(got, ref, exact)
    assert not bad, [(SPECIAL[k], float(got[k]), float(ref[k])) for k in bad]


def test_cbrt_special_operands_match_numpy(mathlib):  # noqa: F811
    xs = np.array(SPECIAL + [-27.0, 64.0, -0.125, 1e-300 ** 1])
    got = mathlib.call("nm_f64_cbrt", xs)
    ref = np.cbrt(xs)
    exact = [_exact_float("math.cbrt", (x,), r) for x, r in zip(xs, ref)]
    bad = _agree(got, ref, exact)
    assert not bad, [(xs[k], got[k], ref[k]) for k in bad]


@pytest.mark.parametrize("name,expr,python", [("nm_f64_pow", "x ** y", "math.pow"),
                                              ("nm_f64_atan2", "math.atan2(x, y)", "math.atan2"),
                                              ("nm_f64_hypot", "math.hypot(x, y)", "math.hypot")])
def test_special_operand_pairs_match_numba(mathlib, name, expr, python):  # noqa: F811
    pairs = list(itertools.product(BINARY_OPERANDS, BINARY_OPERANDS))
    xs = np.array([p[0] for p in pairs])
    ys = np.array([p[1] for p in pairs])
    ref = np.empty_like(xs)
    _njit_binary(expr)(xs, ys, ref)
    got = mathlib.call(name, xs, ys)
    exact = [_exact_float(python, p, r) for p, r in zip(pairs, ref)]
    bad = _agree(got, ref, exact)
    assert not bad, [(pairs[k], float(got[k]), float(ref[k])) for k in bad]


def test_pow_exact_cases(mathlib):  # noqa: F811
    """C99 F.9.4.4's exact cases and integer powers whose result is a float64."""
    cases = [(x, 0.0) for x in (nan, inf, -inf, 0.0, -3.5)] + [(1.0, y) for y in (nan, inf, -inf, 0.5, -7.0)]
    cases += [(-1.0, inf), (-1.0, -inf), (2.0, 10.0), (2.0, -1074.0), (-2.0, 3.0), (-2.0, -3.0), (3.0, 20.0),
              (10.0, 22.0), (0.5, 1075.0), (-0.0, -3.0), (-0.0, 3.0), (-0.0, -2.0), (-inf, -3.0), (-inf, 3.0),
              (-8.0, 1.0 / 3.0), (4.0, 0.5), (2.0, 1024.0), (2.0, -1075.0)]
    xs = np.array([c[0] for c in cases])
    ys = np.array([c[1] for c in cases])
    ref = np.empty_like(xs)
    _njit_binary("x ** y")(xs, ys, ref)
    got = mathlib.call("nm_f64_pow", xs, ys)
    bad = [k for k in range(len(cases)) if not (math.isnan(ref[k]) and math.isnan(got[k])) and _bits(got[k]) != _bits(ref[k])]
    assert not bad, [(cases[k], got[k], ref[k]) for k in bad]


def test_remainder_and_modf_are_pythons_bit_for_bit(mathlib):  # noqa: F811
    rng = np.random.default_rng(11)
    pairs = list(itertools.product(BINARY_OPERANDS, BINARY_OPERANDS))
    xs = np.concatenate([[p[0] for p in pairs], rng.standard_normal(4000) * np.exp2(rng.uniform(-60, 60, 4000)),
                         rng.integers(-1000, 1000, 2000) + 0.5])
    ys = np.concatenate([[p[1] for p in pairs], rng.standard_normal(4000) * np.exp2(rng.uniform(-60, 60, 4000)),
                         rng.integers(1, 10, 2000).astype(np.float64)])

    def remainder(x, y):
        try:
            return math.remainder(x, y)
        except ValueError:
            return nan

    got = mathlib.call("nm_f64_remainder", xs, ys)
    bad = [k for k in range(len(xs)) if not (math.isnan(got[k]) and math.isnan(remainder(xs[k], ys[k])))
           and _bits(got[k]) != _bits(remainder(xs[k], ys[k]))]
    assert not bad, [(xs[k], ys[k], got[k], remainder(xs[k], ys[k])) for k in bad[:10]]
    frac, whole = mathlib.call("nm_f64_modf", xs)
    for k, x in enumerate(xs):
        f, w = math.modf(x)
        assert (math.isnan(f) and math.isnan(frac[k])) or _bits(frac[k]) == _bits(f), (x, frac[k], f)
        assert (math.isnan(w) and math.isnan(whole[k])) or _bits(whole[k]) == _bits(w), (x, whole[k], w)


def test_degrees_radians_powi_isclose_are_numbas_bit_for_bit(mathlib):  # noqa: F811
    rng = np.random.default_rng(12)
    xs = np.concatenate([np.array(SPECIAL), rng.standard_normal(5000) * np.exp2(rng.uniform(-1000, 1000, 5000))])
    for fn in ("degrees", "radians"):
        ref = np.empty_like(xs)
        _njit_unary(f"math.{fn}")(xs, ref)
        got = mathlib.call(f"nm_f64_{fn}", xs)
        assert np.array_equal(got.view(np.uint64), ref.view(np.uint64)) or np.array_equal(
            np.isnan(got), np.isnan(ref)) and np.array_equal(got[~np.isnan(got)].view(np.uint64),
                                                             ref[~np.isnan(ref)].view(np.uint64)), fn

    @njit(error_model="numpy")
    def powi(x, n):
        return x ** n

    bases = np.concatenate([xs[:3000], rng.uniform(-2, 2, 3000)])
    ns = rng.integers(-70000, 70000, bases.size)
    ns[::3] = rng.integers(-40, 40, ns[::3].size)
    got = mathlib.call("nm_f64_powi", bases, ns)
    checked = 0
    for x, n, g in zip(bases, ns, got):
        try:
            r = powi(x, n)
        except ZeroDivisionError:       # Numba raises where the product underflowed to zero; kernels divide
            continue
        assert _bits(g) == _bits(r) or (math.isnan(g) and math.isnan(r)), (x, n, g, r)
        checked += 1
    assert checked > 4000
    zeros = mathlib.call("nm_f64_powi", np.array([0.0, -0.0, -0.0, 0.0, -0.0]), np.array([-1, -1, -2, 3, 3]))
    assert [_bits(v) for v in zeros] == [_bits(v) for v in (inf, -inf, inf, 0.0, -0.0)]

    @njit
    def isclose(a, b, rtol, atol, equal_nan, out):
        for i in range(a.size):
            out[i] = np.isclose(a[i], b[i], rtol[i], atol[i], equal_nan[i])

    a = np.concatenate([np.array(BINARY_OPERANDS * len(BINARY_OPERANDS)), rng.standard_normal(3000)])
    b = np.concatenate([np.repeat(BINARY_OPERANDS, len(BINARY_OPERANDS)), rng.standard_normal(3000) * 1.000001])
    b[-3000::2] = a[-3000::2] * (1 + rng.uniform(-2e-5, 2e-5, 1500))
    rtol = rng.choice([1e-5, 0.0, 1e-9], a.size)
    atol = rng.choice([1e-8, 0.0, 1.0], a.size)
    equal_nan = rng.integers(0, 2, a.size).astype(np.bool_)
    ref = np.empty(a.size, dtype=np.bool_)
    isclose(a, b, rtol, atol, equal_nan, ref)
    got = mathlib.call("nm_f64_isclose", a, b, rtol, atol, equal_nan)
    assert np.array_equal(got, ref)
