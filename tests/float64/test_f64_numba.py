"""float64.metal against Numba's own njit on the CPU, for the operations whose meaning is Numba's
rather than NumPy's: Python's %, // and divmod (NumPy error model), min/max, math.floor/ceil/trunc and
round() returning integers, float <-> integer conversions (in range: out of range Numba's result is
platform-dependent, see f64_reference.to_int_aarch64), np.fmod (Numba has no math.fmod),
math.copysign/frexp/ldexp, np.nextafter."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

import f64_reference as R
import f64_suite as S
import f64_vectors as V

N = 1 << 14


@njit(error_model="numpy", cache=False)
def _binary(a, b, out):
    for i in range(a.size):
        x = a[i]
        y = b[i]
        out[0, i] = x % y
        out[1, i] = x // y
        q, r = divmod(x, y)
        out[2, i] = q
        out[3, i] = r
        out[4, i] = min(x, y)
        out[5, i] = max(x, y)
        out[6, i] = np.fmod(x, y)
        out[7, i] = math.copysign(x, y)
        out[8, i] = np.nextafter(x, y)


@njit(cache=False)
def _unary(a, k, ints, floats, exps):
    for i in range(a.size):
        x = a[i]
        ints[0, i] = math.floor(x)
        ints[1, i] = math.ceil(x)
        ints[2, i] = math.trunc(x)
        ints[3, i] = round(x)
        m, e = math.frexp(x)
        floats[0, i] = m
        exps[i] = e
        floats[1, i] = math.ldexp(x, k[i])


@njit(cache=False)
def _to_ints(a, i8, u8, i16, u16, i32, u32, i64, u64):
    for i in range(a.size):
        x = a[i]
        i8[i] = np.int8(x)
        u8[i] = np.uint8(x)
        i16[i] = np.int16(x)
        u16[i] = np.uint16(x)
        i32[i] = np.int32(x)
        u32[i] = np.uint32(x)
        i64[i] = np.int64(x)
        u64[i] = np.uint64(x)


@njit(cache=False)
def _from_ints(i64, u64, out):
    for i in range(i64.size):
        out[0, i] = float(i64[i])
        out[1, i] = float(u64[i])


def _inputs(name):
    rng = np.random.default_rng(11)
    ins = S.CASES[name].make(rng, N)
    edge = S.edge_inputs(name)
    return [np.concatenate([x, e]) for x, e in zip(ins, edge)]


def _same(name, got, want, inputs, payloads=False):
    """Bits equal, NaN matching NaN (payloads too when `payloads`)."""
    got = np.asarray(got, dtype=np.uint64)
    want = R.b(want)
    both_nan = R.isnan(got) & R.isnan(want)
    ok = (got == want) | (both_nan & (not payloads))
    bad = np.flatnonzero(~ok)
    assert not len(bad), [(name, [hex(int(x[i])) for x in inputs], hex(int(got[i])), hex(int(want[i])))
                          for i in bad[:5]]


def test_python_division_min_max_and_math_functions_match_njit(f64lib):
    a, b = _inputs("nm_f64_pymod")
    out = np.empty((9, len(a)))
    with np.errstate(all="ignore"):
        _binary(R.f(a), R.f(b), out)
    q, r = f64lib.call("nm_f64_divmod", a, b)
    for k, (name, got) in enumerate([("pymod", f64lib.call("nm_f64_pymod", a, b)),
                                     ("floordiv", f64lib.call("nm_f64_floordiv", a, b)),
                                     ("divmod.q", q), ("divmod.r", r),
                                     ("py_min", f64lib.call("nm_f64_py_min", a, b)),
                                     ("py_max", f64lib.call("nm_f64_py_max", a, b)),
                                     ("fmod", f64lib.call("nm_f64_fmod", a, b)),
                                     ("copysign", f64lib.call("nm_f64_copysign", a, b)),
                                     ("nextafter", f64lib.call("nm_f64_nextafter", a, b))]):
        # min, max and copysign select or move bits: the payload must be Numba's too.
        _same(name, got, out[k], [a, b], payloads=name in ("py_min", "py_max", "copysign"))


def test_integer_valued_math_and_frexp_ldexp_match_njit(f64lib):
    x = np.concatenate([_inputs("nm_f64_floor")[0], V.values(np.random.default_rng(12), N)])
    k = np.random.default_rng(13).integers(-1100, 1100, len(x)).astype(np.int64)
    fx = R.f(x)
    ok = np.isfinite(fx) & (np.abs(fx) < 2.0 ** 62)
    x, k, fx = x[ok], k[ok], fx[ok]
    ints = np.empty((4, len(x)), dtype=np.int64)
    floats = np.empty((2, len(x)))
    exps = np.empty(len(x), dtype=np.int64)
    _unary(fx, k, ints, floats, exps)
    for row, op in enumerate(["nm_f64_floor", "nm_f64_ceil", "nm_f64_trunc", "nm_f64_rint"]):
        got = f64lib.call("nm_f64_to_i64", f64lib.call(op, x))
        np.testing.assert_array_equal(got, ints[row], err_msg=op)
    m, e = f64lib.call("nm_f64_frexp", x)
    _same("frexp", m, floats[0], [x], payloads=True)
    np.testing.assert_array_equal(e, exps)
    _same("ldexp", f64lib.call("nm_f64_ldexp", x, k.astype(np.int32)), floats[1], [x], payloads=True)


def test_nan_and_infinity_through_frexp_and_ldexp_keep_numba_payloads(f64lib):
    x = np.array([0x7FF4000000000123, 0xFFF8000000000001, 0x7FF0000000000000, 0x8000000000000000], dtype=np.uint64)
    floats = np.empty((2, len(x)))
    exps = np.empty(len(x), dtype=np.int64)
    ints = np.empty((4, len(x)), dtype=np.int64)
    with np.errstate(all="ignore"):
        _unary(R.f(x), np.full(len(x), 5, dtype=np.int64), ints, floats, exps)
    m, e = f64lib.call("nm_f64_frexp", x)
    _same("frexp", m, floats[0], [x], payloads=True)
    np.testing.assert_array_equal(e, exps)
    _same("ldexp", f64lib.call("nm_f64_ldexp", x, np.full(len(x), 5, dtype=np.int32)), floats[1], [x], payloads=True)


def test_float_to_integer_in_range_matches_njit(f64lib):
    x = np.concatenate([_inputs("nm_f64_to_i32")[0], V.near_integers(np.random.default_rng(14), N)])
    fx = R.f(x)
    outs = {dt: np.empty(len(x), dtype=dt) for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32",
                                                     "int64", "uint64")}
    with np.errstate(all="ignore"):
        _to_ints(fx, *outs.values())
    t = np.trunc(np.where(np.isfinite(fx), fx, 0.0))
    for dt, want in outs.items():
        info = np.iinfo(dt)
        inside = np.isfinite(fx) & (t >= float(info.min)) & (t < 2.0 ** (info.bits - (info.min < 0)))
        got = f64lib.call(f"nm_f64_to_{'u' if dt[0] == 'u' else 'i'}{dt.split('int')[1]}", x)
        np.testing.assert_array_equal(got[inside], want[inside], err_msg=dt)
        assert inside.sum() > 1000, dt


def test_integer_to_float_matches_njit(f64lib):
    rng = np.random.default_rng(15)
    i64 = V.int_values(rng, N, np.int64)
    u64 = V.int_values(rng, N, np.uint64)
    out = np.empty((2, N))
    _from_ints(i64, u64, out)
    _same("from_i64", f64lib.call("nm_f64_from_i64", i64), out[0], [i64])
    _same("from_u64", f64lib.call("nm_f64_from_u64", u64), out[1], [u64])
