"""One case per cmath entry point of complex.metal (complex128 and complex64): the regions its test inputs come
from and how its error is judged. The CI tests (test_cx_*.py) and the long run (tools/math_long_run.py)
use these.

The error of a complex result is the larger error of its two parts in ulps of the larger part of the exact
result (ulps of float64 for complex128, of float32 for complex64): a part far smaller than the other is judged
against the whole number, the usual normwise measure of complex libraries. `measure` judges every input with
mpmath; with filtered=True (the long run) inputs are first measured against NumPy's long double complex
functions (complex128; their error is below 2^-62, 0.002 ulp) or NumPy's complex128 functions (complex64; below
2^-50, far below a float32 ulp), and mpmath re-measures those within fm_suite.SLACK of the largest estimate, as
fm_suite.measure does. complex64 inputs are normal
float32 numbers and results whose larger part is below FLT_MIN are not judged: Apple GPUs (and the CPU device)
flush float32 subnormals.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import mpmath as mp
import numpy as np

from fm_suite import _candidates
from numba_metal.compiler.complex_ops import FUNCTIONS

ROWS = {row.name: row for row in FUNCTIONS}
FLT_MIN = 2.0 ** -126

_NP = {"exp": "exp", "log": "log", "log10": "log10", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
       "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
       "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh"}
_MP = {"exp": mp.exp, "log": mp.log, "log10": mp.log10, "sqrt": mp.sqrt, "sin": mp.sin, "cos": mp.cos,
       "tan": mp.tan, "asin": mp.asin, "acos": mp.acos, "atan": mp.atan, "sinh": mp.sinh, "cosh": mp.cosh,
       "tanh": mp.tanh, "asinh": mp.asinh, "acosh": mp.acosh, "atanh": mp.atanh}


class Region(NamedTuple):
    label: str
    make: Callable          # (rng, n) -> complex128 array


class CmathCase(NamedTuple):
    name: str
    fn: str                 # cmath name
    single: bool            # complex64
    regions: tuple[Region, ...]


def _box(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n) + 1j * rng.uniform(lo, hi, n)


def _logpolar(lo, hi):
    """|z| = 2^U(lo, hi), uniform angle."""
    def make(rng, n):
        r = np.exp2(rng.uniform(lo, hi, n))
        return r * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    return make


def _near_unit(rng, n):
    return (1 + np.exp2(rng.uniform(-50, -2, n)) * rng.choice([-1.0, 1.0], n)) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))


def _near_cuts(rng, n):
    """Close to the real and imaginary axes beyond +-1 (the branch cuts of the inverse functions)."""
    x = rng.uniform(-4, 4, n)
    y = np.exp2(rng.uniform(-60, -2, n)) * rng.choice([-1.0, 1.0], n)
    swap = rng.integers(0, 2, n) == 0
    return np.where(swap, y + 1j * x, x + 1j * y)


def _regions(fn, single):
    big = 120 if single else 1000
    wide = (Region("|z| in [2^-20, 2^20]", _logpolar(-20, 20)), Region("[-4, 4]^2", _box(-4, 4)))
    if fn in ("exp", "sin", "cos", "tan", "sinh", "cosh", "tanh"):
        lim = 85.0 if single else 705.0
        return wide[1:] + (Region("large parts", _box(-lim, lim)), Region("near the axes", _near_cuts))
    if fn in ("log", "log10", "sqrt"):
        return wide + (Region("all magnitudes", _logpolar(-big, big)), Region("near |z| = 1", _near_unit))
    return wide + (Region("all magnitudes", _logpolar(-big, big)), Region("near the cuts", _near_cuts),
                   Region("near |z| = 1", _near_unit))


CASES = {}
for _row in FUNCTIONS:
    _fn = _row.python.split(".")[-1]
    if _row.python.startswith("cmath.") and _fn in _MP:
        CASES[_row.name] = CmathCase(_row.name, _fn, _row.name.startswith("nm_c64_"),
                                     _regions(_fn, _row.name.startswith("nm_c64_")))


def _ulp(v: float, single: bool) -> float:
    f = abs(v)
    if single:
        if f == 0:
            return 2.0 ** -149
        m, e = math.frexp(f)
        return 2.0 ** (max(e - 1, -126) - 23)
    if f == 0:
        return 2.0 ** -1074
    m, e = math.frexp(f)
    return 2.0 ** (max(e - 1, -1022) - 52)


def _exact(fn, z):
    """mpmath's value at a working precision that it has been checked to hold: mpmath's complex functions
    do not raise their own precision (asin of a tiny z, say, comes back with few correct digits), so tiny
    arguments start with twice their binary exponent of extra bits, and the value is recomputed with 64 more
    bits until two agree to 2^-80."""
    size = max(abs(z.real), abs(z.imag))
    prec = 120 + (2 * max(0, -math.frexp(size)[1]) if size > 0 else 0)    # mpmath cancels in asin(tiny z)
    with mp.workprec(prec):
        w = _MP[fn](mp.mpc(z.real, z.imag))
    for _ in range(40):
        prec += 64
        with mp.workprec(prec):
            w2 = _MP[fn](mp.mpc(z.real, z.imag))
            scale = max(abs(w2.real), abs(w2.imag))
            if scale == 0 or max(abs(w2.real - w.real), abs(w2.imag - w.imag)) <= scale * mp.mpf(2) ** -80:
                return w2
        w = w2
    return w


def error(fn: str, single: bool, z: complex, got: complex) -> float | None:
    """The error of `got` in ulps of the larger part of the exact result (None: not judged)."""
    w = _exact(fn, z)
    re, im = w.real, w.imag
    big = max(abs(re), abs(im))
    top = mp.mpf(2) ** 128 if single else mp.mpf(2) ** 1024
    if big >= top:
        return 0.0 if (math.isinf(got.real) or math.isinf(got.imag)) else math.inf
    if single and big < FLT_MIN:
        return None
    if not (math.isfinite(got.real) and math.isfinite(got.imag)):
        return math.inf
    u = _ulp(float(big), single)
    parts = []
    for g, x in ((got.real, re), (got.imag, im)):
        if single and abs(x) < FLT_MIN and abs(g) <= FLT_MIN:
            parts.append(0.0)                  # a part flushed to zero (or not) below FLT_MIN
        else:
            parts.append(abs(mp.mpf(g) - x) / u)
    return float(max(parts))


def _estimates(case: CmathCase, z, got):
    """Fast error estimates (inf where unsure)."""
    name = _NP[case.fn]
    with np.errstate(all="ignore"):
        if case.single:
            ref = getattr(np, name)(z.astype(np.complex128))
            big = np.maximum(np.abs(ref.real), np.abs(ref.imag))
            e = np.maximum(np.floor(np.log2(np.where(big > 0, big, 1.0))), -126)
            ulp = np.exp2(e - 23)
            d = np.maximum(np.abs(got.real.astype(np.float64) - ref.real), np.abs(got.imag.astype(np.float64) - ref.imag))
        else:
            ref = getattr(np, name)(z.astype(np.clongdouble))
            big = np.maximum(np.abs(ref.real), np.abs(ref.imag))
            e = np.maximum(np.floor(np.log2(np.where(big > 0, big, 1.0).astype(np.float64))), -1022)
            ulp = np.exp2(e - 52)
            d = np.maximum(np.abs(got.real.astype(np.longdouble) - ref.real),
                           np.abs(got.imag.astype(np.longdouble) - ref.imag)).astype(np.float64)
        est = d / ulp
    unsure = ~np.isfinite(est) | (big == 0) | (big > (1e37 if case.single else 1e307)) | (big < (2e-38 if case.single else 1e-300))
    return np.where(unsure, np.inf, est)


class Result(NamedTuple):
    label: str
    count: int
    max_ulp: float
    at: tuple
    max_abs: float = 0.0
    abs_at: tuple = ()


def merge(a: Result, b: Result) -> Result:
    worst = a if a.max_ulp >= b.max_ulp else b
    return Result(a.label, a.count + b.count, worst.max_ulp, worst.at)


def measure(lib, case: CmathCase, label: str, z, filtered: bool = False) -> Result:
    if case.single:
        z = z.astype(np.complex64)
        # normal float32 parts only (subnormal inputs are zero on the GPU)
        z = np.where(np.abs(z.real) < FLT_MIN, 0, z.real) + 1j * np.where(np.abs(z.imag) < FLT_MIN, 0, z.imag)
        z = z.astype(np.complex64)
    got = lib.call(case.name, z)
    candidates = _candidates(_estimates(case, z, got)) if filtered else range(len(z))
    worst, at = 0.0, ()
    for k in candidates:
        zk = complex(z[k])
        e = error(case.fn, case.single, zk, complex(got[k]))
        if e is not None and e > worst:
            worst, at = e, (zk.real, zk.imag)
    return Result(label, len(z), worst, at)
