"""float64 through the compiler: kernels that hold float64 data compute it exactly with the emulated
library (compiler/mslib/float64.metal), bit for bit as Numba's @njit computes the same Python on the CPU;
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
from kernel_rows import njit_rows, rows_kernel
from numba_metal import metal
from numba_metal.compiler import msl, mslib
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


_binary_kernel = rows_kernel(_binary_dev)
_predicate_kernel = rows_kernel(_predicates_dev)


def test_arithmetic_and_math_operations_are_bit_exact_against_njit():
    x = _values(1)
    y = np.random.default_rng(2).permutation(_values(3))
    out = np.zeros((_NB, N))
    _launch(_binary_kernel, N, x, y, out)
    want = njit_rows(_binary_ops, _NB, np.float64, x, y)
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
    want = njit_rows(_predicates, _NP, np.bool_, x, y)
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


@metal.jit
def _pairs_kernel(x, y, out, exponent, close):
    i = metal.grid(1)
    if i < x.size:
        mantissa, e = math.frexp(x[i])
        out[0, i] = mantissa
        exponent[i] = e
        frac, whole = math.modf(x[i])
        out[1, i] = frac
        out[2, i] = whole
        out[3, i] = math.nextafter(x[i], y[i])
        close[0, i] = math.isclose(x[i], y[i])
        close[1, i] = math.isclose(x[i], y[i], abs_tol=1e-300)
        close[2, i] = math.isclose(y[i], x[i], rel_tol=0.25)


def _isclose32(a, b, rel_tol, abs_tol):
    f = np.float32
    rel_tol, abs_tol = f(rel_tol), f(abs_tol)
    if a == b:
        return True
    if np.isinf(a) or np.isinf(b):
        return False
    with np.errstate(all="ignore"):
        diff = abs(f(b) - f(a))
        return bool(diff <= abs(rel_tol * f(b)) or diff <= abs(rel_tol * f(a)) or diff <= abs_tol)


def _python_pairs(x, y, dtype):
    """What Python's math computes (frexp, modf, isclose; nextafter as np.nextafter, which is C's)."""
    n = x.size
    out = np.zeros((4, n), dtype)
    exponent = np.zeros(n, np.int32)
    close = np.zeros((3, n), np.bool_)
    for i, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
        out[0, i], exponent[i] = math.frexp(a)
        out[1, i], out[2, i] = (math.copysign(0.0, a), a) if math.isinf(a) else math.modf(a)
        close[:, i] = (math.isclose(a, b), math.isclose(a, b, abs_tol=1e-300), math.isclose(b, a, rel_tol=0.25))
    with np.errstate(all="ignore"):
        out[3] = np.nextafter(x, y)
    return out, exponent, close


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_frexp_modf_nextafter_isclose_as_python(dtype):
    """math.frexp, math.modf (Python's: Numba does not type it), math.nextafter and math.isclose (CPython's
    formula with its keyword arguments), bit for bit on values of every class; float32 data keeps float32
    (its frexp, modf and nextafter are exact in float32; isclose is computed in float32, where its operands
    are exact, away from subnormals, which Apple GPUs flush)."""
    rng = np.random.default_rng(9)
    x = _values(9, 2048)
    y = np.where(rng.random(2048) < 0.3, x, _values(10, 2048))
    with np.errstate(all="ignore"):
        y[::7] = x[::7] * (1 + 1e-10)      # near neighbours, for isclose
    if dtype == np.float32:
        with np.errstate(all="ignore"):
            x, y = x.astype(np.float32), y.astype(np.float32)
        tiny = np.finfo(np.float32).tiny
        keep = ~((np.abs(x) < tiny) & (x != 0)) & ~((np.abs(y) < tiny) & (y != 0))
        keep &= ~((np.abs(np.nextafter(x, y)) < tiny) & (np.nextafter(x, y) != 0))
        keep &= (np.abs(x) < 1e30) & (np.abs(y) < 1e30) | ~np.isfinite(x) | ~np.isfinite(y)
        x, y = x[keep], y[keep]
    n = x.size
    out = np.zeros((4, n), dtype)
    exponent = np.zeros(n, np.int32)
    close = np.zeros((3, n), np.bool_)
    _launch(_pairs_kernel, n, x, y, out, exponent, close)
    want, want_exponent, want_close = _python_pairs(x, y, dtype)
    for k, what in enumerate(("frexp mantissa", "modf fraction", "modf integer part", "nextafter")):
        _same_bits(out[k], want[k], any_nan=True, what=what)
    _same_bits(exponent, want_exponent, what="frexp exponent")
    if dtype == np.float32:   # CPython's formula evaluated in float32, as a float32 kernel computes it
        want_close = np.array([[_isclose32(a, b, 1e-9, 0.0), _isclose32(a, b, 1e-9, 1e-300),
                                _isclose32(b, a, 0.25, 0.0)] for a, b in zip(x, y)]).T
    _same_bits(close, want_close, what="isclose")


def test_isclose_takes_only_its_keywords():
    def kernel(x, out):
        out[0] = math.isclose(x[0], x[1], 1e-3)

    with pytest.raises(UnsupportedFeatureError, match="isclose takes 2 positional arguments and the keywords rel_tol, abs_tol"):
        metal.compile_msl(kernel, "void(float64[:], boolean[:])")


@metal.jit
def _round_ndigits_kernel(x, ndigits, out, out2):
    i = metal.grid(1)
    if i < x.size:
        out[i] = round(x[i], ndigits[i])
        out2[i] = round(x[i], 2)


def _round_cases(rng):
    """Values and ndigits: decimal ties k.5 10^-nd and their float64 neighbours (where dtoa's exact
    comparison decides), random magnitudes, subnormals, extremes, and ndigits from -22 to 22 and beyond
    (where the result is x or +-0 whatever ndigits)."""
    xs, nds = [], []
    for _ in range(3000):
        nd = int(rng.integers(-6, 16))
        tie = (int(rng.integers(0, 10 ** 6)) * 2 + 1) / 2 / 10.0 ** nd
        for v in (tie, np.nextafter(tie, 0), np.nextafter(tie, np.inf)):
            xs.append(v * (-1) ** int(rng.integers(0, 2)))
            nds.append(nd)
    scale = 10.0 ** rng.integers(-30, 30, 20000)
    xs += list(rng.standard_normal(20000) * scale)
    nds += list(rng.integers(-22, 23, 20000))
    edge = [2.675, 0.125, 0.375, 2.5, -2.5, 0.285, 1.005, 4.35, 1e-5, 5e-324, 1.5e-323, 2.2250738585072014e-308,
            1e22, 1e23, 123456789012345678.0, 1.7976931348623157e308, 0.5, -0.0, 0.0, np.inf, -np.inf, np.nan]
    for x in edge:
        for nd in list(range(-22, 23)) + [324, 400, -309, -400]:
            xs.append(x)
            nds.append(nd)
    for x, nd in [(0.1, 30), (1.0, 323), (3.0, 100), (1e300, -200), (1.0, -100), (1e-300, -30), (1e200, 50)]:
        xs.append(x)   # beyond 22 digits where the result is x or +-0 exactly
        nds.append(nd)
    return np.array(xs), np.array(nds, np.int64)


def _python_round(x, nd):
    try:
        return round(x, nd)
    except OverflowError:   # CPython's "rounded value too large to represent": infinite here
        return math.copysign(math.inf, x)


def test_round_ndigits_of_float64_is_pythons_correctly_rounded_decimal_rounding():
    """round(x, ndigits) of float64 bit for bit as CPython's (correctly rounded: the exact binary value
    rounded half-even to a multiple of 10^-ndigits, then to the nearest float64), e.g. round(2.675, 2) is
    2.67 (Numba's @njit gives 2.68); with a run-time and a constant ndigits."""
    x, nd = _round_cases(np.random.default_rng(17))
    out, out2 = np.zeros_like(x), np.zeros_like(x)
    _launch(_round_ndigits_kernel, x.size, x, nd, out, out2)
    _same_bits(out, np.array([_python_round(float(v), int(n)) for v, n in zip(x, nd)]), what="round(x, nd)")
    _same_bits(out2, np.array([_python_round(float(v), 2) for v in x]), what="round(x, 2)")


def test_round_ndigits_beyond_22_digits():
    """Beyond 22 digits (5^ndigits no longer fits 128 bits: 1280-bit integers), bit for bit as CPython's,
    where x 10^ndigits is neither tiny nor huge (the shortcuts' results are tested above), subnormal
    results included."""
    rng = np.random.default_rng(18)
    nd = rng.integers(23, 324, 1500)
    x = 10.0 ** np.maximum(rng.uniform(-nd - 0.5, -nd + 16.5), -323.3)
    q = rng.integers(23, 309, 1500)
    big = 10.0 ** np.minimum(rng.uniform(q - 0.5, q + 16.5), 308.2) * np.where(rng.random(1500) < 0.5, -1, 1)
    x, nd = np.concatenate([x, big, [5e-324, 1.5e-323, 1e-310]]), np.concatenate([nd, -q, [323, 323, 320]])
    out, out2 = np.zeros_like(x), np.zeros_like(x)
    _launch(_round_ndigits_kernel, x.size, x, nd, out, out2)
    _same_bits(out, np.array([_python_round(float(v), int(n)) for v, n in zip(x, nd)]), what="round(x, nd)")


# ---------------------------------------------------------------------------------------------
# Conversions with every integer width, float32 and float16, both ways
# ---------------------------------------------------------------------------------------------

_INT_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


@metal.jit
def _convert_kernel(x, ints, back, f32, f16, from32, from16):
    i = metal.grid(1)
    if i < x.size:
        for k in range(ints.shape[0]):
            back[k, i] = ints[k, i]
        f32[i] = x[i]
        f16[i] = x[i]
        from32[i] = np.float64(f32[i])
        from16[i] = np.float64(f16[i])


@metal.jit
def _narrow_kernel(x, i8, u8, i16, u16, i32, u32, i64, u64):
    i = metal.grid(1)
    if i < x.size:
        v = x[i]
        i8[i] = np.int8(v)
        u8[i] = np.uint8(v)
        i16[i] = np.int16(v)
        u16[i] = np.uint16(v)
        i32[i] = np.int32(v)
        u32[i] = np.uint32(v)
        i64[i] = np.int64(v)
        u64[i] = np.uint64(v)


def test_conversions_with_every_integer_width_float32_and_float16():
    rng = np.random.default_rng(9)
    x = _values(10)
    ints = np.stack([rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, N, dtype=np.int64)
                     for _ in range(2)])
    ints[0, :8] = [0, -1, 1, 2 ** 53 + 1, -(2 ** 63), 2 ** 63 - 1, 2 ** 54 + 2, 3]
    back = np.zeros((2, N))
    f32 = np.zeros(N, np.float32)
    f16 = np.zeros(N, np.float16)
    from32 = np.zeros(N)
    from16 = np.zeros(N)
    _launch(_convert_kernel, N, x, ints, back, f32, f16, from32, from16)
    _same_bits(back, ints.astype(np.float64), what="int64 -> float64")
    with np.errstate(all="ignore"):
        _same_bits(f32, x.astype(np.float32), any_nan=True, what="float64 -> float32")
        _same_bits(f16, x.astype(np.float16), any_nan=True, what="float64 -> float16")
    _same_bits(from32, f32.astype(np.float64), any_nan=True, what="float32 -> float64")
    _same_bits(from16, f16.astype(np.float64), what="float16 -> float64")

    # float64 -> every integer width, on values each type holds (out-of-range values are undefined
    # in Numba; the library's choice is tested in test_f64_numba.py).
    values = {dt: rng.uniform(np.iinfo(dt).min, np.iinfo(dt).max, N) for dt in _INT_DTYPES}
    for dt in _INT_DTYPES:
        v = values[dt]
        v[:4] = [0.0, -0.0, 0.99, np.iinfo(dt).max * 0.5 + 0.5]
        outs = [np.zeros(N, d) for d in _INT_DTYPES]
        _launch(_narrow_kernel, N, v, *outs)
        _same_bits(outs[_INT_DTYPES.index(dt)], np.trunc(v).astype(dt), what=f"float64 -> {np.dtype(dt)}")


# ---------------------------------------------------------------------------------------------
# Everywhere a float64 can be
# ---------------------------------------------------------------------------------------------


@metal.jit(device=True)
def _horner(coeffs, x):
    acc = np.float64(0.0)
    for k in range(len(coeffs)):
        acc = acc * x + coeffs[k]
    return acc, acc * 2.0


_TABLE = np.array([0.1, 0.2, 1.0 / 3.0, math.pi])


@metal.jit
def _places_kernel(x, out, scale):
    i = metal.grid(1)
    t = metal.threadIdx.x
    tile = metal.shared.array(128, np.float64)
    scratch = metal.local.array(4, np.float64)
    const = metal.const.array_like(_TABLE)
    if i < x.size:
        tile[t] = x[i]
    metal.syncthreads()
    if i < x.size:
        for k in range(4):
            scratch[k] = const[k] * scale
        p, twice = _horner((scratch[0], scratch[1], scratch[2], scratch[3]), tile[t])
        s = 0.0
        for k in range(4):
            s += scratch[k] * tile[t]
        out[0, i] = p
        out[1, i] = twice
        out[2, i] = s
        out[3, i] = _TABLE[i % 4]


def test_locals_loops_device_functions_tuples_shared_local_and_constant_arrays():
    x = np.random.default_rng(11).uniform(-2, 2, 1000)
    scale = np.float64(1.0) / 7.0
    out = np.zeros((4, x.size))
    _launch(_places_kernel, x.size, x, out, scale)
    c = _TABLE * scale
    p = np.zeros_like(x)
    s = np.zeros_like(x)
    for k in range(4):
        p = p * x + c[k]
        s = s + c[k] * x
    _same_bits(out[0], p, what="horner in a device function")
    _same_bits(out[1], p * 2.0, what="tuple returned")
    _same_bits(out[2], s, what="loop-carried sum")
    _same_bits(out[3], _TABLE[np.arange(x.size) % 4], what="constant array")


@metal.jit
def _copy2d(a, out):
    i, j = metal.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = a[i, j] * 3.0 - 1.0


@pytest.mark.parametrize("layout", ["C", "F", "A"])
def test_float64_arrays_of_every_layout_are_used_in_place(layout):
    base = np.random.default_rng(12).standard_normal((40, 60))
    a = {"C": base, "F": np.asfortranarray(base), "A": base[::2, ::-3]}[layout]
    out = np.zeros(a.shape)
    _copy2d[((a.shape[0] + 7) // 8, (a.shape[1] + 7) // 8), (8, 8)](a, out)
    metal.synchronize()
    _same_bits(out, a * 3.0 - 1.0)
    msl_text = _copy2d.inspect_msl(_copy2d.signatures[-1] if hasattr(_copy2d, "signatures") else None)
    text = msl_text if isinstance(msl_text, str) else "\n".join(msl_text.values())
    assert "device ulong*" in text and "nm_f64_mul(" in text


# ---------------------------------------------------------------------------------------------
# math functions: the float64 rows of the math table
# ---------------------------------------------------------------------------------------------


def test_every_float64_routine_of_the_math_table_is_a_library_entry_point():
    for function in F.MATH:
        routine = function.routines.get("float64")
        assert routine is not None, function.name
        for part in routine.parts if routine.source == F.TUPLE else (routine,):
            if part.source == F.EMULATED:
                assert mslib.sections()[mslib.section_of(part.name)].file != "prelude.metal", (function.name, part.name)
            else:
                assert part.source == F.OPERATOR, function.name


_UNARY_MATH = [f.name for f in F.MATH if f.signatures[-1] == "float64(float64)"]


def _unary_math_kernel(name):
    fn = getattr(math, name)

    def k(x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = fn(x[i])
    return metal.jit(k)


def _njit_math(name, x):
    fn = getattr(math, name)

    @numba.njit(error_model="numpy")
    def run(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    out = np.zeros(x.size)
    run(x, out)
    return out


#: Where Numba's @njit has no float64 implementation of a math function, NumPy's ufunc gives the special
#: values.
_NUMPY_SPECIALS = {"exp2": np.exp2, "cbrt": np.cbrt}


@pytest.mark.parametrize("name", _UNARY_MATH)
def test_unary_math_functions_of_float64_are_within_one_ulp_and_special_values_match_njit(name):
    import fm_reference as R
    rng = np.random.default_rng(13)
    x = np.concatenate([rng.uniform(-3, 3, 150), rng.uniform(0, 30, 50), np.array([1.0, 0.5, 1e-310])])
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    out = np.zeros(x.size + special.size)
    _launch(_unary_math_kernel(name), out.size, np.concatenate([x, special]), out)
    if f"math.{name}" in R.REFERENCES:
        errors = [R.ulp_error(float(o), R.reference(f"math.{name}", float(v))) for o, v in zip(out, x)]
    else:   # exact functions (sqrt, fabs, degrees ...): Numba's njit is the reference
        want = _njit_math(name, x)
        errors = [0.0 if (o == w or (math.isnan(o) and math.isnan(w))) else
                  abs(float(np.float64(o).view(np.int64)) - float(np.float64(w).view(np.int64)))
                  for o, w in zip(out, want)]
    worst = int(np.argmax(errors))
    assert errors[worst] <= 1.0, (name, x[worst], out[worst])
    if name in _NUMPY_SPECIALS:
        with np.errstate(all="ignore"):
            want_special = _NUMPY_SPECIALS[name](special)
    else:
        want_special = _njit_math(name, special)
    _same_bits(out[x.size:], want_special, any_nan=True, what=f"{name} of 0, -0, inf, -inf, nan")


# ---------------------------------------------------------------------------------------------
# float32 kernels are unchanged; the intermediates policy (compiler/precision.py)
# ---------------------------------------------------------------------------------------------

#: sha256 of the MSL of f32_msl_corpus.py's kernels, as generated before float64 became exact (and
#: checked identical with the tree of that time). A kernel that holds no float64 data must keep
#: generating exactly this code; if a deliberate change of float32 code generation moves a digest,
#: update it in the same commit and say so.
FLOAT32_MSL_DIGESTS = {
    "axpy": "e5528b9d44ce08479bc57e9e5093f4adacc0550e2f9b8cef865105a07c591250",
    "literals_and_int_division": "d7cc3e82136d551cac0f63d2e8af9a14e72efc9b211d04a5f45040f5faa6a190",
    "math_of_ints_and_floats": "411863ccab29385acc9a00f66978d69f188109bd39ee9315524f3dff831c38ef",
    "minmax_round_compare": "a8a5cbce0fbf5520c57d16f7f830fca87906520d7b646f6ab5f58fbdfb523e39",
    "shared_reduction": "70cca77a500d9c00eb0d07c0f18694b765a53b8eded26eb31e2c2d295f22561d",   # issue 28: 32-bit shared index
    "halves_and_casts": "127fc9455aff481b24504c533609f67e25b75612c2d3ab4c1ac9b10088c9ecf4",
}


def test_float32_kernels_generate_the_msl_they_generated_before_float64_was_exact():
    from f32_msl_corpus import CORPUS
    assert {fn.__name__ for fn, _ in CORPUS} == set(FLOAT32_MSL_DIGESTS)
    for fn, sig in CORPUS:
        text = metal.compile_msl(fn, sig)
        assert msl.FLOAT64 not in text, fn.__name__
        assert hashlib.sha256(text.encode()).hexdigest() == FLOAT32_MSL_DIGESTS[fn.__name__], fn.__name__


def test_float64_intermediates_of_a_float32_kernel_are_float32_unless_float64_exact_is_asked():
    from f32_msl_corpus import literals_and_int_division as kernel
    sig = "void(float32[:], float32[:], int64)"
    assert msl.FLOAT64 not in metal.compile_msl(kernel, sig)
    exact = metal.compile_msl(kernel, sig, float64="exact")
    assert "nm_f64_div(nm_f64_from_i64(" in exact and "nm_f64_to_f32(" in exact

    x = np.arange(1, 301, dtype=np.float32) / 7
    n = 3
    # Exact float64, with the Python literals next to float32 data weak (NumPy 2): x * 2.5 and x / 3 are
    # float32 operations, the rest float64.
    weak = (x * np.float32(2.5)).astype(np.float64), (x / np.float32(3)).astype(np.float64)
    want = (weak[0] + np.arange(x.size) / n - 0.1 + weak[1]).astype(np.float32)
    out = np.zeros_like(x)
    k = metal.jit(float64="exact")(kernel)
    _launch(k, x.size, x, out, n)
    _same_bits(out, want, what="float64='exact'")
    with pytest.raises(UnsupportedFeatureError, match="float64='double'"):
        metal.jit(float64="double")


def test_a_kernel_holding_float64_data_computes_its_integer_intermediates_exactly():
    def kernel(x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = x[i] + i / 3 + math.sin(i)

    text = metal.compile_msl(kernel, "void(float64[:], float64[:])")
    assert "nm_f64_sin(nm_f64_from_i64(" in text and "nm_f64_div(" in text
    text = metal.compile_msl(kernel, "void(float32[:], float32[:])")
    assert msl.FLOAT64 not in text


def test_np_float64_in_the_code_is_float64_data():
    def kernel(x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = np.float32(np.float64(x[i]) / 3.0)

    text = metal.compile_msl(kernel, "void(float32[:], float32[:])")
    assert "nm_f64_from_f32(" in text and "nm_f64_div(" in text and "nm_f64_to_f32(" in text


def test_only_the_library_sections_a_kernel_calls_are_emitted():
    def adds(x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = x[i] + x[i]

    text = metal.compile_msl(adds, "void(float64[:], float64[:])")
    assert "nm_f64_add(" in text
    assert "nm_f64_div(" not in text and "nm_f64_sqrt(" not in text and "nm_f64_exp(" not in text


# ---------------------------------------------------------------------------------------------
# Reductions, SIMD shuffles, ufuncs, atomics
# ---------------------------------------------------------------------------------------------


def test_reductions_of_float64_arrays_are_exact_beyond_float32():
    # Integers above 2**24 and their sums below 2**53: every partial sum is exact in float64 only.
    x = (2.0 ** 30 + np.arange(5000)) * np.where(np.arange(5000) % 3 == 0, -1.0, 1.0)
    assert metal.reduce_sum(x) == x.sum()
    x[1234] = -2.0 ** 40 - 0.5
    assert metal.reduce_min(x) == x.min() and metal.reduce_max(x) == x.max()
    x[77] = np.nan
    assert math.isnan(metal.reduce_max(x))

    @metal.reduce
    def largest_magnitude(a, b):
        return a if abs(a) >= abs(b) else b

    assert largest_magnitude(x[100:]) == -2.0 ** 40 - 0.5


@metal.jit
def _shuffle_kernel(x, out):
    i = metal.grid(1)
    v = x[i]
    out[0, i] = metal.simd_shuffle_xor(v, 1)
    out[1, i] = metal.simd_broadcast(v, 3)
    out[2, i] = metal.shfl_down_sync(0xFFFFFFFF, v, 2)


def test_simd_shuffles_and_broadcasts_move_float64_as_two_halves():
    x = _values(14, 64)
    out = np.zeros((3, 64))
    _shuffle_kernel[1, 64](x, out)
    metal.synchronize()
    lanes = np.arange(64)
    _same_bits(out[0], x[lanes ^ 1])
    _same_bits(out[1], x[(lanes // 32) * 32 + 3])
    down = np.where(lanes % 32 < 30, lanes + 2, lanes)
    _same_bits(out[2], x[down])


@metal.jit
def _simd_reduce_kernel(x, keep, out):
    i = metal.grid(1)
    if i < x.size and keep[i]:
        v = x[i]
        out[0, i] = metal.simd_sum(v)
        out[1, i] = metal.simd_product(v)
        out[2, i] = metal.simd_min(v)
        out[3, i] = metal.simd_max(v)
        out[4, i] = metal.simd_prefix_inclusive_sum(v)
        out[5, i] = metal.simd_prefix_exclusive_sum(v)


def _fmin(a, b):
    return a if (a < b or math.isnan(b)) else b


def _fmax(a, b):
    return a if (a > b or math.isnan(b)) else b


def _lane_tree(values, active, op):
    """The documented order of the float64 SIMD reductions: the pairwise tree over the 32 lane positions,
    a subtree without active lanes left out."""
    def subtree(first, size):
        if size == 1:
            return values[first] if active[first] else None
        left, right = subtree(first, size // 2), subtree(first + size // 2, size // 2)
        return right if left is None else left if right is None else op(left, right)
    return subtree(0, 32)


def _simd_reference(x, keep):
    """What every active lane gets, from np.float64 operations in the documented order; inactive lanes
    keep the zeros the output started with."""
    want = np.zeros((6, x.size))
    with np.errstate(all="ignore"):
        for start in range(0, x.size, 32):
            vals = [np.float64(v) for v in x[start:start + 32]]
            vals += [np.float64(0)] * (32 - len(vals))
            active = [bool(k) for k in keep[start:start + 32]] + [False] * (32 - len(keep[start:start + 32]))
            lanes = [k for k in range(32) if active[k]]
            if not lanes:
                continue
            reduced = [_lane_tree(vals, active, op) for op in (np.add, np.multiply, _fmin, _fmax)]
            total = None
            for k in lanes:
                want[:4, start + k] = reduced
                want[5, start + k] = np.float64(0.0) if total is None else total
                total = vals[k] if total is None else np.add(total, vals[k])
                want[4, start + k] = total
    return want


@pytest.mark.parametrize("pattern", ["all", "holes", "partial"])
def test_simd_reductions_and_scans_of_float64_are_exact_in_their_documented_order(pattern):
    """simd_sum/product/min/max of float64 (the pairwise tree over lane positions) and the prefix sums
    (sequential, as np.cumsum), bit for bit against np.float64 operations in the same order, over values
    of every class, full SIMD groups, groups with inactive lanes and a partial last group."""
    n = 200 if pattern == "partial" else 256
    rng = np.random.default_rng(41)
    x = _values(41, n)
    x[n // 2:] = rng.standard_normal(n - n // 2) * 10.0 ** rng.integers(-20, 20, n - n // 2)
    keep = np.ones(n, np.bool_) if pattern != "holes" else rng.random(n) < 0.6
    if pattern == "holes":
        keep[32:64] = False      # a SIMD group with no active lane
        keep[64:96] = np.arange(32) == 17   # one active lane
    out = np.zeros((6, n))
    _simd_reduce_kernel[1, n](x, keep, out)
    metal.synchronize()
    _same_bits(out, _simd_reference(x, keep))


def test_simd_sum_of_float64_is_within_the_pairwise_bound_of_the_exact_sum():
    """The pairwise tree of 32 values rounds at most 5 times on any path: |error| <= 5 u sum|x| (u = 2^-53),
    against math.fsum (correctly rounded); a sequential sum of the same values may differ from it."""
    rng = np.random.default_rng(42)
    x = rng.standard_normal(1024) * 10.0 ** rng.integers(-8, 8, 1024)
    keep = np.ones(1024, np.bool_)
    out = np.zeros((6, 1024))
    _simd_reduce_kernel[4, 256](x, keep, out)
    metal.synchronize()
    for start in range(0, 1024, 32):
        group = x[start:start + 32]
        bound = 5 * 2.0 ** -53 * np.abs(group).sum()
        assert abs(out[0, start] - math.fsum(group)) <= bound
        assert np.all(out[0, start:start + 32] == out[0, start])
        assert out[4, start + 31] == np.cumsum(group)[-1]


def test_float64_atomics_are_a_clear_compile_error():
    def kernel(x):
        metal.atomic.add(x, 0, 1.0)

    with pytest.raises(UnsupportedFeatureError, match="Metal's only 64-bit atomics are max and min of uint64"):
        metal.compile_msl(kernel, "void(float64[:])")


def test_vectorize_and_guvectorize_with_float64_signatures():
    @numba.vectorize(["float64(float64, float64)"], target="metal")
    def fused(a, b):
        return a * b + 1.0 / a

    a = _values(15, 1000)
    b = _values(16, 1000)
    with np.errstate(all="ignore"):
        want = a * b + 1.0 / a
    _same_bits(np.asarray(fused(a, b)), want)

    @numba.vectorize(target="metal")
    def lazy(a, b):
        return math.sqrt(a) - b

    with np.errstate(all="ignore"):
        _same_bits(np.asarray(lazy(np.abs(a), b)), np.sqrt(np.abs(a)) - b)

    @numba.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()", target="metal")
    def dot(x, y, res):
        acc = 0.0
        for k in range(x.shape[0]):
            acc += x[k] * y[k]
        res[0] = acc

    m = np.random.default_rng(17).standard_normal((50, 33))
    n = np.random.default_rng(18).standard_normal((50, 33))
    want = np.zeros(50)
    for k in range(33):
        want = want + m[:, k] * n[:, k]
    _same_bits(np.asarray(dot(m, n)), want)


def _divmod_pair(a, b):
    q, r = divmod(a, b)
    return q, r


_divmod_dev = metal.jit(device=True)(_divmod_pair)


_divmod_kernel = rows_kernel(_divmod_dev)


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_divmod_is_floor_division_and_modulo_as_njit(dtype):
    if dtype == np.float64:
        x, y = _values(19), np.random.default_rng(20).permutation(_values(21))
    else:
        rng = np.random.default_rng(22)
        x, y = rng.integers(-1000, 1000, N), rng.integers(-9, 9, N)
    out = np.zeros((2, N), dtype)
    _launch(_divmod_kernel, N, x, y, out)
    want = njit_rows(_divmod_pair, 2, dtype, x, y)
    for k in range(2):
        _same_bits(out[k], want[k], any_nan=True, what=f"divmod {k}")


def test_python_literals_next_to_float32_data_stay_float32_in_a_float64_kernel():
    @metal.jit
    def kernel(x64, x32, out32, out64):
        i = metal.grid(1)
        if i < x32.size:
            out32[i] = x32[i] * 0.1 + 2 - x32[i] / 3.0
            out64[i] = x64[i] * 0.1 + 2

    x32 = np.linspace(-3, 3, 200, dtype=np.float32)
    x64 = x32.astype(np.float64)
    out32 = np.zeros(200, np.float32)
    out64 = np.zeros(200)
    _launch(kernel, 200, x64, x32, out32, out64)
    _same_bits(out32, x32 * np.float32(0.1) + np.float32(2) - x32 / np.float32(3.0), what="float32 with literals")
    _same_bits(out64, x64 * 0.1 + 2, what="float64 with literals")


def test_a_device_functions_float64_parameters_are_not_float64_data_of_their_caller():
    @metal.jit(device=True)
    def twice(x):
        return x * 2.0

    def kernel(a, out):
        i = metal.grid(1)
        out[i] = twice(a[i] * 1.0)   # a float64 intermediate passed on: still a float32 kernel

    assert msl.FLOAT64 not in metal.compile_msl(kernel, "void(float32[:], float32[:])")
    assert msl.FLOAT64 in metal.compile_msl(twice, "float64(float64)", device=True)
    assert msl.FLOAT64 in metal.compile_msl(kernel, "void(float64[:], float64[:])")
