"""Differential test of exact float64: random float64 expressions, compiled as a kernel (which holds float64
data, so every float64 operation is the emulated library's) and with Numba's @njit on the CPU, must give
the same bits on values of every class.

The vocabulary is every float64 operation that is exact in both (IEEE's correctly rounded operations and
Python's rules on top of them): ``+ - * / % //``, unary minus, ``abs``, ``min``/``max``, ``math.sqrt``,
``math.fabs``, ``math.copysign``, ``math.ldexp``, ``math.nextafter``, ``math.frexp``, comparisons and ``math.isnan``/``isinf``/``isfinite``
in conditional expressions, float32 round trips, integer conversions of bounded values, and Python
float literals. Transcendental functions are within an ulp rather than exact; test_f64_compiler.py
checks them against mpmath. A NaN result matches any NaN: payloads are a documented choice of the
library (tests/float64/ check them against NumPy directly).
"""

from __future__ import annotations

import math
import random

import numba
import numpy as np
import pytest

from numba_metal import metal

N = 2048
K = 12   # expressions per generated function (one kernel)

_LITERALS = ("0.5", "3.0", "-1.25", "0.1", "1e-300", "1e300", "2.0", "-0.0", "7.0")
_BINARY = ("+", "-", "*", "/", "%", "//")


class _Gen:
    """Random float64 expressions over the parameters a, b, c (deterministic in the seed)."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def leaf(self):
        if self.r.random() < 0.75:
            return self.r.choice("abc")
        return self.r.choice(_LITERALS)

    def expr(self, depth):
        if depth == 0:
            return self.leaf()
        e = lambda: self.expr(depth - 1)  # noqa: E731
        k = self.r.randrange(16)
        if k < 5:
            x, y = e(), e()
            if x in _LITERALS and y in _LITERALS:  # CPython would fold two literals in double
                y = "a"
            return f"({x} {self.r.choice(_BINARY)} {y})"
        if k == 5:
            return f"(-{e()})"
        if k == 6:
            return f"abs({e()})"
        if k == 7:
            return f"{self.r.choice(('min', 'max'))}({e()}, {e()})"
        if k == 8:
            return f"math.sqrt({e()})"
        if k == 9:   # the sign source is a leaf: the sign of a NaN an operation makes is the C library's
            return f"math.copysign({e()}, {self.leaf()})"
        if k == 10:
            return f"math.ldexp({e()}, {self.r.randrange(-60, 61)})"
        if k == 11:
            op = self.r.choice(("<", "<=", ">", ">=", "==", "!="))
            return f"({e()} if {e()} {op} {e()} else {e()})"
        if k == 12:
            pred = self.r.choice(("math.isnan", "math.isinf", "math.isfinite"))
            return f"({e()} if {pred}({e()}) else {e()})"
        if k == 13:
            return f"math.nextafter({e()}, {e()})"
        if k == 14:   # both items: the mantissa, and the exponent made a float64 by the addition
            x = e()
            return f"(math.frexp({x})[0] + math.frexp({x})[1])"
        # A float32 round trip, or an integer conversion of a bounded value (out of range and NaN are
        # undefined in Numba).
        if self.r.random() < 0.5:
            return f"(np.float32({e()}) + {e()})"
        x = e()
        return f"(float(np.int32(min(max({x}, -1e9), 1e9))) if {x} == {x} else 0.5)"

    def function(self, depth):
        exprs = [self.expr(depth) for _ in range(K)]
        return "def f(a, b, c):\n    return (" + ", ".join(exprs) + ",)\n", exprs


def _inputs(seed):
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -2.2250738585072014e-308,
                         1.7976931348623157e308, 1.0, -1.0, 0.5, 3.0, 1e-300, 1e300, 2.0 ** 53 + 2])
    cols = []
    for _ in range(3):
        v = np.concatenate([rng.standard_normal(N // 2) * 10.0 ** rng.integers(-5, 6, N // 2),
                            rng.choice(specials, N // 4),
                            (rng.integers(0, 2 ** 64 - 1, N - N // 2 - N // 4, dtype=np.uint64)).view(np.float64)])
        cols.append(rng.permutation(v))
    return cols


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_float64_expressions_match_njit_bit_for_bit(seed):
    src, exprs = _Gen(seed).function(depth=3)
    ns = {"math": math, "np": np}
    exec(compile(src, f"<float64 differential {seed}>", "exec"), ns)
    f = ns["f"]
    dev = metal.jit(device=True)(f)

    @metal.jit
    def kernel(a, b, c, out):
        i = metal.grid(1)
        if i < a.size:
            r = dev(a[i], b[i], c[i])
            for k in range(len(r)):
                out[k, i] = r[k]

    jf = numba.njit(error_model="numpy")(f)

    @numba.njit(error_model="numpy")
    def reference(a, b, c, out):
        for i in range(a.size):
            r = jf(a[i], b[i], c[i])
            for k in range(len(r)):
                out[k, i] = r[k]

    a, b, c = _inputs(seed)
    out = np.zeros((K, N))
    want = np.zeros((K, N))
    kernel[(N + 127) // 128, 128](a, b, c, out)
    metal.synchronize()
    with np.errstate(all="ignore"):
        reference(a, b, c, want)
    for k in range(K):
        bad = (out[k].view(np.uint64) != want[k].view(np.uint64)) & ~(np.isnan(out[k]) & np.isnan(want[k]))
        idx = np.nonzero(bad)[0]
        assert idx.size == 0, (f"expression {k}: {exprs[k]}\n{idx.size} differences, first at a={a[idx[0]]!r}, "
                               f"b={b[idx[0]]!r}, c={c[idx[0]]!r}: got {out[k, idx[0]]!r}, want {want[k, idx[0]]!r}")
