"""complex64 and complex128 in kernels: values, arrays (NumPy's layout, used in place), arithmetic,
``.real``/``.imag``/``.conjugate()``, ``abs``, ``complex()``, comparisons and ``cmath``, through the rows of
compiler/complex_ops.py. Arithmetic is compared bit for bit with Numba's ``@njit``; cmath functions with
CPython's within the library's documented bounds (complex/test_cx_cmath.py checks those bounds against
mpmath)."""

from __future__ import annotations

import cmath

import numba
import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler import msl
from numba_metal.errors import UnsupportedFeatureError
from tests.float64.kernel_rows import njit_rows, rows_kernel

N = 1024


def _complex_values(seed, dtype):
    rng = np.random.default_rng(seed)
    re = rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)
    im = rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4, N)
    z = (re + 1j * im)
    z[:6] = [0, 1j, -1, 2.5 - 0.5j, complex(1e300, -1e300), complex(-0.0, 3.0)]
    with np.errstate(over="ignore"):   # 1e300 is infinite in complex64
        return z.astype(dtype)


def _arith(a, b):
    return (a + b, a - b, a * b, a / b, -a, a.conjugate())


def _mixed(a, b):   # complex128 results whatever a and b are: complex(), Python complex and float literals
    return (complex(a.real, b.imag) * 2.0, a * 1j + 0.5)


def _predicates(a, b):
    return (a == b, a != b, a == a.conjugate(), bool(a))


_ARITH_KERNEL = rows_kernel(metal.jit(device=True)(_arith))
_MIXED_KERNEL = rows_kernel(metal.jit(device=True)(_mixed))
_PREDICATE_KERNEL = rows_kernel(metal.jit(device=True)(_predicates))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_arithmetic_parts_conjugate_and_constructor_bit_for_bit_as_njit(dtype):
    x, y = _complex_values(1, dtype), _complex_values(2, dtype)
    y[y == 0] = 1.0   # Numba raises ZeroDivisionError for a complex division by zero
    out = np.zeros((6, N), dtype)
    mixed = np.zeros((2, N), np.complex128)
    _ARITH_KERNEL[N // 128, 128](x, y, out)
    _MIXED_KERNEL[N // 128, 128](x, y, mixed)
    metal.synchronize()
    _same(out, njit_rows(_arith, 6, dtype, x, y))
    _same(mixed, njit_rows(_mixed, 2, np.complex128, x, y))


def _same(got, want):
    part = np.float64 if got.dtype == np.complex128 else np.float32
    bits = np.uint64 if got.dtype == np.complex128 else np.uint32
    for k in range(got.shape[0]):
        g, w = got[k].view(part).view(bits), want[k].view(part).view(bits)
        nan = np.isnan(got[k].view(part)) & np.isnan(want[k].view(part))
        assert ((g == w) | nan).all(), (k, np.nonzero((g != w) & ~nan)[0][:3])


def test_comparisons_and_truth_as_njit():
    x = _complex_values(3, np.complex128)
    y = x.copy()
    y[::2] = _complex_values(4, np.complex128)[::2]
    out = np.zeros((4, N), np.bool_)
    _PREDICATE_KERNEL[N // 128, 128](x, y, out)
    metal.synchronize()
    np.testing.assert_array_equal(out, njit_rows(_predicates, 4, np.bool_, x, y))


@metal.jit
def _abs_kernel(z, z32, out, out32):
    i = metal.grid(1)
    if i < z.size:
        out[i] = abs(z[i])
        out32[i] = abs(z32[i])


def test_abs_is_correctly_rounded_hypot():
    z = _complex_values(5, np.complex128)
    with np.errstate(over="ignore"):
        z32 = z.astype(np.complex64)
    out, out32 = np.zeros(N), np.zeros(N, np.float32)
    _abs_kernel[N // 128, 128](z, z32, out, out32)
    metal.synchronize()
    import mpmath as mp
    with mp.workdps(60):
        exact = np.array([float(mp.sqrt(mp.mpf(v.real) ** 2 + mp.mpf(v.imag) ** 2)) for v in z])
    np.testing.assert_array_equal(out, exact)   # correctly rounded
    np.testing.assert_allclose(out32, np.abs(z32), rtol=2e-7)


_CMATH = [n for n in ("exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                      "tanh", "asinh", "acosh", "atanh")]


@pytest.mark.parametrize("name", _CMATH)
def test_cmath_functions_of_complex128_and_complex64_agree_with_cpython(name):
    fn = getattr(cmath, name)

    @metal.jit
    def kernel(z, z32, out, out32):
        i = metal.grid(1)
        if i < z.size:
            out[i] = fn(z[i])
            out32[i] = fn(z32[i])

    rng = np.random.default_rng(6)
    z = rng.uniform(-3, 3, 256) + 1j * rng.uniform(-3, 3, 256)
    z32 = z.astype(np.complex64)
    out, out32 = np.zeros(256, np.complex128), np.zeros(256, np.complex64)
    kernel[2, 128](z, z32, out, out32)
    metal.synchronize()
    want = np.array([fn(v) for v in z])
    scale = np.maximum(np.abs(want.real), np.abs(want.imag))
    err = np.maximum(np.abs(out.real - want.real), np.abs(out.imag - want.imag)) / np.spacing(scale)
    # The library is within 0.52 ulp of the exact value (complex_ops.py); CPython's cmath within a few.
    assert err.max() <= 4, (name, z[np.argmax(err)], err.max())
    want32 = np.array([fn(complex(v)) for v in z32])
    scale32 = np.maximum(np.abs(want32.real), np.abs(want32.imag)).astype(np.float32)
    err32 = np.maximum(np.abs(out32.real - want32.real), np.abs(out32.imag - want32.imag)) / np.spacing(scale32)
    assert err32.max() <= 16, (name, z32[np.argmax(err32)], err32.max())


def test_phase_rect_and_predicates():
    @metal.jit
    def kernel(z, out, flags):
        i = metal.grid(1)
        if i < z.size:
            out[0, i] = cmath.rect(abs(z[i]), cmath.phase(z[i]))
            flags[0, i] = cmath.isnan(z[i])
            flags[1, i] = cmath.isinf(z[i])
            flags[2, i] = cmath.isfinite(z[i])

    z = _complex_values(7, np.complex128)
    z[10:13] = [complex(np.nan, 1), complex(1, np.inf), complex(-np.inf, np.nan)]
    out = np.zeros((1, N), np.complex128)
    flags = np.zeros((3, N), np.bool_)
    kernel[N // 128, 128](z, out, flags)
    metal.synchronize()
    np.testing.assert_array_equal(flags[0], [cmath.isnan(v) for v in z])
    np.testing.assert_array_equal(flags[1], [cmath.isinf(v) for v in z])
    np.testing.assert_array_equal(flags[2], [cmath.isfinite(v) for v in z])
    finite = np.isfinite(z) & (np.abs(z) < 1e300)
    np.testing.assert_allclose(out[0][finite], z[finite], rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_polar_returns_numbas_pair(dtype):
    """cmath.polar(z) is (abs(z), phase(z)) in z's part type, as Numba's: complex128's within one ulp of
    CPython's (the library's hypot is correctly rounded and its atan2 within 0.52 ulp, test_cx_cmath.py;
    glibc's are within half an ulp or so), complex64's within 2 float32 ulps; special values exactly."""
    @metal.jit
    def kernel(z, r, phi):
        i = metal.grid(1)
        if i < z.size:
            a, b = cmath.polar(z[i])
            r[i] = a
            phi[i] = b

    z = _complex_values(11, dtype)
    z[6:10] = [complex(-0.0, -0.0), complex(np.inf, np.nan), complex(-np.inf, 1.0), complex(np.nan, 0.0)]
    part = np.float64 if dtype == np.complex128 else np.float32
    r, phi = np.zeros(N, part), np.zeros(N, part)
    kernel[N // 128, 128](z, r, phi)
    metal.synchronize()
    want = np.array([cmath.polar(complex(v)) for v in z])
    ulps = 1 if dtype == np.complex128 else 2
    for got, exact in ((r, want[:, 0]), (phi, want[:, 1])):
        finite = np.isfinite(exact)
        np.testing.assert_array_equal(got[~finite], exact[~finite].astype(part))
        err = np.abs(got[finite] - exact[finite]) / np.spacing(np.abs(exact[finite]).astype(part))
        assert err.max() <= ulps, err.max()


@metal.jit
def _power_kernel(a, b, out):
    i = metal.grid(1)
    if i < a.size:
        out[0, i] = a[i] ** b[i]
        out[1, i] = a[i] ** 3
        out[2, i] = pow(a[i], -2)


def _python_power(x, y):
    """CPython's x ** y, or the documented value where CPython raises: nan + i nan for a zero base with a
    negative or complex exponent, None for an overflow (an infinite part is expected)."""
    try:
        return x ** y
    except ZeroDivisionError:
        return complex(np.nan, np.nan)
    except OverflowError:
        return None


def _power_operands(rng, n):
    a = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * 10.0 ** rng.integers(-2, 3, n)
    integer = rng.integers(-100, 101, n).astype(np.complex128)
    real = rng.uniform(-4, 4, n) + 0j
    cx = rng.uniform(-4, 4, n) + 1j * rng.uniform(-4, 4, n)
    kind = rng.integers(0, 3, n)
    b = np.where(kind == 0, integer, np.where(kind == 1, real, cx))
    specials = [(0j, 2 + 0j), (0j, -1 + 0j), (0j, 0.5j), (0j, 0j), (complex(-0.0, 0.0), 3 + 0j), (2 + 3j, 0j),
                (1 + 1j, 100 + 0j), (1 + 1j, 101 + 0j), (1 + 1j, -100 + 0j), (complex(np.inf, 1), 2 + 0j),
                (complex(np.nan, 0), 2 + 0j), (1 + 1j, complex(np.nan, 0)), (-8 + 0j, 1 / 3 + 0j),
                (1e200 + 1e200j, 2 + 0j), (1 + 0j, complex(0.5, 1e-300)), (-1 + 0j, 0.5 + 0j)]
    a[:len(specials)], b[:len(specials)] = zip(*specials)
    return a, b


def _power_bound(a, b, want, eps):
    """How far CPython's polar formula and the library's (each function within 0.52 ulp, glibc's within
    about as much) may drift apart: a few ulps of the result, amplified by the exponent's size times
    log|a| and the angle."""
    with np.errstate(all="ignore"):
        log_modulus = np.where(np.abs(a) > 0, np.abs(np.log(np.abs(a))), 0.0)
        spread = 1 + np.abs(b) * (log_modulus + np.pi)
    return 8 * eps * spread * np.abs(want)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_power_as_cpython(dtype):
    """z ** w as CPython's complex power: integer exponents (|n| <= 100, zero imaginary part) by binary
    powering with Python's product and quotient, bit for bit for complex128; other exponents in CPython's
    polar form, within its rounding spread; 0 ** 0 == 1; where CPython raises, nan + i nan for a zero base
    and an infinite part for an overflow. complex64 computes the same in float32 (metal:: functions)."""
    rng = np.random.default_rng(12)
    a, b = _power_operands(rng, N)
    out = np.zeros((3, N), dtype)
    with np.errstate(all="ignore"):
        _power_kernel[N // 128, 128](a.astype(dtype), b.astype(dtype), out)
    metal.synchronize()
    with np.errstate(over="ignore"):   # 1e200 is infinite in complex64
        a, b = a.astype(dtype).astype(np.complex128), b.astype(dtype).astype(np.complex128)
    for k, exponents in enumerate((b, np.full(N, 3 + 0j), np.full(N, -2 + 0j))):
        want = [_python_power(complex(x), complex(y) if k == 0 else int(y.real)) for x, y in zip(a, exponents)]
        overflow = np.array([w is None for w in want])
        assert np.all(np.isinf(out[k][overflow].real) | np.isinf(out[k][overflow].imag)), k
        want = np.array([complex(np.nan, np.nan) if w is None else w for w in want])
        got = out[k].astype(np.complex128)
        nan = np.isnan(want.real) | np.isnan(want.imag)
        assert np.all(np.isnan(got[nan].real) | np.isnan(got[nan].imag)), k
        ok = ~overflow & ~nan
        if dtype == np.complex128:
            integer = ok & (exponents.imag == 0) & (exponents.real == np.floor(exponents.real)) & (np.abs(exponents.real) <= 100)
            np.testing.assert_array_equal(got[integer].view(np.uint64), want[integer].view(np.uint64))
            eps = 2.0 ** -52
        else:
            eps = 2.0 ** -23 * 8   # metal:: float32 functions: up to 4 ulps each (MSL precise), products rounded
            with np.errstate(all="ignore"):   # every intermediate power within float32's range
                ok &= (np.abs(exponents.real) * np.abs(np.log10(np.abs(a))) < 30) & (np.abs(want) > 1e-30)
        finite = ok & np.isfinite(want)
        err = np.abs(got[finite] - want[finite])
        bound = _power_bound(a[finite], exponents[finite], want[finite], eps) + (1e-300 if eps < 1e-10 else 1e-30)
        assert np.all(err <= bound), (k, a[finite][err > bound][:3], exponents[finite][err > bound][:3])


def test_complex128_kernels_compute_exactly_and_ordering_is_refused_clearly():
    def kernel(z, out):
        out[0] = z[0] * 1j

    assert msl.COMPLEX128 in metal.compile_msl(kernel, "void(complex64[:], complex128[:])")

    def ordered(a, out):
        out[0] = a[0] < a[1]

    with pytest.raises(metal.NumbaMetalError, match="complex|<"):
        metal.compile_msl(ordered, "void(complex128[:], boolean[:])")


def _scalar_expression(z, w, pair, i):
    return z * i + w * pair[1] + pair[0]


_scalar_device = metal.jit(device=True)(_scalar_expression)


@metal.jit
def _scalar_kernel(z, w, pair, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = _scalar_device(z, w, pair, i)


def test_complex_scalar_arguments_keep_every_bit():
    """Complex scalars (np.complex128, np.complex64, a Python complex, which is complex64 as a Python float
    is float32, and complex items of tuples) travel as their two parts in the argument struct, bit for bit
    as @njit computes with them."""
    reference = numba.njit(_scalar_expression)
    z = np.complex128(complex(np.pi, -1e-300))
    w = np.complex64(0.1 - 2.5j)
    pair = (np.complex128(complex(-0.0, 5e-324)), np.complex128(1 / 3 + 1j / 7))
    out = np.zeros(64, np.complex128)
    _scalar_kernel[1, 64](z, w, pair, out)
    metal.synchronize()
    want = np.array([reference(z, w, pair, i) for i in range(64)])
    np.testing.assert_array_equal(out.view(np.uint64), want.view(np.uint64))
    out32 = np.zeros(4, np.complex64)
    _scalar_kernel[1, 4](1.5 - 2.25j, 0.5 + 1j, (1, 3 - 1j), out32)   # all complex64
    metal.synchronize()
    c = np.complex64
    want32 = np.array([reference(c(1.5 - 2.25j), c(0.5 + 1j), (1, c(3 - 1j)), i) for i in range(4)], np.complex64)
    np.testing.assert_array_equal(out32.view(np.uint32), want32.view(np.uint32))


def test_complex_shared_and_local_arrays():
    @metal.jit
    def kernel(z, out):
        s = metal.shared.array(64, np.complex128)
        acc = metal.local.array(2, np.complex64)
        i = metal.threadIdx.x
        s[i] = z[i] * 1j
        acc[0] = np.complex64(z[i])
        acc[1] = acc[0] * acc[0]
        metal.syncthreads()
        out[0, i] = s[63 - i]
        out[1, i] = acc[1]

    z = _complex_values(13, np.complex128)[:64].copy()
    out = np.zeros((2, 64), np.complex128)
    kernel[1, 64](z, out)
    metal.synchronize()
    np.testing.assert_array_equal(out[0].view(np.uint64), (z[::-1] * 1j).view(np.uint64))
    square = numba.njit(lambda v: v * v)
    with np.errstate(over="ignore"):   # 1e300 is infinite in complex64
        z64 = z.astype(np.complex64)
    want = np.array([square(v) for v in z64], np.complex64).astype(np.complex128)
    np.testing.assert_array_equal(out[1].view(np.uint64), want.view(np.uint64))


def test_vectorize_over_complex():
    @numba.vectorize(["complex128(complex128, float64)", "complex64(complex64, float32)"], target="metal")
    def scale_rotate(z, s):
        return z * s * 1j

    z = _complex_values(8, np.complex128)
    s = np.linspace(0.5, 2.0, N)
    got = np.asarray(scale_rotate(z, s))
    want = njit_rows(lambda a, b: (a * b * 1j,), 1, np.complex128, z, s)[0]
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
