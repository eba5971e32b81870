"""One case per float64_math.metal entry point: the regions its test inputs come from, how its error is
judged, and its references. The CI tests (test_fm_*.py) and the long run (tools/math_long_run.py) both use these.

Errors are in ulps of the exact result (fm_reference.ulp_error, mpmath). `measure` judges every input with
mpmath; with filtered=True (the long run) every input is first measured against the x87 80-bit long double
functions of NumPy (64-bit significands, errors below 2^-62 relative, so each estimate is within 0.002 ulp of
the truth), and mpmath re-measures every input whose estimate is within SLACK of the largest estimate (and
every input the estimate cannot judge): no other input can exceed the largest of those, so the reported
maxima are mpmath's. lgamma is judged absolutely (in units of 2^-52) where x < 0 and |lgamma(x)| < 1, next to its
negative zeros, where no libm has a relative bound.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np

import fm_reference as R
from numba_metal.compiler.float64_math_ops import FUNCTIONS

ROWS = {row.name: row for row in FUNCTIONS}
SLACK = 0.01                # more than twice the estimates' error (0.002 ulp at most)
LD = np.longdouble


class Region(NamedTuple):
    label: str
    make: Callable          # (rng, n) -> list of float64 operand arrays


class MathCase(NamedTuple):
    name: str
    regions: tuple[Region, ...]
    ld: Callable | None = None          # long double reference, vectorised, or None (mpmath only)
    absolute: Callable | None = None    # (inputs, exact) -> whether to judge absolutely


def _u(a, b):
    return lambda rng, n: rng.uniform(a, b, n)


def _lu(lo, hi, signed=False):
    """|x| = 2^U(lo, hi) (log-uniform over binades), optionally with random signs."""
    def make(rng, n):
        v = np.exp2(rng.uniform(lo, hi, n))
        return v * rng.choice([-1.0, 1.0], n) if signed else v
    return make


def _near(centre, lo, hi, signed=True):
    """centre +- 2^U(lo, hi)."""
    def make(rng, n):
        d = np.exp2(rng.uniform(lo, hi, n))
        return centre + (d * rng.choice([-1.0, 1.0], n) if signed else d)
    return make


def _one(gen):
    return lambda rng, n: [gen(rng, n)]


def _two(gx, gy):
    return lambda rng, n: [gx(rng, n), gy(rng, n)]


def _r(label, gen):
    return Region(label, _one(gen))


def _multiples(step, kmax):
    """k step rounded to float64, k < kmax: the hardest inputs of an argument reduction."""
    return lambda rng, n: rng.integers(1, kmax, n).astype(np.float64) * step


def _pow_moderate(rng, n):
    x = np.exp2(rng.uniform(-1074, 1024, n))
    lim = 700.0 / np.abs(np.log(x))
    return [x, rng.uniform(-1, 1, n) * lim]


def _pow_near_one(rng, n):
    x = 1 + np.exp2(rng.uniform(-52, -4, n)) * rng.choice([-1.0, 1.0], n)
    lim = 700.0 / np.abs(np.log(x))
    return [x, rng.uniform(-1, 1, n) * lim]


def _pow_negative_integer(rng, n):
    y = rng.integers(-60, 60, n).astype(np.float64)
    return [-np.exp2(rng.uniform(-10, 10, n)), y]


def _pow_exact(rng, n):
    return [rng.integers(1, 40, n).astype(np.float64), rng.integers(-12, 12, n).astype(np.float64)]


def _worst_reductions(rng, n):
    """float64 numbers closest to multiples of pi/2 (Muller, Elementary Functions, table 11.1) and their
    neighbours."""
    base = np.array([6381956970095103.0 * 2.0 ** 797, 5261692873635770.0 * 2.0 ** 499,
                     8811426612883794.0 * 2.0 ** 46, 3843102117926611.0 * 2.0 ** -52 * 2.0 ** 1],
                    dtype=np.float64)
    v = base[rng.integers(0, len(base), n)]
    return np.nextafter(v, np.where(rng.integers(0, 2, n) == 0, 0.0, np.inf)) if n > len(base) else v


def _gamma_negative(rng, n):
    x = -rng.uniform(0, 184, n)
    return np.where(x == np.round(x), x - 0.5, x)


def _lgamma_negative(rng, n):
    x = -rng.uniform(0, 60, n)
    return np.where(x == np.round(x), x - 0.5, x)


def _lgamma_abs_region(inputs, exact):
    return inputs[0] < 0 and abs(exact) < 1


LN2 = math.log(2)

CASES = {c.name: c for c in (
    MathCase("nm_f64_exp", (
        _r("full domain", _u(-745.2, 709.8)), _r("|x| in [2^-60, 1]", _lu(-60, 0, True)),
        _r("subnormal results", _u(-745.2, -708.3)), _r("near overflow", _u(700, 709.79)),
        _r("near k ln2/128", lambda rng, n: rng.integers(-137000, 131000, n) * (LN2 / 128)),
    ), np.exp),
    MathCase("nm_f64_exp2", (
        _r("full domain", _u(-1075, 1024)), _r("|x| in [2^-60, 1]", _lu(-60, 0, True)),
        _r("near k/128", lambda rng, n: rng.integers(-137000, 131000, n) / 128 + rng.uniform(-1e-9, 1e-9, n)),
    ), np.exp2),
    MathCase("nm_f64_expm1", (
        _r("[-40, 709.8]", _u(-40, 709.8)), _r("|x| in [2^-60, 1]", _lu(-60, 0, True)),
        _r("near k ln2", lambda rng, n: rng.integers(-58, 1024, n) * LN2 + rng.uniform(-0.01, 0.01, n)),
    ), np.expm1),
    MathCase("nm_f64_sinh", (
        _r("[-711, 711]", _u(-711, 711)), _r("|x| in [2^-30, 2]", _lu(-30, 1, True)),
    ), np.sinh),
    MathCase("nm_f64_cosh", (
        _r("[-711, 711]", _u(-711, 711)), _r("|x| in [2^-30, 2]", _lu(-30, 1, True)),
    ), np.cosh),
    MathCase("nm_f64_tanh", (
        _r("[-22, 22]", _u(-22, 22)), _r("|x| in [2^-30, 2]", _lu(-30, 1, True)),
    ), np.tanh),
    MathCase("nm_f64_log", (
        _r("all positive numbers", _lu(-1074, 1024)), _r("1 +- 2^-k", _near(1.0, -53, -1)),
        _r("[0.5, 2]", _u(0.5, 2)),
    ), np.log),
    MathCase("nm_f64_log2", (
        _r("all positive numbers", _lu(-1074, 1024)), _r("1 +- 2^-k", _near(1.0, -53, -1)),
    ), np.log2),
    MathCase("nm_f64_log10", (
        _r("all positive numbers", _lu(-1074, 1024)), _r("1 +- 2^-k", _near(1.0, -53, -1)),
    ), np.log10),
    MathCase("nm_f64_log1p", (
        _r("x in (-1, 2^1024)", lambda rng, n: np.where(rng.integers(0, 2, n) == 0, np.exp2(rng.uniform(-60, 1024, n)),
                                                          -np.exp2(rng.uniform(-60, 0, n)) * (1 - 2.0 ** -53))),
        _r("|x| in [2^-60, 1]", _lu(-60, 0, True)), _r("near -1", _near(-1.0, -53, -1, signed=False)),
    ), np.log1p),
    MathCase("nm_f64_pow", (
        Region("|y log x| < 700", _pow_moderate), Region("x = 1 +- 2^-k", _pow_near_one),
        Region("negative x, integer y", _pow_negative_integer), Region("small integers (exact)", _pow_exact),
        Region("over/underflow edge", lambda rng, n: [np.exp2(rng.uniform(-4, 4, n)),
                                                       rng.choice([-1.0, 1.0], n) * 709.5 / np.log(np.exp2(rng.uniform(-4, 4, n)))]),
    ), np.power),
    MathCase("nm_f64_sin", (
        _r("[-10, 10]", _u(-10, 10)), _r("|x| in [2^-26, 2^1024)", _lu(-26, 1024, True)),
        _r("near k pi/2, k < 2^20", _multiples(math.pi / 2, 1 << 20)), _r("hardest reductions", _worst_reductions),
    ), np.sin),
    MathCase("nm_f64_cos", (
        _r("[-10, 10]", _u(-10, 10)), _r("|x| in [2^-26, 2^1024)", _lu(-26, 1024, True)),
        _r("near k pi/2, k < 2^20", _multiples(math.pi / 2, 1 << 20)), _r("hardest reductions", _worst_reductions),
    ), np.cos),
    MathCase("nm_f64_tan", (
        _r("[-10, 10]", _u(-10, 10)), _r("|x| in [2^-26, 2^1024)", _lu(-26, 1024, True)),
        _r("near k pi/2, k < 2^20", _multiples(math.pi / 2, 1 << 20)), _r("hardest reductions", _worst_reductions),
    ), np.tan),
    MathCase("nm_f64_asin", (
        _r("[-1, 1]", _u(-1, 1)), _r("1 - 2^-k", lambda rng, n: (1 - np.exp2(rng.uniform(-53, -1, n))) * rng.choice([-1.0, 1.0], n)),
        _r("|x| in [2^-30, 1/2]", _lu(-30, -1, True)),
    ), np.arcsin),
    MathCase("nm_f64_acos", (
        _r("[-1, 1]", _u(-1, 1)), _r("1 - 2^-k", lambda rng, n: (1 - np.exp2(rng.uniform(-53, -1, n))) * rng.choice([-1.0, 1.0], n)),
        _r("|x| in [2^-30, 1/2]", _lu(-30, -1, True)),
    ), np.arccos),
    MathCase("nm_f64_atan", (
        _r("|x| in [2^-30, 2^60]", _lu(-30, 60, True)), _r("[-2, 2]", _u(-2, 2)),
    ), np.arctan),
    MathCase("nm_f64_atan2", (
        Region("all magnitudes", _two(_lu(-1074, 1024, True), _lu(-1074, 1024, True))),
        Region("[-2, 2]^2", _two(_u(-2, 2), _u(-2, 2))),
        Region("close exponents", lambda rng, n: [_lu(-10, 10, True)(rng, n), _lu(-10, 10, True)(rng, n)]),
    ), np.arctan2),
    MathCase("nm_f64_asinh", (
        _r("all magnitudes", _lu(-28, 1024, True)), _r("[-2, 2]", _u(-2, 2)),
    ), np.arcsinh),
    MathCase("nm_f64_acosh", (
        _r("[1, 2^1024)", _lu(0, 1024)), _r("1 + 2^-k", _near(1.0, -52, 1, signed=False)),
    ), np.arccosh),
    MathCase("nm_f64_atanh", (
        _r("(-1, 1)", _u(-1, 1)), _r("1 - 2^-k", lambda rng, n: (1 - np.exp2(rng.uniform(-53, -1, n))) * rng.choice([-1.0, 1.0], n)),
        _r("|x| in [2^-28, 1/2]", _lu(-28, -1, True)),
    ), np.arctanh),
    MathCase("nm_f64_cbrt", (
        _r("all magnitudes", _lu(-1074, 1024, True)), _r("[-10, 10]", _u(-10, 10)),
        _r("integer cubes", lambda rng, n: rng.integers(-200000, 200000, n).astype(np.float64) ** 3),
    ), np.cbrt),
    MathCase("nm_f64_hypot", (
        Region("all magnitudes", _two(_lu(-1074, 1024, True), _lu(-1074, 1024, True))),
        Region("close exponents", _two(_u(-10, 10), _u(-10, 10))),
        Region("integers", _two(lambda rng, n: rng.integers(0, 1 << 26, n).astype(np.float64),
                                lambda rng, n: rng.integers(0, 1 << 26, n).astype(np.float64))),
    ), np.hypot),
    MathCase("nm_f64_erf", (
        _r("[-6, 6]", _u(-6, 6)), _r("|x| in [2^-60, 2]", _lu(-60, 1, True)), _r("near 1", _near(1.0, -30, -2)),
    )),
    MathCase("nm_f64_erfc", (
        _r("[-6, 27.3]", _u(-6, 27.3)), _r("|x| in [2^-60, 2]", _lu(-60, 1, True)),
        _r("subnormal results [26.5, 27.3]", _u(26.5, 27.3)), _r("near 1", _near(1.0, -30, -2)),
    )),
    MathCase("nm_f64_gamma", (
        _r("(0, 171.7)", _u(0, 171.7)), _r("[-3, 3]", _u(-3, 3)), _r("(-184, 0)", _gamma_negative),
        _r("|x| in [2^-60, 1]", _lu(-60, 0, True)), _r("near integers", lambda rng, n: np.round(rng.uniform(-20, 30, n))
                                                             + np.exp2(rng.uniform(-40, -3, n)) * rng.choice([-1.0, 1.0], n)),
    )),
    MathCase("nm_f64_lgamma", (
        _r("(0, 2^1024)", _lu(-1074, 1024)), _r("[0.5, 3]", _u(0.5, 3)), _r("near 1", _near(1.0, -52, -2)),
        _r("near 2", _near(2.0, -51, -2)), _r("(-60, 0)", _lgamma_negative),
    ), absolute=_lgamma_abs_region),
)}

# Entry points with exact results checked bit for bit against Python or Numba (test_fm_exact.py).
EXACT = ("nm_f64_remainder", "nm_f64_modf", "nm_f64_degrees", "nm_f64_radians", "nm_f64_powi", "nm_f64_isclose")


def inputs(case: MathCase, rng, n: int):
    """n inputs per region, as a list of (region label, operand arrays)."""
    return [(region.label, region.make(rng, n)) for region in case.regions]


def _candidates(estimates: np.ndarray) -> np.ndarray:
    """The inputs to re-measure with mpmath: estimates within SLACK of the largest finite one, and the unsure."""
    finite = np.isfinite(estimates)
    top = estimates[finite].max() if finite.any() else 0.0
    return np.nonzero(~finite | (estimates >= top - SLACK))[0]


def _ld_ulp_errors(got, args, ld):
    with np.errstate(all="ignore"):
        ref = ld(*[a.astype(LD) for a in args])
        mant, exp = np.frexp(ref)
        ulp = np.ldexp(np.ones_like(ref), np.maximum(exp - 1, -1022) - 52)
        err = np.abs(got.astype(LD) - ref) / ulp
    # where the long double result is not a finite nonzero number, or beyond float64, ask mpmath
    unsure = ~np.isfinite(ref) | (ref == 0) | (np.abs(ref) > LD(1.7e308)) | ~np.isfinite(got)
    return np.where(unsure, np.inf, err).astype(np.float64)


class Result(NamedTuple):
    label: str
    count: int
    max_ulp: float
    at: tuple
    max_abs: float              # absolute error in units of 2^-52 where judged absolutely (else 0)
    abs_at: tuple


def merge(a: Result, b: Result) -> Result:
    """Two measurements of one region as one."""
    worst = a if a.max_ulp >= b.max_ulp else b
    worst_abs = a if a.max_abs >= b.max_abs else b
    return Result(a.label, a.count + b.count, worst.max_ulp, worst.at, worst_abs.max_abs, worst_abs.abs_at)


def measure(lib, case: MathCase, label: str, args, filtered: bool = False) -> Result:
    """Errors of entry point case.name on the operand arrays args."""
    row = ROWS[case.name]
    got = lib.call(case.name, *args)
    n = len(got)
    if filtered and case.ld is not None:
        candidates = _candidates(_ld_ulp_errors(got, args, case.ld))
    else:
        candidates = range(n)
    worst, at, worst_abs, abs_at = 0.0, (), 0.0, ()
    for k in candidates:
        xs = tuple(float(a[k]) for a in args)
        exact = R.reference(row.python, *xs)
        if case.absolute is not None and case.absolute(xs, exact):
            e = float(abs(R.mp.mpf(float(got[k])) - exact) * 2 ** 52) if math.isfinite(got[k]) else math.inf
            if e > worst_abs:
                worst_abs, abs_at = e, xs
            continue
        e = R.ulp_error(float(got[k]), exact)
        if e > worst:
            worst, at = e, xs
    return Result(label, n, worst, at, worst_abs, abs_at)
