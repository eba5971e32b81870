"""Refits the polynomial coefficients of numba_metal/compiler/mslib/mathlib.metal and compares them with the
committed ones.

    python tools/minimax_mathlib.py            # fit every polynomial, print the fits beside the file's
    python tools/minimax_mathlib.py --check    # exit 1 when a fit differs from the file by more than --ulps

Each polynomial of mathlib.metal's "Polynomial kernels" is a minimax approximation in relative error (the
comment above each function states its form, interval and fit error; ``FITS`` below restates them). The
fit is the Remez exchange algorithm (E. Remez, 1934; as presented in J.-M. Muller, *Elementary Functions:
Algorithms and Implementation*, 3rd ed., 2016, section 3.6, and in L. N. Trefethen, *Approximation Theory
and Approximation Practice*, 2013, chapter 10) for a weighted error ``w(x) (p(x) - f(x))`` on a dense
Chebyshev grid of the interval, in float64: the reference points are the alternating extrema of the error
on the grid, exchanged until the levelled error and the largest error agree. Then the coefficients are
rounded to float32 one at a time, from the constant term up (``--order down``: from the leading one), each
rounding followed by a refit of the coefficients not yet rounded (the rounded ones are fixed).

mathlib.metal's coefficients were made by a linear-programming exchange on such a grid (the file's header
says so), and that program was never committed; this tool is a reimplementation, so it reproduces the
committed coefficients only as far as the fit is unique: before rounding, the minimax polynomial is unique
(Chebyshev's alternation theorem), but the float32 rounding order and the grid change the last bits. The
tool prints, for every coefficient, the committed value, the refit value and their distance in float32
ulps, and for every polynomial the relative error of both on the grid. The result (docs/math-accuracy.md,
"Methods", says the same): nm_i_poly_erf and nm_i_poly_sinpi are reproduced exactly; nm_i_poly_cbrt within
2 ulp (1 ulp with --order down); nm_i_poly_log within 1 ulp in its first two terms and with the same
error (2^-35.2), its last two terms differing by 102 and 4865 ulp; nm_i_poly_expm1, nm_i_poly_erfcx and
nm_i_poly_rgamma are not reproduced: their refits agree in the leading terms and drift in the high-order
ones; those of expm1 and erfcx are less accurate than the committed coefficients (2^-28.2 and 2^-25.2
against 2^-31.1 and 2^-27.2), so those came from a better rounding search than this one, and that of
rgamma is more accurate (2^-30.8 against 2^-26.7). The committed errors measured here equal the ones the
file's comments state (rgamma's: 2^-26.7 here, 2^-26.4 in the file). The committed coefficients stay; the
accuracy of the functions built on them is measured by tests/compiler/test_mathlib.py and
docs/math-accuracy.md, not by this tool.
"""

from __future__ import annotations

import argparse
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
    weight: Callable[[float], float]
    what: str                            # the comment's statement of the fit


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
    if abs(t) < 1e-7 or abs(t - 1.0) < 1e-7:   # removable singularities: a neighbour's value
        t = t + 2e-7
    return (1.0 / math.gamma(1.0 + t) - 1.0) / (t * (t - 1.0))


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
    Fit("nm_i_poly_rgamma", -0.5, 1.0, 9, _rgamma_s, lambda t: abs(t * (t - 1.0)) * math.gamma(1.0 + t),
        "1/Gamma(1+t) = 1 + t(t-1) S(t), t in [-0.5, 1], error relative to 1/Gamma(1+t)"),
    Fit("nm_i_poly_sinpi", 0.0, 0.25, 4, _sinpi_p, lambda u: 1.0 / _sinpi_p(u),
        "sin(pi r) = r P(r^2), |r| <= 1/2, relative error"),
    Fit("nm_i_poly_cbrt", 0.5, 1.0, 3, lambda m: m ** (1.0 / 3.0), lambda m: m ** (-1.0 / 3.0),
        "cbrt(m), m in [0.5, 1], relative error"),
)


def committed(function: str) -> list[float]:
    """The coefficients of ``function`` in mathlib.metal, constant term first."""
    text = MATHLIB.read_text(encoding="utf-8")
    body = text[text.index(f" {function}("):]
    body = body[:body.index("\n}\n")]
    # The MSL compiler rounds each literal to float32: so does this.
    values = [float(np.float32(v)) for v in re.findall(r"([-+]?\d\.\d+e[-+]\d+)f", body)]
    # Horner's order is highest first; an error-free last step adds the constant after the loop.
    if "fast_two_sum(" in body:
        constant, values = values[-1], values[:-1]
        return [constant] + values[::-1]
    return values[::-1]


def _grid(lo: float, hi: float, n: int = GRID) -> np.ndarray:
    k = np.arange(n)
    return np.sort((lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * k / (n - 1)))


def _error(fit: Fit, coeffs, x, f, w) -> np.ndarray:
    return w * (np.polynomial.polynomial.polyval(x, coeffs) - f)


def _alternating_extrema(e: np.ndarray, count: int) -> np.ndarray:
    """Indices of ``count`` alternating-sign local extrema of ``e``, the largest ones kept."""
    idx = [0] + [i for i in range(1, len(e) - 1) if (e[i] - e[i - 1]) * (e[i + 1] - e[i]) <= 0] + [len(e) - 1]
    # Merge runs of the same sign, keeping the largest of each run.
    merged: list[int] = []
    for i in idx:
        if merged and np.sign(e[i]) == np.sign(e[merged[-1]]):
            if abs(e[i]) > abs(e[merged[-1]]):
                merged[-1] = i
        else:
            merged.append(i)
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
    """The minimax coefficients of ``fit`` with the coefficients ``fixed`` (degree -> value) held."""
    x, f, w = _points(fit)
    free = [k for k in range(fit.degree + 1) if k not in fixed]
    held = np.array([fixed.get(k, 0.0) for k in range(fit.degree + 1)])
    g = f - np.polynomial.polynomial.polyval(x, held)
    n = len(free)
    # The first reference: the extrema of the Chebyshev polynomial of degree n, mapped to the grid.
    ref = np.searchsorted(x, (fit.lo + fit.hi) / 2 - (fit.hi - fit.lo) / 2 * np.cos(np.pi * np.arange(n + 1) / n))
    ref = np.unique(np.clip(ref, 0, len(x) - 1))
    best, best_error = held.copy(), math.inf
    for _ in range(iterations):
        if len(ref) != n + 1:
            break
        a = np.column_stack([x[ref] ** k for k in free] + [((-1.0) ** np.arange(n + 1)) / w[ref]])
        sol = np.linalg.solve(a, g[ref])
        coeffs = held.copy()
        coeffs[free] = sol[:n]
        e = _error(fit, coeffs, x, f, w)
        largest = float(np.max(np.abs(e)))
        if largest < best_error:
            best, best_error = coeffs, largest
        new = _alternating_extrema(e, n + 1)
        if np.array_equal(new, ref) or largest <= abs(sol[n]) * (1 + 1e-12):
            break
        ref = new
    return best


def _points(fit: Fit):
    """The grid, the target and the weight on it (points where the weight vanishes left out)."""
    x = _grid(fit.lo, fit.hi)
    f = np.array([fit.target(v) for v in x])
    w = np.array([fit.weight(v) for v in x])
    keep = (w > 0) & np.isfinite(w) & np.isfinite(f)
    return x[keep], f[keep], w[keep]


def fit_float32(fit: Fit, order: str = "up") -> tuple[np.ndarray, np.ndarray]:
    """(the float64 minimax coefficients, the float32 ones after rounding one at a time: the constant term
    first with ``order`` "up", the leading one first with "down")."""
    exact = remez(fit, {})
    fixed: dict[int, float] = {}
    degrees = range(fit.degree + 1) if order == "up" else range(fit.degree, -1, -1)
    for k in degrees:
        coeffs = remez(fit, fixed)
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
    ap.add_argument("--check", action="store_true", help="exit 1 if a coefficient differs by more than --ulps")
    ap.add_argument("--ulps", type=int, default=0)
    ap.add_argument("--order", choices=("up", "down"), default="up",
                    help="round the constant term first (up, the default) or the leading coefficient first")
    ap.add_argument("--only", default="", help="comma-separated MSL functions to fit (default: all)")
    args = ap.parse_args(argv)
    worst = 0
    for fit in FITS:
        if args.only and fit.function not in args.only.split(","):
            continue
        file = committed(fit.function)
        exact, refit = fit_float32(fit, args.order)
        print(f"{fit.function}: {fit.what}")
        print(f"  relative error: file 2^{math.log2(max_error(fit, file)):.1f}, refit "
              f"2^{math.log2(max_error(fit, refit)):.1f}, unrounded minimax 2^{math.log2(max_error(fit, exact)):.1f}")
        for k, (a, b) in enumerate(zip(file, refit)):
            d = _ulps(a, b)
            worst = max(worst, d)
            print(f"  c{k}: file {a: .9e}  refit {b: .9e}  {d} ulp")
    print(f"largest difference: {worst} float32 ulp")
    return 1 if args.check and worst > args.ulps else 0


if __name__ == "__main__":
    sys.exit(main())
