"""metal.libdevice's directed-rounding functions (`_rz`, `_rd`, `_ru`; libdevice.metal) against an exact
oracle: the operation computed with Python's Fraction and rounded by definition (the largest float not
above, the smallest not below, the one toward zero). Operands are random float32/float64 values of mixed
magnitudes and signs plus cases whose exact result is a float (no rounding), a tie and zero sums."""

from fractions import Fraction

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError

ld = metal.libdevice


def _directed(exact: Fraction, dtype, mode):
    """The float of dtype that `mode` rounds the exact value to (finite results)."""
    f = dtype.type(float(exact)) if abs(exact) < Fraction(float(np.finfo(dtype).max)) * 2 else dtype.type(np.inf)
    if not np.isfinite(f):
        f = np.copysign(np.finfo(dtype).max, float(exact)).astype(dtype)
    while Fraction(float(f)) > exact:
        f = np.nextafter(f, dtype.type(-np.inf))
    while Fraction(float(f)) < exact:
        f = np.nextafter(f, dtype.type(np.inf))
    # f is now the smallest float >= exact (or equal)
    up = f
    down = f if Fraction(float(f)) == exact else np.nextafter(f, dtype.type(-np.inf))
    if mode == "ru":
        return up
    if mode == "rd":
        return down
    return down if exact > 0 else up


def _operands(dtype, n=64, seed=7):
    rng = np.random.default_rng(seed)
    mant = rng.uniform(1, 2, n) * rng.choice([-1, 1], n)
    exps = rng.integers(-20, 20, n)
    x = (mant * 2.0 ** exps).astype(dtype)
    y = (rng.uniform(1, 2, n) * rng.choice([-1, 1], n) * 2.0 ** rng.integers(-30, 30, n)).astype(dtype)
    special_x = np.array([1, 3, 1, 0.5, 2, 1e4, 7], dtype)
    special_y = np.array([1, -3, 2 ** -30, 0.25, 3, 1e-3, 7], dtype)
    return np.concatenate([x, special_x]), np.concatenate([y, special_y])


OPS32 = {
    "fadd": lambda a, b: a + b, "fsub": lambda a, b: a - b, "fmul": lambda a, b: a * b, "fdiv": lambda a, b: a / b,
}


@metal.jit
def arith32(x, y, out):
    i = metal.grid(1)
    if i < x.size:
        a, b = x[i], y[i]
        out[i, 0] = ld.fadd_rz(a, b); out[i, 1] = ld.fadd_rd(a, b); out[i, 2] = ld.fadd_ru(a, b)
        out[i, 3] = ld.fsub_rz(a, b); out[i, 4] = ld.fsub_rd(a, b); out[i, 5] = ld.fsub_ru(a, b)
        out[i, 6] = ld.fmul_rz(a, b); out[i, 7] = ld.fmul_rd(a, b); out[i, 8] = ld.fmul_ru(a, b)
        out[i, 9] = ld.fdiv_rz(a, b); out[i, 10] = ld.fdiv_rd(a, b); out[i, 11] = ld.fdiv_ru(a, b)
        out[i, 12] = ld.fsqrt_rz(abs(a)); out[i, 13] = ld.fsqrt_rd(abs(a)); out[i, 14] = ld.fsqrt_ru(abs(a))
        out[i, 15] = ld.frcp_rz(b); out[i, 16] = ld.frcp_rd(b); out[i, 17] = ld.frcp_ru(b)
        out[i, 18] = ld.fmaf_rz(a, b, a); out[i, 19] = ld.fmaf_rd(a, b, a); out[i, 20] = ld.fmaf_ru(a, b, a)


def _sqrt_directed(x: Fraction, dtype, mode):
    f = dtype.type(np.sqrt(float(x)))
    while Fraction(float(f)) ** 2 > x:
        f = np.nextafter(f, dtype.type(-np.inf))
    while Fraction(float(f)) ** 2 < x:
        f = np.nextafter(f, dtype.type(np.inf))
    exact = Fraction(float(f)) ** 2 == x
    if mode == "ru" or exact:
        return f
    return np.nextafter(f, dtype.type(-np.inf))


def test_float32_directed_arithmetic_is_exactly_rounded():
    x, y = _operands(np.dtype(np.float32))
    out = np.zeros((x.size, 21), np.float32)
    arith32[1, x.size](x, y, out)
    modes = ("rz", "rd", "ru")
    for i in range(x.size):
        a, b = Fraction(float(x[i])), Fraction(float(y[i]))
        for k, op in enumerate(OPS32.values()):
            for m, mode in enumerate(modes):
                assert out[i, 3 * k + m] == _directed(op(a, b), np.dtype(np.float32), mode), (i, k, mode)
        for m, mode in enumerate(modes):
            # sqrt rounds toward zero as it rounds down (its result is positive)
            assert out[i, 12 + m] == _sqrt_directed(abs(a), np.dtype(np.float32), "rd" if mode == "rz" else mode)
            assert out[i, 15 + m] == _directed(1 / b, np.dtype(np.float32), mode)
            assert out[i, 18 + m] == _directed(a * b + a, np.dtype(np.float32), mode)


@metal.jit
def zero_sums(x, out):
    out[0] = ld.fadd_rd(x[0], -x[0])
    out[1] = ld.fadd_ru(x[0], -x[0])
    out[2] = ld.fadd_rz(x[0], -x[0])
    out[3] = ld.fadd_rd(x[1], x[1])


def test_an_exact_zero_sum_is_minus_zero_only_when_rounding_down():
    out = np.ones(4, np.float32)
    zero_sums[1, 1](np.array([3.0, 0.0], np.float32), out)
    assert list(np.signbit(out)) == [True, False, False, False]
    assert not out.any()


@metal.jit
def conversions(v, out):
    i = metal.grid(1)
    if i < v.size:
        out[i, 0] = ld.ll2float_rz(v[i]); out[i, 1] = ld.ll2float_rd(v[i]); out[i, 2] = ld.ll2float_ru(v[i])
        out[i, 3] = ld.ull2float_rz(v[i]); out[i, 4] = ld.ull2float_rd(v[i]); out[i, 5] = ld.ull2float_ru(v[i])


def test_integer_to_float32_directed_conversions():
    v = np.array([1, -1, 2 ** 24 + 1, -(2 ** 24 + 1), 2 ** 62 + 12345, -(2 ** 63), 2 ** 63 - 1, 16777217 * 3, -7],
                 np.int64)
    out = np.zeros((v.size, 6), np.float32)
    conversions[1, v.size](v, out)
    f32 = np.dtype(np.float32)
    for i, value in enumerate(v.tolist()):
        unsigned = value & (2 ** 64 - 1)
        for m, mode in enumerate(("rz", "rd", "ru")):
            assert out[i, m] == _directed(Fraction(value), f32, mode)
            assert out[i, 3 + m] == _directed(Fraction(unsigned), f32, mode)


@metal.jit
def arith64(x, y, out):
    i = metal.grid(1)
    if i < x.size:
        a, b = x[i], y[i]
        out[i, 0] = ld.dadd_rz(a, b); out[i, 1] = ld.dadd_rd(a, b); out[i, 2] = ld.dadd_ru(a, b)
        out[i, 3] = ld.dmul_rz(a, b); out[i, 4] = ld.dmul_rd(a, b); out[i, 5] = ld.dmul_ru(a, b)
        out[i, 6] = ld.dsqrt_rz(abs(a)); out[i, 7] = ld.dsqrt_rd(abs(a)); out[i, 8] = ld.dsqrt_ru(abs(a))
        out[i, 9] = ld.double2float_rz(a); out[i, 10] = ld.double2float_rd(a); out[i, 11] = ld.double2float_ru(a)
        out[i, 12] = ld.ll2double_rd(metal.int64(a * 1e12)); out[i, 13] = ld.ll2double_ru(metal.int64(a * 1e12))
        out[i, 14] = ld.ddiv_rz(a, b); out[i, 15] = ld.ddiv_rd(a, b); out[i, 16] = ld.ddiv_ru(a, b)
        out[i, 17] = ld.drcp_rz(b); out[i, 18] = ld.drcp_rd(b); out[i, 19] = ld.drcp_ru(b)


def test_float64_directed_arithmetic_and_conversions_are_exactly_rounded():
    f64 = np.dtype(np.float64)
    x, y = _operands(f64, n=24)
    # products and quotients that underflow (subnormal or zero) or overflow
    x = np.concatenate([x, [1e-160, 3e-170, 2.0 ** 1000, 3e-300, 1e-310, 5e-324, 7.0, 1e300]])
    y = np.concatenate([y, [1e-160, 7e-170, 2.0 ** 30, 3e20, 3.0, 3.0, 3e-310, 1e-10]])
    out = np.zeros((x.size, 20), np.float64)
    arith64[1, x.size](x, y, out)
    for i in range(x.size):
        a, b = Fraction(float(x[i])), Fraction(float(y[i]))
        for m, mode in enumerate(("rz", "rd", "ru")):
            if abs(a + b) < Fraction(float(np.finfo(f64).max)):
                assert out[i, m] == _directed(a + b, f64, mode), (i, mode)
            if abs(a * b) < Fraction(float(np.finfo(f64).max)):
                assert out[i, 3 + m] == _directed(a * b, f64, mode), (i, mode, x[i], y[i])
            assert out[i, 6 + m] == _sqrt_directed(abs(a), f64, "rd" if mode == "rz" else mode)
            if abs(a / b) < Fraction(float(np.finfo(f64).max)):
                assert out[i, 14 + m] == _directed(a / b, f64, mode), (i, mode, x[i], y[i])
            if abs(1 / b) < Fraction(float(np.finfo(f64).max)):
                assert out[i, 17 + m] == _directed(1 / b, f64, mode), (i, mode, y[i])
            if abs(a) < Fraction(float(np.finfo(np.float32).max)) and abs(a) > Fraction(2) ** -126:
                assert out[i, 9 + m] == _directed(a, np.dtype(np.float32), mode), (i, mode)
        n = int(float(x[i]) * 1e12) if abs(float(x[i]) * 1e12) < 2 ** 63 else None
        if n is not None:
            assert out[i, 12] == _directed(Fraction(n), f64, "rd")
            assert out[i, 13] == _directed(Fraction(n), f64, "ru")


def test_overflow_rounds_to_the_largest_float_toward_zero():
    """Overflow: the largest finite float64 unless rounding away from zero; x / 0 stays infinite."""
    out = np.zeros((1, 20), np.float64)
    arith64[1, 1](np.array([1e308]), np.array([1e-308]), out)
    big = np.finfo(np.float64).max
    assert list(out[0, 14:17]) == [big, big, np.inf]
    arith64[1, 1](np.array([1e308]), np.array([1e308]), out)
    assert list(out[0, :3]) == [big, big, np.inf]
    assert list(out[0, 3:6]) == [big, big, np.inf]
    arith64[1, 1](np.array([1.0]), np.array([0.0]), out)   # division by zero is an exact infinity
    assert list(out[0, 14:20]) == [np.inf] * 6


def test_float64_directed_rounding_is_refused_where_float64_is_computed_in_float32():
    @metal.jit
    def k(x, out):
        out[0] = ld.double2float_rd(x[0] * 1.5)

    with pytest.raises(UnsupportedFeatureError,
                       match=r"double2float_rd: needs float64 computed exactly.*float64=.exact."):
        k.inspect_msl((metal.float32[:], metal.float32[:]))


@metal.jit
def fma64(x, y, z, out):
    i = metal.grid(1)
    if i < x.size:
        out[i, 0] = ld.fma_rz(x[i], y[i], z[i])
        out[i, 1] = ld.fma_rd(x[i], y[i], z[i])
        out[i, 2] = ld.fma_ru(x[i], y[i], z[i])


def test_float64_directed_fma_is_exactly_rounded():
    """fma_rz/rd/ru against the exact x y + z: random operands of mixed magnitudes, cancellations (z = -x y
    rounded, and the exact product's opposite), products that underflow beside small and large z, sums
    near overflow, and exact zeros."""
    rng = np.random.default_rng(5)
    n = 48
    x = rng.uniform(1, 2, n) * rng.choice([-1, 1], n) * 2.0 ** rng.integers(-40, 40, n)
    y = rng.uniform(1, 2, n) * rng.choice([-1, 1], n) * 2.0 ** rng.integers(-40, 40, n)
    z = rng.uniform(1, 2, n) * rng.choice([-1, 1], n) * 2.0 ** rng.integers(-80, 80, n)
    z[:8] = -(x[:8] * y[:8])                        # cancellation down to the product's rounding error
    x = np.concatenate([x, [1e-160, 1e-160, 3e-170, 1e300, 1e308, 3.0, 2.0 ** 600, 0.5]])
    y = np.concatenate([y, [1e-160, -1e-170, 7e-170, 1e8, 1.5, -0.0, 2.0 ** 420, 3.0]])
    z = np.concatenate([z, [1e-320, 1.0, 1e200, -1e308, -1e308, 0.0, -1.7e308, -1.5]])
    out = np.zeros((x.size, 3))
    fma64[1, x.size](x, y, z, out)
    big = Fraction(float(np.finfo(np.float64).max))
    f64 = np.dtype(np.float64)
    for i in range(x.size):
        exact = Fraction(float(x[i])) * Fraction(float(y[i])) + Fraction(float(z[i]))
        for m, mode in enumerate(("rz", "rd", "ru")):
            if exact == 0:
                assert out[i, m] == 0 and np.signbit(out[i, m]) == (mode == "rd"), (i, mode)
            elif abs(exact) <= big:
                assert out[i, m] == _directed(exact, f64, mode), (i, mode, x[i], y[i], z[i])
