"""Types and Numba semantics inside kernels: every dtype, promotion, Python //, %, **, wraparound,
round half to even, int() truncation, negative indices, NaN/inf, float64 → float32."""

import math

import numpy as np
import pytest
from numba import njit

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32]


@metal.jit
def copy_plus_one(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = a[i] + 1


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_loads_computes_and_stores(dtype):
    if dtype is np.bool_:
        a = np.array([True, False, True, True])
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        a = np.array([info.min, info.min + 1, 0, 7, info.max - 1, info.max], dtype=dtype)
    else:
        a = np.array([-2.5, 0.0, 1.25, 65000 if dtype is np.float16 else 3e38], dtype=dtype)
    out = np.zeros_like(a)
    copy_plus_one[1, 32](a, out)
    with np.errstate(over="ignore"):
        expected = njit(lambda x: x + 1)(a) if dtype is not np.float16 else (a.astype(np.float32) + 1).astype(np.float16)
    np.testing.assert_array_equal(out, expected.astype(dtype))


@metal.jit
def int_ops(a, b, out):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out[i, 0] = x // y
        out[i, 1] = x % y
        out[i, 2] = x * y
        out[i, 3] = x - y
        out[i, 4] = x ** 3
        out[i, 5] = (x & y) | (x ^ 7)
        out[i, 6] = ~x
        out[i, 7] = -x


def test_integer_floor_division_modulo_and_wraparound_match_numba():
    a = np.array([7, -7, 7, -7, 0, 5, -2**63, 2**62, 3, -9], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 0, -1, 4, -1, 4], dtype=np.int64)
    out = np.zeros((a.size, 8), dtype=np.int64)
    int_ops[1, 32](a, b, out)

    @njit(error_model="numpy")
    def ref(a, b, out):
        for i in range(a.size):
            x = a[i]
            y = b[i]
            out[i, 0] = x // y
            out[i, 1] = x % y
            out[i, 2] = x * y
            out[i, 3] = x - y
            out[i, 4] = x ** 3
            out[i, 5] = (x & y) | (x ^ 7)
            out[i, 6] = ~x
            out[i, 7] = -x

    exp = np.zeros_like(out)
    ref(a, b, exp)
    np.testing.assert_array_equal(out, exp)
    # the documented corner cases, spelled out
    assert out[5, 0] == 0 and out[5, 1] == 0          # x // 0 == x % 0 == 0
    assert out[6, 0] == 0 and out[6, 1] == 0          # MIN // -1 == 0 (Numba's answer)
    assert out[7, 2] == 0                              # 2**62 * 4 wraps to 0
    assert out[0, 4] == 343


@metal.jit
def float_ops(a, b, out):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out[i, 0] = x // y
        out[i, 1] = x % y
        out[i, 2] = x / y
        out[i, 3] = x ** 2
        out[i, 4] = x ** y
        out[i, 5] = x ** -1


def test_float_floor_division_modulo_power_nan_and_inf():
    a = np.array([7.5, -7.5, 7.5, -7.5, 1.0, 0.0, np.inf, np.nan, 2.0, -8.0], dtype=np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 0.0, 1.0, 1.0, 0.5, 1.0 / 3], dtype=np.float32)
    out = np.zeros((a.size, 6), dtype=np.float32)
    float_ops[1, 32](a, b, out)
    with np.errstate(all="ignore"):
        exp = np.stack([np.floor_divide(a, b), np.mod(a, b), a / b, a * a, np.power(a, b),
                        np.float32(1) / a], axis=1)
    np.testing.assert_allclose(out, exp, rtol=2e-6, equal_nan=True)
    assert out[4, 0] == np.inf and math.isnan(out[4, 1])  # x // 0.0 == x / 0.0, x % 0.0 is NaN


@metal.jit
def rounding(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i, 0] = round(a[i])
        out[i, 1] = int(a[i])
        out[i, 2] = math.floor(a[i])
        out[i, 3] = math.ceil(a[i])
        out[i, 4] = math.trunc(a[i])


def test_round_half_to_even_and_int_truncation():
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, -3.7, 3.7], dtype=np.float32)
    out = np.zeros((a.size, 5), dtype=np.int64)
    rounding[1, 32](a, out)
    exp = [[round(float(x)), int(x), math.floor(x), math.ceil(x), math.trunc(float(x))] for x in a]
    np.testing.assert_array_equal(out, exp)


@metal.jit
def negative_indices(a, out):
    i = metal.grid(1)
    if i < a.shape[0]:
        out[i] = a[-1 - i, -1] + a[-a.shape[0], i - a.shape[1]]


def test_negative_indices_wrap_around():
    a = np.arange(12, dtype=np.int32).reshape(4, 3)
    out = np.zeros(3, dtype=np.int32)
    negative_indices[1, 3](a, out)
    np.testing.assert_array_equal(out, [a[-1 - i, -1] + a[-4, i - 3] for i in range(3)])


@metal.jit
def promotion(a8, u16, f16, out_i, out_f):
    i = metal.grid(1)
    if i < a8.size:
        out_i[i] = a8[i] * u16[i] * 1000          # int8 * uint16 promotes to int64: no overflow
        out_f[i] = f16[i] * a8[i] + 0.25          # float16 mixed with ints and a Python float


def test_numba_promotion_rules():
    a8 = np.array([100, -100, 127], dtype=np.int8)
    u16 = np.array([60000, 60000, 2], dtype=np.uint16)
    f16 = np.array([0.5, 1.5, -2.0], dtype=np.float16)
    oi = np.zeros(3, np.int64)
    of = np.zeros(3, np.float32)
    promotion[1, 4](a8, u16, f16, oi, of)
    np.testing.assert_array_equal(oi, a8.astype(np.int64) * u16.astype(np.int64) * 1000)
    np.testing.assert_allclose(of, f16.astype(np.float32) * a8 + np.float32(0.25))


@metal.jit
def float64_intermediates(a, out):
    i = metal.grid(1)
    if i < a.size:
        x = a[i] * 0.1 + 1 / 3     # float64 in Numba's typing: computed in float32 on Metal
        out[i] = x


def test_float64_intermediates_compute_in_float32():
    a = np.array([1.0, 3.0, 1e7], dtype=np.float32)
    out = np.zeros(3, np.float32)
    float64_intermediates[1, 4](a, out)
    f = np.float32
    np.testing.assert_array_equal(out, a * f(0.1) + f(1) / f(3))


@metal.jit
def nan_propagation(a, out):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        out[i, 0] = x + 1
        out[i, 1] = math.sqrt(x)
        out[i, 2] = max(x, 0.0)
        out[i, 3] = min(0.0, x)
        out[i, 4] = 1.0 if x == x else 0.0


def test_nan_and_infinities_propagate():
    a = np.array([np.nan, np.inf, -np.inf, -1.0], dtype=np.float32)
    out = np.zeros((4, 5), np.float32)
    nan_propagation[1, 4](a, out)
    with np.errstate(invalid="ignore"):
        exp = [[x + 1, np.sqrt(x), max(x, 0.0), min(0.0, x), 1.0 if x == x else 0.0] for x in a]
    np.testing.assert_array_equal(out, np.array(exp, np.float32))


def test_float64_arrays_are_used_in_place_and_computed_exactly():
    a = np.array([0.1, 1e300, 2.0 ** -1074, -3.5])
    out = np.zeros(4)
    copy_plus_one[1, 4](a, out)
    metal.synchronize()
    np.testing.assert_array_equal(out.view(np.uint64), (a + 1).view(np.uint64))


def test_float64_scalar_arguments_keep_every_bit():
    @metal.jit
    def k(x, out):
        out[0] = x

    out = np.zeros(1, np.float32)
    k[1, 1](np.float64(0.1), out)
    metal.synchronize()
    assert out[0] == np.float32(0.1)
    out64 = np.zeros(1)
    k[1, 1](np.float64(0.1), out64)
    metal.synchronize()
    assert out64[0] == 0.1


def test_python_float_argument_is_float32():
    @metal.jit
    def k(x, out):
        out[0] = x * 3

    out = np.zeros(1, np.float32)
    k[1, 1](0.1, out)
    assert out[0] == np.float32(0.1) * np.float32(3)
