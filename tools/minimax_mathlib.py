"""Fits the polynomial coefficients of numba_metal/compiler/mslib/mathlib.metal: every one of them is this
tool's output, so every constant can be regenerated.

    python tools/minimax_mathlib.py            # fit every polynomial, print the fits beside the file's
    python tools/minimax_mathlib.py --check    # exit 1 unless every fit equals the file's constants bit for bit
    python tools/minimax_mathlib.py --write    # write the fits into mathlib.metal (after changing FITS)

Each polynomial of mathlib.metal's "Polynomial kernels" is a minimax approximation in relative error (the
comment above each function states its form, interval and fit error; ``FITS`` below states them as data:
interval, degree, target and weight). The algorithm, written for this project:

1. **Discrete minimax by the Remez exchange** (E. Ya. Remez, 1934; as presented in J.-M. Muller,
   *Elementary Functions: Algorithms and Implementation*, 3rd ed., 2016, section 3.6, and L. N. Trefethen,
   *Approximation Theory and Approximation Practice*, 2013, chapter 10; the discrete form on a finite point
   set in E. W. Cheney, *Introduction to Approximation Theory*, 1966, chapter 3) for the weighted error
   ``w(x) (p(x) - f(x))`` on a Chebyshev grid of ``GRID`` points of the interval, in float64: solve for the
   coefficients and the levelled error on a reference of n + 1 points, exchange the reference for the
   alternating extrema of the error on the grid, until the reference stops changing (the discrete Remez
   algorithm terminates at the best approximation on the grid when the basis is a Haar system).
2. **Rounding to float32 one coefficient at a time with refits**, the constant term first: round the
   free coefficient of lowest degree to the nearest float32, hold it, refit the others, and so on (the
   greedy scheme Muller's section 3.8 starts from; Brisebarre, Muller and Tisserand, "Computing machine-
   efficient polynomial approximations", ACM TOMS 32(2), 2006, and Brisebarre and Chevillard, "Efficient
   polynomial L-infinity approximations", ARITH 18, 2007 — Sollya's ``fpminimax`` — search the roundings
   jointly instead; this tool keeps the greedy scheme, which is deterministic and fast).
   With the coefficients of degree < m held, the free basis x^m, ..., x^n is not a Haar system on an
   interval that contains 0 inside (x^m changes sign there when m is odd, and vanishes to order m), so the
   plain alternation rule fails. Writing p - f = x^m (q - h) turns the problem into a full polynomial q of
   degree n - m with the weight w |x|^m, a Haar system again: its error alternates once the sign of x^m
   is taken out. ``remez`` does exactly that (``sigma`` below) without changing the basis.

The history, for the record: mathlib.metal's first coefficients came from a linear-programming exchange
that was never committed. This tool reproduces two of its seven polynomials (erf, sin pi x) bit for bit,
and 1/Gamma's but for its last two terms (1 and 4 ulp: the unrounded c8 lies 0.05 ulp from a rounding
midpoint) once S is computed with mpmath and its error taken relative to S, which is what the old comment's
2^-26.4 measured. The others differ from the first fits from one term on whose unrounded value lies within
0.07 ulp of a midpoint (expm1 c3, log c1, erfcx c3, cbrt c0; the first program's solver was less exact),
and the greedy rounding diverges from there. So expm1, log, erfcx, 1/Gamma and cbrt were regenerated with
this tool (2026-12-07), each with the fit error of the polynomial it replaced, and the accuracy of the
functions re-measured (docs/math-accuracy.md). The results do not depend on the grid from 2001 points up.
tests/tools/test_minimax_mathlib.py refits all seven and compares them with the file bit for bit, so a
constant edited by hand fails it.
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

MATHLIB = Path(__file__).resolve().parents[1] / "numba_metal" / "compiler" / "mslib" / "mathlib.metal"
GRID = 20_001


@dataclass(frozen=True)
class Fit:
    """One polynomial: p(x) = sum c_k x^k on [lo, hi], minimax in the error ``weight(x) (p(x) - target(x))``."""

    function: str                        # the MSL function holding the coefficients
    lo: float
    hi: float
    degree: int
    target: Callable[[float], float]
    weight: Callable[[float], float] | None   # None: 1 / |target|, the error relative to the target
    what: str                            # the comment's statement of the fit
    grid: int = GRID                     # points of the Chebyshev grid


def _erf_target(z):
    x = math.sqrt(z)
    return math.erf(x) / x - 1.0 if x > 0 else 2.0 / math.sqrt(math.pi) - 1.0


def _erf_weight(z):
    x = math.sqrt(z)
    return x / math.erf(x) if x > 0 else math.sqrt(math.pi) / 2.0


def _a_of(q):   # q = (a - 2) / (a + 2)
    return 2.0 * (1.0 + q) / (1.0 - q)


def _erfcx_g(q):
    a = _a_of(q)
    return (1.0 + 2.0 * a) * math.exp(a * a) * math.erfc(a)


def _rgamma_s(t):
    # In float64, 1/Gamma(1+t) - 1 cancels next to t = 0 and t = 1, where the weight 1/|S| does not
    # vanish: S is computed with mpmath at 40 digits (the test dependencies hold it).
    import mpmath
    mpmath.mp.dps = 40
    if t == 0.0:
        return float(-mpmath.euler)          # the limit: 1/Gamma(1+t) = 1 + gamma t + O(t^2)
    if t == 1.0:
        return float(mpmath.euler - 1)       # the limit: d/dt 1/Gamma(1+t) at 1 is -psi(2) = gamma - 1
    u = mpmath.mpf(t)
    return float((mpmath.rgamma(1 + u) - 1) / (u * (u - 1)))


def _log_t(z):
    s = math.sqrt(z)
    return (2.0 * math.atanh(s) - 2.0 * s) / (s * z) if z > 0 else 2.0 / 3.0


def _log_weight(z):
    s = math.sqrt(z)
    return s * z / (2.0 * math.atanh(s)) if z > 0 else 0.0


def _expm1_h(r):
    return (math.expm1(r) - r) / (r * r) if r != 0 else 0.5


def _expm1_weight(r):
    return abs(r * r / math.expm1(r)) if r != 0 else 0.0


def _sinpi_p(u):
    r = math.sqrt(u)
    return math.sin(math.pi * r) / r if r > 0 else math.pi


FITS = (
    Fit("nm_i_poly_expm1", -math.log(2) / 2, math.log(2) / 2, 5, _expm1_h, _expm1_weight,
        "expm1(r) = r + r^2 H(r), |r| <= ln2/2, error relative to expm1(r)"),
    Fit("nm_i_poly_log", 0.0, 0.02944, 3, _log_t, _log_weight,
        "log(1+f) = 2s + s z T(z), z = s^2 <= 0.02944, error of s z T relative to log(1+f)"),
    Fit("nm_i_poly_erf", 0.0, 1.0, 6, _erf_target, _erf_weight,
        "erf(x) = x + x E(x^2), |x| <= 1, error relative to erf(x)"),
    Fit("nm_i_poly_erfcx", (0.5 - 2) / (0.5 + 2), (10.0546875 - 2) / (10.0546875 + 2), 9, _erfcx_g,
        lambda q: 1.0 / _erfcx_g(q), "G(q) = (1+2a) exp(a^2) erfc(a), q = (a-2)/(a+2), relative error"),
    # The error relative to S, so that t(t-1)S keeps its relative accuracy next to its zeros t = 0 and 1
    # (lgamma near 1 and 2 is -log1p(t(t-1)S)); the result does not depend on the grid from 2001 points
    # up, and the mpmath target is slow: 4001 points.
    Fit("nm_i_poly_rgamma", -0.5, 1.0, 9, _rgamma_s, None,
        "1/Gamma(1+t) = 1 + t(t-1) S(t), t in [-0.5, 1], error relative to S", grid=4001),
    Fit("nm_i_poly_sinpi", 0.0, 0.25, 4, _sinpi_p, lambda u: 1.0 / _sinpi_p(u),
        "sin(pi r) = r P(r^2), |r| <= 1/2, relative error"),
    Fit("nm_i_poly_cbrt", 0.5, 1.0, 3, lambda m: m ** (1.0 / 3.0), lambda m: m ** (-1.0 / 3.0),
        "cbrt(m), m in [0.5, 1], relative error"),
)


def committed(function: str, text: str | None = None) -> list[float]:
    """The coefficients of ``function`` in mathlib.metal (or in ``text``), constant term first."""
    body = _body(function, text)
    # The MSL compiler rounds each literal to float32: so does this.
    values = [float(np.float32(v)) for v in _LITERAL.findall(body)]
    # Horner's order is highest first; an error-free last step adds the constant after the loop.
    if "fast_two_sum(" in body:
        constant, values = values[-1], values[:-1]
        return [constant] + values[::-1]
    return values[::-1]


_LITERAL = re.compile(r"([-+]?\d\.\d+e[-+]\d+)f")


def _body(function: str, text: str | None = None) -> str:
    text = MATHLIB.read_text(encoding="utf-8") if text is None else text
    body = text[text.index(f" {function}("):]
    return body[:body.index("\n}\n")]


def literal(value: float) -> str:
    """A float32 coefficient as mathlib.metal spells it (ten significant digits: round-trips float32)."""
    return f"{float(np.float32(value)):.9e}f"


def write(function: str, coeffs, text: str) -> str:
    """``text`` with the literals of ``function`` replaced by ``coeffs`` (constant term first)."""
    body = _body(function, text)
    ordered = list(coeffs)[::-1]
    if "fast_two_sum(" in body:
        ordered = ordered[:-1] + [coeffs[0]]
    old = _LITERAL.findall(body)
    if len(old) != len(ordered):
        raise SystemExit(f"{function}: {len(old)} literals in mathlib.metal, {len(ordered)} coefficients fitted")
    values = iter(ordered)
    new_body = _LITERAL.sub(lambda m: literal(next(values)), body)
    return text.replace(body, new_body, 1)


def _grid(lo: float, hi: float, n: int = GRID) -> np.ndarray:
    k = np.arange(n)
    return np.sort((lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * k / (n - 1)))


def _error(fit: Fit, coeffs, x, f, w) -> np.ndarray:
    return w * (np.polynomial.polynomial.polyval(x, coeffs) - f)


def _alternating_extrema(e: np.ndarray, count: int) -> np.ndarray:
    """Indices of ``count`` alternating-sign local extrema of ``e``, the largest ones kept."""
    d = np.diff(e)
    idx = np.concatenate(([0], np.nonzero(d[:-1] * d[1:] <= 0)[0] + 1, [len(e) - 1]))
    # Merge runs of the same sign, keeping the largest of each run (the first of equal ones).
    sign = np.sign(e[idx])
    run = np.concatenate(([0], np.cumsum(sign[1:] != sign[:-1])))
    order = np.lexsort((np.arange(len(idx)), -np.abs(e[idx]), run))
    first = np.concatenate(([True], run[order][1:] != run[order][:-1]))
    merged: list[int] = [int(i) for i in idx[order[first]]]
    while len(merged) > count:   # drop the smallest, keeping alternation
        i = int(np.argmin(np.abs(e[merged])))
        if len(merged) - count == 1 or i in (0, len(merged) - 1):
            if i not in (0, len(merged) - 1):   # one too many: drop the smaller end instead
                i = 0 if abs(e[merged[0]]) < abs(e[merged[-1]]) else len(merged) - 1
            merged.pop(i)
        else:   # a middle one with its smaller neighbour: the rest still alternates
            j = i - 1 if abs(e[merged[i - 1]]) < abs(e[merged[i + 1]]) else i + 1
            for k in sorted((i, j), reverse=True):
                merged.pop(k)
    return np.array(merged)


def remez(fit: Fit, fixed: dict[int, float], iterations: int = 60) -> np.ndarray:
    """The minimax coefficients of ``fit`` on its grid with the coefficients ``fixed`` (degree -> value)
    held: the free ones are those of degree m..n (m = 0 when none is held)."""
    x, f, w = _points(fit)
    free = [k for k in range(fit.degree + 1) if k not in fixed]
    held = np.array([fixed.get(k, 0.0) for k in range(fit.degree + 1)])
    g = f - np.polynomial.polynomial.polyval(x, held)
    n = len(free)
    # p - f = x^m (q - h): the error alternates once the sign of x^m is taken out (the module's docstring).
    sigma = np.where(x < 0, (-1.0) ** min(free), 1.0)
    powers = np.column_stack([x ** k for k in free])
    # The first reference: the extrema of the Chebyshev polynomial of degree n, mapped to the grid.
    ref = np.searchsorted(x, (fit.lo + fit.hi) / 2 - (fit.hi - fit.lo) / 2 * np.cos(np.pi * np.arange(n + 1) / n))
    ref = np.unique(np.clip(ref, 0, len(x) - 1))
    best, best_error = held.copy(), math.inf
    for _ in range(iterations):
        if len(ref) != n + 1:
            break
        a = np.column_stack([powers[ref], sigma[ref] * ((-1.0) ** np.arange(n + 1)) / w[ref]])
        sol = np.linalg.solve(a, g[ref])
        coeffs = held.copy()
        coeffs[free] = sol[:n]
        e = _error(fit, coeffs, x, f, w)
        largest = float(np.max(np.abs(e)))
        if largest < best_error:
            best, best_error = coeffs, largest
        new = _alternating_extrema(e * sigma, n + 1)
        if np.array_equal(new, ref) or largest <= abs(sol[n]) * (1 + 1e-12):
            break
        ref = new
    return best


@functools.lru_cache(maxsize=None)
def _points(fit: Fit):
    """The grid, the target and the weight on it (points where the weight vanishes left out)."""
    x = _grid(fit.lo, fit.hi, fit.grid)
    f = np.array([fit.target(v) for v in x])
    w = 1.0 / np.abs(f) if fit.weight is None else np.array([fit.weight(v) for v in x])
    keep = (w > 0) & np.isfinite(w) & np.isfinite(f)
    return x[keep], f[keep], w[keep]


def fit_float32(fit: Fit) -> tuple[np.ndarray, np.ndarray]:
    """(the float64 minimax coefficients, the float32 ones: rounded to nearest one at a time from the
    constant term up, each rounding followed by a refit of the coefficients not yet rounded)."""
    exact = remez(fit, {})
    fixed: dict[int, float] = {}
    for k in range(fit.degree + 1):
        coeffs = remez(fit, fixed) if k else exact
        fixed[k] = float(np.float32(coeffs[k]))
    return exact, np.array([fixed[k] for k in range(fit.degree + 1)])


def max_error(fit: Fit, coeffs) -> float:
    x, f, w = _points(fit)
    return float(np.max(np.abs(_error(fit, coeffs, x, f, w))))


def _ulps(a: float, b: float) -> int:
    ia = int(np.float32(a).view(np.int32))
    ib = int(np.float32(b).view(np.int32))
    return abs(ia - ib)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 unless every fit equals the file bit for bit")
    ap.add_argument("--write", action="store_true", help="write the fitted coefficients into mathlib.metal")
    ap.add_argument("--only", default="", help="comma-separated MSL functions to fit (default: all)")
    args = ap.parse_args(argv)
    worst = 0
    text = MATHLIB.read_text(encoding="utf-8")
    for fit in FITS:
        if args.only and fit.function not in args.only.split(","):
            continue
        file = committed(fit.function, text)
        exact, refit = fit_float32(fit)
        print(f"{fit.function}: {fit.what}")
        print(f"  relative error: file 2^{math.log2(max_error(fit, file)):.1f}, refit "
              f"2^{math.log2(max_error(fit, refit)):.1f}, unrounded minimax 2^{math.log2(max_error(fit, exact)):.1f}")
        for k, (a, b) in enumerate(zip(file, refit)):
            d = _ulps(a, b)
            worst = max(worst, d)
            print(f"  c{k}: file {a: .9e}  refit {b: .9e}  {d} ulp")
        text = write(fit.function, refit, text)
    print(f"largest difference: {worst} float32 ulp")
    if args.write:
        MATHLIB.write_text(text, encoding="utf-8")
        print(f"wrote {MATHLIB}")
    return 1 if args.check and worst else 0


if __name__ == "__main__":
    sys.exit(main())
