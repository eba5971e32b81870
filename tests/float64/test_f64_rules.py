"""The rules float64.metal states where IEEE 754, NumPy or Numba leave a choice (its header and
docs/limitations.md), one example each, through the library on the device."""

from __future__ import annotations

import math

import numpy as np
import pytest

DEFAULT_NAN = 0xFFF8000000000000
INF = math.inf
SNAN = 0x7FF4000000000123            # signalling, positive
QNAN = 0xFFF8000000000456            # quiet, negative


def b(x: float) -> int:
    return int(np.float64(x).view(np.uint64))


def call(lib, name, *args):
    arrays = [np.array([a if isinstance(a, int) else b(a)], dtype=np.uint64) for a in args]
    out = lib.call(name, *arrays)
    return tuple(int(o[0]) for o in out) if isinstance(out, tuple) else int(out[0])


@pytest.mark.parametrize("name, args", [
    ("nm_f64_sub", (INF, INF)), ("nm_f64_add", (INF, -INF)), ("nm_f64_mul", (0.0, INF)),
    ("nm_f64_div", (0.0, 0.0)), ("nm_f64_div", (INF, -INF)), ("nm_f64_sqrt", (-1.0,)),
    ("nm_f64_fma", (0.0, INF, 1.0)), ("nm_f64_fmod", (INF, 1.0)), ("nm_f64_fmod", (1.0, 0.0)),
    ("nm_f64_pymod", (5.0, 0.0)),
])
def test_invalid_operations_give_the_default_nan(f64lib, name, args):
    assert call(f64lib, name, *args) == DEFAULT_NAN


def test_nan_operands_give_the_first_nan_quieted(f64lib):
    assert call(f64lib, "nm_f64_add", SNAN, QNAN) == SNAN | (1 << 51)
    assert call(f64lib, "nm_f64_mul", 2.0, SNAN) == SNAN | (1 << 51)
    assert call(f64lib, "nm_f64_sub", 1.0, QNAN) == QNAN           # not negated
    assert call(f64lib, "nm_f64_fma", 1.0, QNAN, SNAN) == QNAN
    assert call(f64lib, "nm_f64_fma", 0.0, INF, SNAN) == SNAN | (1 << 51)   # a NaN beats invalid
    assert call(f64lib, "nm_f64_sqrt", SNAN) == SNAN | (1 << 51)


@pytest.mark.parametrize("name, x, want", [
    ("nm_f64_to_i8", 300.7, 44), ("nm_f64_to_i8", -300.7, -44), ("nm_f64_to_i8", 1e300, -1),
    ("nm_f64_to_i8", -1e300, 0), ("nm_f64_to_u8", -1.5, 255), ("nm_f64_to_i16", -40000.0, 25536),
    ("nm_f64_to_u16", 1e300, 65535), ("nm_f64_to_i32", 1e300, 2**31 - 1), ("nm_f64_to_i32", -1e300, -2**31),
    ("nm_f64_to_i32", math.nan, 0), ("nm_f64_to_u32", -5.0, 0), ("nm_f64_to_u32", 2.0**32, 2**32 - 1),
    ("nm_f64_to_i64", 2.0**63, 2**63 - 1), ("nm_f64_to_i64", -2.0**63, -2**63), ("nm_f64_to_i64", -INF, -2**63),
    ("nm_f64_to_u64", 1e300, 2**64 - 1), ("nm_f64_to_u64", -0.9, 0), ("nm_f64_to_u64", math.nan, 0),
])
def test_out_of_range_and_nan_conversions_follow_njit_on_apple_silicon(f64lib, name, x, want):
    assert call(f64lib, name, x) == want


@pytest.mark.parametrize("name, x, y, want", [
    ("nm_f64_np_fmin", 0.0, -0.0, -0.0), ("nm_f64_np_fmin", -0.0, 0.0, 0.0), ("nm_f64_np_fmin", 1.0, SNAN, 1.0),
    ("nm_f64_np_fmax", SNAN, 1.0, 1.0), ("nm_f64_np_minimum", 0.0, -0.0, -0.0),
    ("nm_f64_np_minimum", -0.0, 0.0, 0.0), ("nm_f64_np_maximum", 1.0, QNAN, QNAN),
    ("nm_f64_py_min", math.nan, 1.0, math.nan), ("nm_f64_py_min", 1.0, math.nan, 1.0),
    ("nm_f64_py_min", 0.0, -0.0, 0.0), ("nm_f64_py_max", -0.0, 0.0, -0.0),
])
def test_min_and_max_choices(f64lib, name, x, y, want):
    assert call(f64lib, name, x, y) == (want if isinstance(want, int) else b(want))


def test_frexp_and_ldexp_return_nan_unchanged(f64lib):
    assert call(f64lib, "nm_f64_frexp", SNAN)[0] == SNAN
    got = f64lib.call("nm_f64_ldexp", np.array([SNAN], dtype=np.uint64), np.array([3], dtype=np.int32))
    assert int(got[0]) == SNAN


def test_float16_nans_follow_numpy(f64lib):
    to16 = f64lib.call("nm_f64_to_f16", np.array([0x7FF0000000000001, 0xFFF4000000000456], dtype=np.uint64))
    assert [int(v) for v in to16] == [0x7C01, 0xFD00]
    from16 = f64lib.call("nm_f64_from_f16", np.array([0x7C01], dtype=np.uint16))
    assert int(from16[0]) == 0x7FF0040000000000


@pytest.mark.parametrize("x, y, q, r", [
    (-7.0, 2.0, -4.0, 1.0), (7.0, -2.0, -4.0, -1.0), (-0.0, 2.0, -0.0, 0.0), (0.0, -2.0, -0.0, -0.0),
    (-1.0, INF, -1.0, INF), (1.0, INF, 0.0, 1.0), (5.0, 0.0, INF, math.nan), (-5.0, 0.0, -INF, math.nan),
])
def test_python_division_sign_rules(f64lib, x, y, q, r):
    got_q, got_r = call(f64lib, "nm_f64_divmod", x, y)
    assert got_q == b(q)
    assert (got_r == b(r)) if not math.isnan(r) else got_r == DEFAULT_NAN
