"""metal.libdevice's floating-point, bit-pattern and tuple-returning functions (kernel_api/libdevice.py):
every row typed exactly as numba.cuda types it (the checked-in list equals numba.cuda's own table); the
math functions against NumPy within the bound their row records (MSL Table 8.1 for float32, the float64
library's measured bounds); bit patterns, halves, tuples and CUDA's special values by definition."""

import math
import os
import subprocess
import sys

import mpmath
import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler.frontend import infer_types
from numba_metal.kernel_api import functions as F
from numba_metal.kernel_api.pymath import numba_type

from elementwise import binary, unary

ld = metal.libdevice
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_checked_in_list_is_numba_cudas():
    pytest.importorskip("numba.cuda.libdevicefuncs")
    generated = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "libdevice_signatures_gen.py")],
                               capture_output=True, text=True, check=True).stdout
    with open(os.path.join(ROOT, "numba_metal", "kernel_api", "libdevice_signatures.py"), encoding="utf-8") as f:
        assert f.read() == generated
    assert len(F.LIBDEVICE_SIGNATURES) == 317


def test_every_function_is_a_row():
    names = [n for n, _, _ in F.LIBDEVICE_SIGNATURES]
    assert sorted(names) == sorted(f.name for f in F.LIBDEVICE)
    assert all(hasattr(ld, n) for n in names)


def _caller(arity):
    return {1: lambda f: (lambda a: f(a)), 2: lambda f: (lambda a, b: f(a, b)),
            3: lambda f: (lambda a, b, c: f(a, b, c))}[arity]


@pytest.mark.parametrize("function", F.LIBDEVICE, ids=lambda f: f.name)
def test_result_type_is_numba_cudas(function):
    sig = function.signatures[0]
    cuda_sig = {n: (r, a) for n, r, a in F.LIBDEVICE_SIGNATURES}[function.name]
    fn = getattr(ld, function.name)
    args = tuple(numba_type(a) for a in cuda_sig[1])
    expected = numba_type(cuda_sig[0][0] if len(cuda_sig[0]) == 1 else "Tuple(" + ", ".join(cuda_sig[0]) + ")")
    assert infer_types(_caller(len(args))(fn), args).return_type == expected == numba_type(F.result_type(sig))


#: libdevice name -> NumPy's function, for the rows computed by the math table and MSL.
NUMPY = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "exp2": np.exp2, "log": np.log,
         "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
         "tanh": np.tanh, "asinh": np.arcsinh, "expm1": np.expm1, "log1p": np.log1p, "cbrt": np.cbrt,
         "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
         "fabs": np.fabs, "exp10": lambda x: np.power(10.0, x), "rsqrt": lambda x: 1 / np.sqrt(x.astype(np.float64)),
         "logb": lambda x: np.floor(np.log2(np.abs(x))),
         "sinpif": lambda x: np.array([float(mpmath.sinpi(mpmath.mpf(float(v)))) for v in x]),
         "cospif": lambda x: np.array([float(mpmath.cospi(mpmath.mpf(float(v)))) for v in x])}


def _ulps(got, want, dtype):
    want = np.asarray(want, np.float64)
    spacing = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


@pytest.mark.parametrize("name", sorted(NUMPY))
@pytest.mark.parametrize("suffix,dtype", [("f", np.float32), ("", np.float64)])
def test_math_rows_against_numpy_within_their_bound(name, suffix, dtype):
    lib_name = name if name.endswith("f") and name[:-1] in ("sinpi", "cospi") else name + suffix
    if name in ("sinpif", "cospif"):
        lib_name = name if dtype is np.float32 else name[:-1]
    row = {f.name: f for f in F.LIBDEVICE}[lib_name]
    x = np.linspace(0.05, 3.0, 61).astype(dtype)
    out = np.zeros_like(x)
    unary(getattr(ld, lib_name))[1, x.size](x, out)
    want = NUMPY[name](x.astype(np.float64))
    bound = row.accuracy.ulps if dtype is np.float32 else max(1.0, row.accuracy.ulps)   # float64 library: <= 0.52
    if lib_name == "rsqrtf":
        bound = 2.0   # libdevice's documented bound for rsqrtf (CUDA Math API); MSL Table 8.1 promises 0.5
    assert _ulps(out, want, dtype).max() <= max(bound, 0.5) + 1e-9, lib_name


@metal.jit
def tuples(x, f, i32):
    k = metal.grid(1)
    if k < x.size:
        s, c = ld.sincosf(x[k])
        m, e = ld.frexpf(x[k])
        fr, ip = ld.modff(x[k])
        sp, cp = ld.sincospif(x[k])
        fs, fc = ld.fast_sincosf(x[k])
        f[k, 0] = s; f[k, 1] = c; f[k, 2] = m; f[k, 3] = fr; f[k, 4] = ip; f[k, 5] = sp; f[k, 6] = cp
        f[k, 7] = fs; f[k, 8] = fc
        i32[k] = e


@metal.jit
def tuples64(x, f, i32):
    k = metal.grid(1)
    if k < x.size:
        s, c = ld.sincos(x[k])
        m, e = ld.frexp(x[k])
        fr, ip = ld.modf(x[k])
        f[k, 0] = s; f[k, 1] = c; f[k, 2] = m; f[k, 3] = fr; f[k, 4] = ip
        i32[k] = e


def test_tuple_results_are_numba_cudas():
    x = np.array([0.75, -2.5, 10.125, 1e-3, -0.0, np.inf], np.float32)
    f = np.zeros((x.size, 9), np.float32)
    e = np.zeros(x.size, np.int32)
    with np.errstate(invalid="ignore"):
        tuples[1, x.size](x, f, e)
        finite = np.isfinite(x)
        assert (_ulps(f[finite, 0], np.sin(x[finite].astype(np.float64)), np.float32) <= 4).all()
        assert (_ulps(f[finite, 1], np.cos(x[finite].astype(np.float64)), np.float32) <= 4).all()
        m, ee = np.frexp(x[finite])
        np.testing.assert_array_equal(f[finite, 2], m)
        np.testing.assert_array_equal(e[finite], ee)
        fr, ip = np.modf(x)
        np.testing.assert_array_equal(f[:, 3], fr)
        np.testing.assert_array_equal(f[:, 4], ip)
        assert (np.abs(f[finite, 5] - np.sin(np.pi * x[finite].astype(np.float64))) < 1e-5).all()
    x64 = x.astype(np.float64)
    f64 = np.zeros((x.size, 5))
    tuples64[1, x.size](x64, f64, e)
    np.testing.assert_array_equal(f64[finite, 2], np.frexp(x64[finite])[0])
    np.testing.assert_array_equal(e[finite], np.frexp(x64[finite])[1])
    np.testing.assert_array_equal(f64[:, 3], np.modf(x64)[0])
    np.testing.assert_array_equal(f64[:, 4], np.modf(x64)[1])
    assert (_ulps(f64[finite, 0], np.sin(x64[finite]), np.float64) <= 1).all()


@metal.jit
def bits(x, d, i32, i64, f, f64, h):
    i = metal.grid(1)
    if i < x.size:
        i32[i, 0] = ld.float_as_int(x[i])
        f[i, 0] = ld.int_as_float(i32[i, 0])
        i32[i, 1] = ld.double2hiint(d[i])
        i32[i, 2] = ld.double2loint(d[i])
        f64[i, 0] = ld.hiloint2double(i32[i, 1], i32[i, 2])
        i64[i] = ld.double_as_longlong(d[i])
        f64[i, 1] = ld.longlong_as_double(i64[i])
        h[i] = ld.float2half_rn(x[i])
        f[i, 1] = ld.half2float(h[i])
        f[i, 2] = ld.saturatef(x[i])
        i32[i, 3] = ld.ilogbf(x[i])
        f[i, 3] = ld.fdimf(x[i], 1.0)
        f[i, 4] = ld.nextafterf(x[i], 0.0)
        i32[i, 4] = ld.signbitf(x[i])
        i32[i, 5] = ld.isnanf(x[i])
        i32[i, 6] = ld.finitef(x[i])
        f[i, 5] = ld.roundf(x[i])
        f64[i, 2] = ld.round(d[i])
        i32[i, 7] = ld.ilogb(d[i])


def test_bit_patterns_halves_and_cudas_special_values():
    x = np.array([1.5, -2.5, 0.0, np.nan, np.inf, 0.3, -0.0, 65519.0], np.float32)
    d = x.astype(np.float64) * 3.0
    i32 = np.zeros((x.size, 8), np.int32)
    i64 = np.zeros(x.size, np.int64)
    f = np.zeros((x.size, 6), np.float32)
    f64 = np.zeros((x.size, 3))
    h = np.zeros(x.size, np.int16)
    with np.errstate(invalid="ignore"):
        bits[1, x.size](x, d, i32, i64, f, f64, h)
    np.testing.assert_array_equal(i32[:, 0], x.view(np.int32))
    np.testing.assert_array_equal(f[:, 0].view(np.int32), x.view(np.int32))
    np.testing.assert_array_equal(i32[:, 1], (d.view(np.int64) >> 32).astype(np.int32))
    np.testing.assert_array_equal(i32[:, 2], d.view(np.int64).astype(np.int32))
    np.testing.assert_array_equal(f64[:, 0].view(np.int64), d.view(np.int64))
    np.testing.assert_array_equal(i64, d.view(np.int64))
    np.testing.assert_array_equal(f64[:, 1].view(np.int64), d.view(np.int64))
    np.testing.assert_array_equal(h, x.astype(np.float16).view(np.int16))
    np.testing.assert_array_equal(f[:, 1], x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(f[:, 2], [1.0, 0.0, 0.0, 0.0, 1.0, np.float32(0.3), 0.0, 1.0])
    int_min, int_max = -2 ** 31, 2 ** 31 - 1
    np.testing.assert_array_equal(i32[:, 3], [0, 1, int_min, int_min, int_max, -2, int_min, 15])
    np.testing.assert_array_equal(f[:, 3], np.array([0.5, 0.0, 0.0, np.nan, np.inf, 0.0, 0.0, 65518.0], np.float32))
    np.testing.assert_array_equal(f[:, 4], np.nextafter(x, np.float32(0)))
    np.testing.assert_array_equal(i32[:, 4] != 0, np.signbit(x))
    np.testing.assert_array_equal(i32[:, 5] != 0, np.isnan(x))
    np.testing.assert_array_equal(i32[:, 6] != 0, np.isfinite(x))
    away = lambda v: np.where(np.isfinite(v), np.trunc(v + np.copysign(0.5, v)), v)   # noqa: E731
    np.testing.assert_array_equal(f[:, 5], away(x))
    np.testing.assert_array_equal(f64[:, 2], away(d))
    with np.errstate(divide="ignore"):
        expected = np.where(np.isfinite(d) & (d != 0), np.floor(np.log2(np.abs(d))), 0)
    np.testing.assert_array_equal(i32[:, 7], np.where(np.isinf(d), int_max,
                                                      np.where(np.isfinite(d) & (d != 0), expected, int_min)))


def test_bit_patterns_of_float64_are_refused_where_float64_is_computed_in_float32():
    from numba_metal.errors import UnsupportedFeatureError

    @metal.jit
    def k(x, out):
        out[0] = ld.double2hiint(x[0] * 0.5)

    with pytest.raises(UnsupportedFeatureError, match=r"double2hiint: needs float64 computed exactly"):
        k.inspect_msl((metal.float32[:], metal.int32[:]))


#: The unary rows computed by the math table's routines: libdevice name -> (Python's math function, inputs).
_MATH_UNARY = {name: (getattr(math, math_name), DOMAIN) for name, math_name, DOMAIN in (
    ("acos", "acos", (-0.99, 0.99)), ("asin", "asin", (-0.99, 0.99)), ("atan", "atan", (-5, 5)),
    ("acosh", "acosh", (1.1, 40)), ("asinh", "asinh", (-5, 5)), ("atanh", "atanh", (-0.9, 0.9)),
    ("cosh", "cosh", (-5, 5)), ("erf", "erf", (-3, 3)), ("erfc", "erfc", (-2, 5)), ("lgamma", "lgamma", (0.6, 20)),
    ("tgamma", "gamma", (0.2, 15)), ("cbrt", "cbrt", (-30, 30)), ("expm1", "expm1", (-3, 3)),
    ("log1p", "log1p", (-0.5, 30)))}


@pytest.mark.parametrize("name", sorted(_MATH_UNARY))
@pytest.mark.parametrize("suffix,dtype", [("f", np.float32), ("", np.float64)])
def test_math_table_rows_against_python_within_their_bound(name, suffix, dtype):
    fn, (lo, hi) = _MATH_UNARY[name]
    row = {f.name: f for f in F.LIBDEVICE}[name + suffix]
    x = np.linspace(lo, hi, 41).astype(dtype)
    out = np.zeros_like(x)
    unary(getattr(ld, name + suffix))[1, x.size](x, out)
    if dtype is np.float64:   # mpmath: CPython's gamma and lgamma are not correctly rounded
        mp_fn = {"tgamma": mpmath.gamma, "lgamma": mpmath.loggamma}.get(name)
        want = np.array([float(mp_fn(mpmath.mpf(float(v)))) if mp_fn else fn(float(v)) for v in x])
    else:
        want = np.array([fn(float(v)) for v in x])
    err = _ulps(out, want, dtype)
    absolute = np.abs(out.astype(np.float64) - want)
    bound = row.accuracy.ulps if dtype is np.float32 else 1.0   # the float64 library: measured <= 0.52 ulp
    assert ((err <= bound + 1e-9) | (absolute <= row.accuracy.absolute)).all(), (name + suffix, err.max())


@metal.jit
def fast(x, y, out):
    i = metal.grid(1)
    if i < x.size:
        out[i, 0] = ld.fast_sinf(x[i])
        out[i, 1] = ld.fast_cosf(x[i])
        out[i, 2] = ld.fast_expf(x[i])
        out[i, 3] = ld.fast_logf(y[i])
        out[i, 4] = ld.fast_log2f(y[i])
        out[i, 5] = ld.fast_fdividef(x[i], y[i])


def test_fast_functions_within_msl_fast_math_bounds():
    """MSL Table 8.2 (fast math): sin/cos absolute error <= 2^-13 on [-pi, pi]; exp <= 3 + floor(|2x|) ulp;
    log and log2 absolute error <= 2^-21 and 2^-22 on [0.5, 2]; x/y <= 2.5 ulp."""
    x = np.linspace(-np.pi, np.pi, 101).astype(np.float32)
    y = np.linspace(0.5, 2.0, 101).astype(np.float32)
    out = np.zeros((x.size, 6), np.float32)
    fast[1, x.size](x, y, out)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert np.abs(out[:, 0] - np.sin(x64)).max() <= 2 ** -13
    assert np.abs(out[:, 1] - np.cos(x64)).max() <= 2 ** -13
    assert (_ulps(out[:, 2], np.exp(x64), np.float32) <= 3 + np.floor(np.abs(2 * x64))).all()
    assert np.abs(out[:, 3] - np.log(y64)).max() <= 2 ** -21
    assert np.abs(out[:, 4] - np.log2(y64)).max() <= 2 ** -22
    assert _ulps(out[:, 5], x64 / y64, np.float32).max() <= 2.5


#: Binary rows: libdevice name (float64 form) -> the reference on float64 values.
_BINARY = {"atan2": math.atan2, "copysign": math.copysign, "fmod": math.fmod, "hypot": math.hypot,
           "pow": math.pow, "remainder": math.remainder, "fmax": np.fmax, "fmin": np.fmin,
           "fdim": lambda a, b: a - b if a > b else 0.0}


@pytest.mark.parametrize("name", sorted(_BINARY))
@pytest.mark.parametrize("suffix,dtype", [("f", np.float32), ("", np.float64)])
def test_binary_rows_within_their_bound(name, suffix, dtype):
    row = {f.name: f for f in F.LIBDEVICE}[name + suffix]
    rng = np.random.default_rng(3)
    x = rng.uniform(0.1, 4, 40).astype(dtype)
    y = rng.uniform(-3, 3, 40).astype(dtype)
    out = np.zeros_like(x)
    binary(getattr(ld, name + suffix))[1, x.size](x, y, out)
    want = np.array([float(_BINARY[name](float(a), float(b))) for a, b in zip(x, y)])
    bound = row.accuracy.ulps if dtype is np.float32 else 1.0
    assert _ulps(out, want, dtype).max() <= max(bound, 0.5) + 1e-9, name + suffix


@metal.jit
def misc(x, n, f, i32, i64):
    k = metal.grid(1)
    if k < x.size:
        f[k, 0] = ld.fmaf(x[k], x[k], -1.0)
        f[k, 1] = ld.ldexpf(x[k], n[k])
        f[k, 2] = ld.scalbnf(x[k], n[k])
        f[k, 3] = ld.powif(x[k], n[k])
        f[k, 4] = ld.nextafterf(x[k], 10.0)
        i64[k, 0] = ld.llrintf(x[k] * 3.0)
        i64[k, 1] = ld.llroundf(x[k] * 3.0)
        i32[k, 0] = ld.float2int_rn(x[k] * 3.0)
        i32[k, 1] = ld.float2int_rz(x[k] * 3.0)
        i32[k, 2] = ld.float2int_rd(x[k] * 3.0)
        i32[k, 3] = ld.float2int_ru(x[k] * 3.0)
        i64[k, 2] = ld.float2ll_rd(x[k] * 3.0)
        i64[k, 3] = ld.float2ull_ru(abs(x[k]) * 3.0)
        i32[k, 4] = ld.float2uint_rz(abs(x[k]) * 3.0)


def test_fma_scaling_powers_neighbours_and_conversions_to_integers():
    x = np.array([1.5, -2.25, 0.5, 3.1, -0.7, 2.5, -2.5, 1.0001], np.float32)
    n = np.array([3, -2, 5, 0, 1, 2, 4, -3], np.int32)
    f = np.zeros((x.size, 5), np.float32)
    i32 = np.zeros((x.size, 5), np.int32)
    i64 = np.zeros((x.size, 4), np.int64)
    misc[1, x.size](x, n, f, i32, i64)
    np.testing.assert_array_equal(f[:, 0], (x.astype(np.float64) * x - 1).astype(np.float32))
    np.testing.assert_array_equal(f[:, 1], np.ldexp(x, n))
    np.testing.assert_array_equal(f[:, 2], np.ldexp(x, n))
    assert _ulps(f[:, 3], x.astype(np.float64) ** n, np.float32).max() <= 16   # repeated products, MSL 8.1
    np.testing.assert_array_equal(f[:, 4], np.nextafter(x, np.float32(10)))
    y = x * np.float32(3.0)
    np.testing.assert_array_equal(i64[:, 0], np.rint(y))
    np.testing.assert_array_equal(i64[:, 1], np.trunc(y + np.copysign(np.float32(0.5), y)))
    for k, fn in enumerate((np.rint, np.trunc, np.floor, np.ceil)):
        np.testing.assert_array_equal(i32[:, k], fn(y))
    np.testing.assert_array_equal(i64[:, 2], np.floor(y))
    np.testing.assert_array_equal(i64[:, 3], np.ceil(np.abs(y)))
    np.testing.assert_array_equal(i32[:, 4], np.trunc(np.abs(y)))


@metal.jit
def pi_functions(x, out):
    i = metal.grid(1)
    if i < x.size:
        out[i, 0] = ld.sinpi(x[i])
        out[i, 1] = ld.cospi(x[i])
        s, c = ld.sincospi(x[i])
        out[i, 2] = s
        out[i, 3] = c
        out[i, 4] = ld.rcbrt(x[i])


def test_float64_sinpi_cospi_and_rcbrt_within_their_bounds():
    x = np.concatenate([np.linspace(-3.3, 3.3, 67), [0.5, 1.0, 1.5, -2.0, 2.0 ** 52 + 1, 2.0 ** 53, 1e300, 0.0]])
    out = np.zeros((x.size, 5))
    pi_functions[1, x.size](x, out)
    with mpmath.workdps(40):
        sinpi = np.array([float(mpmath.sinpi(mpmath.mpf(v))) for v in x])
        cospi = np.array([float(mpmath.cospi(mpmath.mpf(v))) for v in x])
        rcbrt = np.array([float(1 / mpmath.cbrt(mpmath.mpf(v))) if v > 0 else np.nan for v in x])
    bound = {f.name: f for f in F.LIBDEVICE}["sinpi"].accuracy.ulps
    for col, want in ((0, sinpi), (1, cospi), (2, sinpi), (3, cospi)):
        exact_zero = want == 0
        assert (out[exact_zero, col] == 0).all()
        assert _ulps(out[~exact_zero, col], want[~exact_zero], np.float64).max() <= bound
    positive = x > 0
    assert _ulps(out[positive, 4], rcbrt[positive], np.float64).max() <= 1.1


@metal.jit
def remquo_kernel(x, y, rem, quo, rem32, quo32):
    i = metal.grid(1)
    if i < x.size:
        r, q = ld.remquo(x[i], y[i])
        rem[i] = r
        quo[i] = q
        r32, q32 = ld.remquof(metal.float32(x[i]), metal.float32(y[i]))
        rem32[i] = r32
        quo32[i] = q32


def test_remquo_gives_the_remainder_and_the_low_bits_of_its_quotient():
    from fractions import Fraction
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-1e4, 1e4, 40), [7.0, -7.0, 5.0, 2.5, 1e30, 9.0]]).astype(np.float32)
    y = np.concatenate([rng.uniform(-10, 10, 40), [2.0, 2.0, -2.0, 1.0, 3.0, 2.0]]).astype(np.float32)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    rem, quo = np.zeros(x.size), np.zeros(x.size, np.int32)
    rem32, quo32 = np.zeros(x.size, np.float32), np.zeros(x.size, np.int32)
    remquo_kernel[1, x.size](x64, y64, rem, quo, rem32, quo32)
    for i in range(x.size):
        q = Fraction(float(x64[i])) / Fraction(float(y64[i]))
        n = round(q)   # Python rounds a Fraction half to even, as remainder's quotient
        assert rem[i] == math.remainder(x64[i], y64[i]) and rem32[i] == rem[i]
        for got in (quo[i], quo32[i]):
            assert abs(int(got)) == abs(n) % 8 and (got == 0 or (got < 0) == (q < 0)), (x[i], y[i], got, n)


def test_normcdf_within_its_bound_into_the_tail():
    """normcdf against mpmath's exact 0.5 erfc(-x/sqrt(2)): float32 within 5 ulp (the math library's erfc
    bound plus the rounding and its first-order correction), float64 within 1.5 ulp, down to x = -12 where
    the value is 1.8e-33 (the tail's relative error is what the correction keeps small)."""
    x32 = np.linspace(-12.0, 6.0, 181).astype(np.float32)
    out32 = np.zeros_like(x32)
    unary(ld.normcdff)[1, x32.size](x32, out32)
    x64 = x32.astype(np.float64) + 1e-9
    out64 = np.zeros_like(x64)
    unary(ld.normcdf)[1, x64.size](x64, out64)
    with mpmath.workdps(40):
        ref = lambda v: float(mpmath.erfc(-mpmath.mpf(float(v)) / mpmath.sqrt(2)) / 2)   # noqa: E731
        want32 = np.array([ref(v) for v in x32])
        want64 = np.array([ref(v) for v in x64])
    assert _ulps(out32, want32, np.float32).max() <= 5
    assert _ulps(out64, want64, np.float64).max() <= 1.5


@metal.jit
def inverses(y, w, p, out):
    i = metal.grid(1)
    if i < y.size:
        out[i, 0] = ld.erfinv(y[i])
        out[i, 1] = ld.erfcinv(w[i])
        out[i, 2] = ld.normcdfinv(p[i])


@metal.jit
def inverses32(y, w, p, out):
    i = metal.grid(1)
    if i < y.size:
        out[i, 0] = ld.erfinvf(y[i])
        out[i, 1] = ld.erfcinvf(w[i])
        out[i, 2] = ld.normcdfinvf(p[i])


def test_inverse_error_functions_against_mpmath():
    """erfinv, erfcinv, normcdfinv within 2, 2 and 2.5 ulp (float64) and 1 ulp (float32: the float64
    result rounded once more), over the centre and far into the tail (erfcinv of 1e-300 and of the
    smallest subnormal), with the special values at the ends of the domain."""
    y = np.concatenate([np.linspace(-0.999, 0.999, 61), [1e-300, -1e-20, 0.5, 1 - 2 ** -52]])
    w = np.concatenate([np.geomspace(1e-300, 1.0, 40), np.linspace(0.5, 1.99, 21), [5e-324, 2 - 2 ** -51]])
    p = np.concatenate([np.geomspace(1e-300, 0.5, 30), np.linspace(0.5, 1 - 1e-12, 21)])
    n = max(y.size, w.size, p.size)
    y, w, p = (np.resize(a, n) for a in (y, w, p))
    out = np.zeros((n, 3))
    inverses[1, n](y, w, p, out)
    with mpmath.workdps(50):
        want_y = [float(mpmath.erfinv(mpmath.mpf(float(a)))) for a in y]
    with mpmath.workdps(360):   # 1 - w for w down to 5e-324
        want = np.array([want_y, [float(mpmath.erfinv(1 - mpmath.mpf(float(a)))) for a in w],
                         [float(-mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(float(a)))) for a in p]]).T
    for col, bound in ((0, 2.0), (1, 2.0), (2, 2.5)):
        assert _ulps(out[:, col], want[:, col], np.float64).max() <= bound, col
    y32, w32, p32 = (a.astype(np.float32) for a in (y, w, p))
    ok = (np.abs(y32) < 1) & (w32 > 1e-37) & (w32 < 2) & (p32 > 1e-37) & (p32 < 1)
    out32 = np.zeros((n, 3), np.float32)
    inverses32[1, n](y32, w32, p32, out32)
    with mpmath.workdps(50):
        want32 = np.array([[float(mpmath.erfinv(mpmath.mpf(float(a)))) for a in y32],
                           [float(mpmath.erfinv(1 - mpmath.mpf(float(a)))) for a in w32],
                           [float(-mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(float(a)))) for a in p32]]).T
    assert _ulps(out32[ok], want32[ok], np.float32).max() <= 1.0
    edge = np.zeros((4, 3))
    inverses[1, 4](np.array([1.0, -1.0, 2.0, np.nan]), np.array([0.0, 2.0, -0.5, np.nan]),
                   np.array([0.0, 1.0, 1.5, np.nan]), edge)
    assert list(edge[:2, 0]) == [np.inf, -np.inf] and np.isnan(edge[2:, 0]).all()
    assert list(edge[:2, 1]) == [np.inf, -np.inf] and np.isnan(edge[2:, 1]).all()
    assert list(edge[:2, 2]) == [-np.inf, np.inf] and np.isnan(edge[2:, 2]).all()


def test_erfcx_against_mpmath():
    """erfcx(x) = exp(x^2) erfc(x): float64 within 3 ulp (erfc, exp and the exact split of x^2; the
    asymptotic series from x = 26 on), float32 within 1 ulp, from -26 (near overflow) to 1e10."""
    x = np.concatenate([np.linspace(-26.0, 30.0, 113), [1e3, 1e10, 0.0, -1e-8]])
    out = np.zeros_like(x)
    unary(ld.erfcx)[1, x.size](x, out)
    x32 = np.linspace(-9.0, 1e4, 57).astype(np.float32)
    out32 = np.zeros_like(x32)
    unary(ld.erfcxf)[1, x32.size](x32, out32)
    with mpmath.workdps(60):
        erfcx = lambda v: float(mpmath.exp(mpmath.mpf(float(v)) ** 2) * mpmath.erfc(mpmath.mpf(float(v))))  # noqa: E731
        want = np.array([erfcx(v) for v in x])
        want32 = np.array([erfcx(v) for v in x32])
    assert _ulps(out, want, np.float64).max() <= 3
    assert _ulps(out32, want32, np.float32).max() <= 1
