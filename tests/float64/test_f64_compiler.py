"""float64 through the compiler: kernels that hold float64 data compute it exactly with the emulated
library (compiler/float64.metal), bit for bit as Numba's @njit computes the same Python on the CPU;
kernels that hold none generate the MSL they always did (compiler/precision.py).

The library's own tests (test_f64_operations.py, test_fm_accuracy.py ...) cover every entry point over
millions of vectors; these tests check that the compiler reaches the right entry point for every
operation, conversion and place a float64 can be, on values of every class.
"""

from __future__ import annotations

import hashlib
import math

import numba
import numpy as np
import pytest

import f64_vectors as V
from numba_metal import metal
from numba_metal.compiler import driver, libraries, msl
from numba_metal.errors import UnsupportedFeatureError
from numba_metal.kernel_api import functions as F

N = 4096


def _values(seed, n=N):
    """float64 values of every class (edge table, NaN payloads, subnormals, random patterns)."""
    rng = np.random.default_rng(seed)
    edge = V.edge_values()
    return V.floats(np.concatenate([edge, V.values(rng, n - len(edge) % n)]))[:n].copy()


def _same_bits(got, want, any_nan=False, what=""):
    """Bit for bit; ``any_nan``: a NaN matches any NaN (the payload of a NaN result is a documented
    choice where the C library's and the emulated library's differ: fmod, pow and % of NaNs)."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype
    if got.dtype.kind == "f":
        bad = got.view(f"u{got.itemsize}") != want.view(f"u{want.itemsize}")
        if any_nan:
            bad &= ~(np.isnan(got) & np.isnan(want))
        bad = np.nonzero(bad)[0]
    else:
        bad = np.nonzero(got != want)[0]
    assert bad.size == 0, f"{what}: {bad.size} differences, first at {bad[0]}: got {got.flat[bad[0]]!r}, want {want.flat[bad[0]]!r}"


def _launch(kernel, n, *args):
    kernel[(n + 127) // 128, 128](*args)
    metal.synchronize()


# ---------------------------------------------------------------------------------------------
# Every operation of the operator and conversion tables, against @njit of the same function
# ---------------------------------------------------------------------------------------------


def _binary_ops(a, b):
    return (a + b, a - b, a * b, a / b, a % b, a // b, -a, +a, abs(a), min(a, b), max(a, b),
            math.copysign(a, b), math.sqrt(a), a ** 3, a ** b)


def _predicates(a, b):
    return (a < b, a <= b, a > b, a >= b, a == b, a != b, math.isnan(a), math.isinf(a), math.isfinite(a),
            bool(a), not a)


_binary_dev = metal.jit(device=True)(_binary_ops)
_predicates_dev = metal.jit(device=True)(_predicates)
_NB = 15
_NP = 11


@metal.jit
def _binary_kernel(x, y, out):
    i = metal.grid(1)
    if i < x.size:
        r = _binary_dev(x[i], y[i])
        for k in range(len(r)):
            out[k, i] = r[k]


@metal.jit
def _predicate_kernel(x, y, out):
    i = metal.grid(1)
    if i < x.size:
        r = _predicates_dev(x[i], y[i])
        for k in range(len(r)):
            out[k, i] = r[k]


def _reference(fn, nout, dtype, x, y):
    jfn = numba.njit(error_model="numpy")(fn)

    @numba.njit(error_model="numpy")
    def run(x, y, out):
        for i in range(x.size):
            r = jfn(x[i], y[i])
            for k in range(len(r)):
                out[k, i] = r[k]

    out = np.zeros((nout, x.size), dtype)
    with np.errstate(all="ignore"):
        run(x, y, out)
    return out


def test_arithmetic_and_math_operations_are_bit_exact_against_njit():
    x = _values(1)
    y = np.random.default_rng(2).permutation(_values(3))
    out = np.zeros((_NB, N))
    _launch(_binary_kernel, N, x, y, out)
    want = _reference(_binary_ops, _NB, np.float64, x, y)
    # glibc's pow(sNaN, 0) is NaN (IEEE 754-2019 9.2.1: the signaling NaN signals); the library's is 1,
    # C99 Annex F's pow(x, 0) for any x (docs/limitations.md).
    signaling = np.isnan(x) & ((x.view(np.uint64) & np.uint64(1 << 51)) == 0) & (y == 0)
    want[14, signaling] = 1.0
    for k in range(_NB):
        _same_bits(out[k], want[k], any_nan=k in (4, 14), what=f"result {k}")


def test_comparisons_and_predicates_are_exact_against_njit():
    x = _values(4)
    y = x.copy()
    y[::3] = np.random.default_rng(5).permutation(_values(6))[::3]
    y[1::7] = -x[1::7]   # -0.0 == 0.0, x == -x
    out = np.zeros((_NP, N), np.bool_)
    _launch(_predicate_kernel, N, x, y, out)
    want = _reference(_predicates, _NP, np.bool_, x, y)
    for k in range(_NP):
        _same_bits(out[k], want[k])


@metal.jit
def _rounding_kernel(x, y, out, iout):
    i = metal.grid(1)
    if i < x.size:
        v = x[i]
        out[0, i] = math.fmod(v, y[i])
        out[1, i] = math.ldexp(v, -3)
        out[2, i] = math.ldexp(y[i], 1000)
        iout[0, i] = math.floor(v)
        iout[1, i] = math.ceil(v)
        iout[2, i] = math.trunc(v)
        iout[3, i] = round(v)
        iout[4, i] = int(v)


def test_rounding_to_int_fmod_and_ldexp_as_python():
    rng = np.random.default_rng(7)
    x = np.concatenate([V.floats(V.near_integers(rng, N // 2)), rng.uniform(-1e15, 1e15, N // 2)])
    x = x[np.isfinite(x) & (np.abs(x) < 2.0 ** 62)]
    n = x.size
    y = _values(8, n)
    out = np.zeros((3, n))
    iout = np.zeros((5, n), np.int64)
    _launch(_rounding_kernel, n, x, y, out, iout)
    with np.errstate(all="ignore"):
        _same_bits(out[0], np.fmod(x, y), any_nan=True)
        _same_bits(out[1], np.ldexp(x, -3))
        _same_bits(out[2], np.ldexp(y, 1000), any_nan=True)
    _same_bits(iout[0], np.array([math.floor(v) for v in x], np.int64))
    _same_bits(iout[1], np.array([math.ceil(v) for v in x], np.int64))
    _same_bits(iout[2], np.array([math.trunc(v) for v in x], np.int64))
    _same_bits(iout[3], np.array([round(v) for v in x], np.int64))
    _same_bits(iout[4], np.array([int(v) for v in x], np.int64))
