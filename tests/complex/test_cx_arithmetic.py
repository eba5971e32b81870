"""complex128 and complex64 arithmetic of complex.metal, bit for bit: `*` and `/` against Numba's @njit
(CPython's algorithms), np.divide against NumPy, abs against mpmath (correctly rounded for complex128), the
parts, conjugate, negation and predicates against Python. Operands include zeros of both signs,
infinities and NaN. complex64 operands and results stay clear of float32 subnormals, which the CPU device
flushes as Apple GPUs do (and the host's Numba does not)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from numba import njit

import fm_reference as R

inf, nan = math.inf, math.nan
PARTS = [0.0, -0.0, 1.0, -1.0, 2.5, -0.75, inf, -inf, nan, 1e300, -1e-300, 3.0]


def _specials(dtype):
    with np.errstate(over="ignore"):        # 1e300 becomes inf in complex64
        return np.array([complex(a, b) for a, b in itertools.product(PARTS, PARTS)], dtype=dtype)


def _random(rng, n, dtype, spread):
    z = (rng.standard_normal(n) * np.exp2(rng.uniform(-spread, spread, n))
         + 1j * rng.standard_normal(n) * np.exp2(rng.uniform(-spread, spread, n)))
    return z.astype(dtype)


def _same(a, b) -> np.ndarray:
    """Elementwise: the same bits in both parts, NaNs equal to NaNs."""
    def part(x, y):
        return (x.view(np.uint64 if x.dtype == np.float64 else np.uint32) ==
                y.view(np.uint64 if y.dtype == np.float64 else np.uint32)) | (np.isnan(x) & np.isnan(y))
    return part(a.real.copy(), b.real.copy()) & part(a.imag.copy(), b.imag.copy())


@njit(error_model="numpy")
def _numba_mul(a, b, out):
    for i in range(a.size):
        out[i] = a[i] * b[i]


@njit
def _numba_div1(a, b):
    return a / b


def _operands(dtype, spread):
    rng = np.random.default_rng(21)
    s = _specials(dtype)
    a = np.concatenate([np.repeat(s, len(s)), _random(rng, 20000, dtype, spread)])
    b = np.concatenate([np.tile(s, len(s)), _random(rng, 20000, dtype, spread)])
    return a, b


def test_c128_multiplication_is_numbas(mathlib):
    a, b = _operands(np.complex128, 300)
    ref = np.empty_like(a)
    _numba_mul(a, b, ref)
    got = mathlib.call("nm_c128_mul", a, b)
    bad = np.nonzero(~_same(got, ref))[0]
    assert not len(bad), [(a[k], b[k], got[k], ref[k]) for k in bad[:5]]


def test_c128_division_is_numbas_and_numpys_by_zero(mathlib):
    a, b = _operands(np.complex128, 300)
    got = mathlib.call("nm_c128_div", a, b)
    for k in range(len(a)):
        if b[k] == 0:
            with np.errstate(all="ignore"):       # Numba raises ZeroDivisionError; kernels give NumPy's value
                ref = np.divide(a[k:k + 1], b[k:k + 1])[0]
        else:
            ref = _numba_div1(a[k], b[k])
        assert _same(np.array([got[k]]), np.array([ref]))[0], (a[k], b[k], got[k], ref)


def test_np_divide_is_numpys(mathlib):
    for dtype, name, spread in ((np.complex128, "nm_c128_np_divide", 300), (np.complex64, "nm_c64_np_divide", 20)):
        a, b = _operands(dtype, spread)
        with np.errstate(all="ignore"):
            ref = np.divide(a, b)
        got = mathlib.call(name, a, b)
        if dtype == np.complex64:
            keep = _clear_of_subnormals(a, b, ref, got)
            got, ref, a, b = got[keep], ref[keep], a[keep], b[keep]
        bad = np.nonzero(~_same(got, ref))[0]
        assert not len(bad), [(a[k], b[k], got[k], ref[k]) for k in bad[:5]]


def _clear_of_subnormals(*arrays):
    tiny = np.float32(2.0 ** -100)
    keep = np.ones(len(arrays[0]), dtype=bool)
    for arr in arrays:
        for part in (arr.real, arr.imag):
            keep &= ~((np.abs(part) < tiny) & (part != 0))
    return keep


def test_c64_multiplication_and_division_are_numbas(mathlib):
    a, b = _operands(np.complex64, 20)
    ref = np.empty_like(a)
    _numba_mul(a, b, ref)
    got = mathlib.call("nm_c64_mul", a, b)
    keep = _clear_of_subnormals(a, b, ref, got)
    assert _same(got[keep], ref[keep]).all()
    got = mathlib.call("nm_c64_div", a, b)
    for k in np.nonzero(keep & (b != 0))[0][:4000]:
        ref = np.array([_numba_div1(a[k], b[k])], dtype=np.complex64)
        if _clear_of_subnormals(ref)[0]:
            assert _same(np.array([got[k]]), ref)[0], (a[k], b[k], got[k], ref)


def test_abs_is_correctly_rounded_hypot(mathlib):
    rng = np.random.default_rng(22)
    z = np.concatenate([_specials(np.complex128), _random(rng, 3000, np.complex128, 1000)])
    got = mathlib.call("nm_c128_abs", z)
    for k, v in enumerate(z):
        if math.isinf(v.real) or math.isinf(v.imag):
            assert got[k] == inf
        elif math.isnan(v.real) or math.isnan(v.imag):
            assert math.isnan(got[k])
        else:
            assert R.ulp_error(float(got[k]), R.reference("math.hypot", v.real, v.imag)) <= 0.5, v
    z32 = _random(rng, 3000, np.complex64, 20)
    got32 = mathlib.call("nm_c64_abs", z32)
    ref32 = np.hypot(z32.real.astype(np.float64), z32.imag.astype(np.float64))
    assert np.all(np.abs(got32 - ref32) <= np.spacing(ref32.astype(np.float32)))


def test_parts_conjugate_negation_and_predicates(mathlib):
    z = _specials(np.complex128)
    assert _same(mathlib.call("nm_c128_conj", z), np.conj(z)).all()
    assert _same(mathlib.call("nm_c128_neg", z), -z).all()
    assert _same(mathlib.call("nm_c128_make", z.real, z.imag), z).all()
    assert _same(mathlib.call("nm_c128_from_f64", z.real), z.real.astype(np.complex128)).all()
    assert np.array_equal(mathlib.call("nm_c128_real", z).view(np.uint64), z.real.copy().view(np.uint64))
    assert np.array_equal(mathlib.call("nm_c128_imag", z).view(np.uint64), z.imag.copy().view(np.uint64))
    w = z[::-1].copy()
    assert _same(mathlib.call("nm_c128_add", z, w), z + w).all()
    assert _same(mathlib.call("nm_c128_sub", z, w), z - w).all()
    assert np.array_equal(mathlib.call("nm_c128_eq", z, w), z == w)
    assert np.array_equal(mathlib.call("nm_c128_ne", z, w), z != w)
    import cmath
    for name in ("isnan", "isinf", "isfinite"):
        expected = np.array([getattr(cmath, name)(v) for v in z])
        assert np.array_equal(mathlib.call(f"nm_c128_{name}", z), expected), name
        with np.errstate(over="ignore"):
            z32 = z.astype(np.complex64)
        expected32 = np.array([getattr(cmath, name)(complex(v)) for v in z32])
        assert np.array_equal(mathlib.call(f"nm_c64_{name}", z32), expected32), name
    with np.errstate(over="ignore"):
        z32 = z.astype(np.complex64)
    assert _same(mathlib.call("nm_c64_conj", z32), np.conj(z32)).all()
    assert _same(mathlib.call("nm_c64_make", z32.real, z32.imag), z32).all()
