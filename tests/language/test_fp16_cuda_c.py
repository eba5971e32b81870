"""metal.fp16's CUDA-C spellings (functions.FP16_CUDA_C: `__hadd_sat`, `__hfma_relu`, `__hisnan`,
`__hmax_nan`, `__int2half_rd` ...), as numba.cuda's cuda.fp16 exports them, against their CUDA-C
definitions computed with NumPy's float16 (which rounds each operation to half): saturation to [0, 1] with
NaN -> +0, relu, NaN propagation, unordered comparisons, bit patterns, and conversions to half rounded in
each direction (checked exactly: the largest half not above, the smallest not below)."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.compiler.frontend import infer_types
from numba_metal.kernel_api import functions as F
from numba_metal.kernel_api.pymath import numba_type

h = np.float16
fp16 = metal.fp16


@pytest.mark.parametrize("function", F.FP16_CUDA_C, ids=lambda f: f.name)
def test_every_spelling_exists_with_its_signature(function):
    fn = getattr(fp16, function.name)
    sig = function.signatures[0]
    args = tuple(numba_type(a) for a in F.argument_types(sig))
    call = {1: lambda a: fn(a), 2: lambda a, b: fn(a, b), 3: lambda a, b, c: fn(a, b, c)}[len(args)]
    assert infer_types(call, args).return_type == numba_type(F.result_type(sig))


@metal.jit
def half_ops(a, b, c, out, flags, bits):
    i = metal.grid(1)
    if i < a.size:
        x, y, z = a[i], b[i], c[i]
        out[i, 0] = fp16.__hadd_sat(x, y)
        out[i, 1] = fp16.__hsub_sat(x, y)
        out[i, 2] = fp16.__hmul_sat(x, y)
        out[i, 3] = fp16.__hfma_sat(x, y, z)
        out[i, 4] = fp16.__hfma_relu(x, y, z)
        out[i, 5] = fp16.__hmax_nan(x, y)
        out[i, 6] = fp16.__hmin_nan(x, y)
        out[i, 7] = fp16.__hmax(x, y)
        out[i, 8] = fp16.__hmin(x, y)
        out[i, 9] = fp16.__hadd_rn(x, y)
        out[i, 10] = fp16.__hmul(x, y)
        out[i, 11] = fp16.__short_as_half(fp16.__half_as_short(x))
        flags[i, 0] = fp16.__hequ(x, y)
        flags[i, 1] = fp16.__hltu(x, y)
        flags[i, 2] = fp16.__hgeu(x, y)
        flags[i, 3] = fp16.__hisnan(x)
        flags[i, 4] = fp16.__hlt(x, y)
        bits[i, 0] = fp16.__hisinf(x)
        bits[i, 1] = fp16.__half_as_short(x)


def _sat(v):
    v = np.asarray(v, h)
    return np.where(np.isnan(v), h(0), np.clip(v, h(0), h(1))).astype(h)


def test_saturation_relu_nan_rules_and_comparisons():
    a = np.array([0.25, 0.75, -0.5, np.nan, 2.0, np.inf, -np.inf, 0.5, 1.0], h)
    b = np.array([0.5, 0.5, 0.25, 1.0, np.nan, 1.0, 3.0, -0.0, 0.0009765625], h)
    c = np.array([0.125, -1.0, 0.0, 0.5, 1.0, -np.inf, 2.0, -1.0, 0.0], h)
    out = np.zeros((a.size, 12), h)
    flags = np.zeros((a.size, 5), np.bool_)
    bits = np.zeros((a.size, 2), np.int32)
    with np.errstate(invalid="ignore", over="ignore"):
        half_ops[1, a.size](a, b, c, out, flags, bits)
        fused = (a.astype(np.float64) * b + c).astype(h)   # one rounding, as fma (exact in double here)
        np.testing.assert_array_equal(out[:, 0], _sat(a + b))
        np.testing.assert_array_equal(out[:, 1], _sat(a - b))
        np.testing.assert_array_equal(out[:, 2], _sat(a * b))
        np.testing.assert_array_equal(out[:, 3], _sat(fused))
        np.testing.assert_array_equal(out[:, 4], np.where(np.isnan(fused) | (fused >= 0), fused, h(0)))
        np.testing.assert_array_equal(np.isnan(out[:, 5]), np.isnan(a) | np.isnan(b))
        np.testing.assert_array_equal(out[:, 5], np.maximum(a, b))
        np.testing.assert_array_equal(out[:, 6], np.minimum(a, b))
        np.testing.assert_array_equal(out[:, 7], np.fmax(a, b))
        np.testing.assert_array_equal(out[:, 8], np.fmin(a, b))
        np.testing.assert_array_equal(out[:, 9], a + b)
        np.testing.assert_array_equal(out[:, 10], a * b)
        np.testing.assert_array_equal(out[:, 11].view(np.int16), a.view(np.int16))
        unordered = np.isnan(a) | np.isnan(b)
        np.testing.assert_array_equal(flags[:, 0], unordered | (a == b))
        np.testing.assert_array_equal(flags[:, 1], unordered | (a < b))
        np.testing.assert_array_equal(flags[:, 2], unordered | (a >= b))
        np.testing.assert_array_equal(flags[:, 3], np.isnan(a))
        np.testing.assert_array_equal(flags[:, 4], a < b)
    np.testing.assert_array_equal(bits[:, 0], np.where(np.isinf(a), np.sign(a), 0))
    np.testing.assert_array_equal(bits[:, 1], a.view(np.int16))


@metal.jit
def to_half(f, i, ll, out):
    k = metal.grid(1)
    if k < f.size:
        out[k, 0] = fp16.__float2half_rz(f[k])
        out[k, 1] = fp16.__float2half_rd(f[k])
        out[k, 2] = fp16.__float2half_ru(f[k])
        out[k, 3] = fp16.__int2half_rz(i[k])
        out[k, 4] = fp16.__int2half_rd(i[k])
        out[k, 5] = fp16.__int2half_ru(i[k])
        out[k, 6] = fp16.__ll2half_rd(ll[k])
        out[k, 7] = fp16.__ll2half_ru(ll[k])
        out[k, 8] = fp16.__float2half_rn(f[k])
        out[k, 9] = fp16.__int2half_rn(i[k])


def _directed_half(value: float, mode: str):
    """The half `mode` rounds `value` to (value exact as a Python float)."""
    r = h(value)
    if not np.isfinite(r) or float(r) != value:
        # the halves around value: step from the nearest one (or from the largest finite one)
        if not np.isfinite(r):
            r = np.copysign(h(65504), h(value))
        lo = r if float(r) < value else np.nextafter(r, h(-np.inf))
        hi = r if float(r) > value else np.nextafter(r, h(np.inf))
        if mode == "rd":
            return lo
        if mode == "ru":
            return hi
        return lo if value > 0 else hi
    return r


def test_conversions_to_half_round_in_each_direction():
    f = np.array([1.0001, -1.0001, 65519.0, 70000.0, -70000.0, 3.14159, 1e-6, -2.5e-4, 2049.0], np.float32)
    i = np.array([2049, -2049, 65505, 100000, -100000, 3, 0, -7, 4097], np.int32)
    ll = np.array([2 ** 40, -(2 ** 40), 65535, 2051, -2051, 1, 0, -65505, 8195], np.int64)
    out = np.zeros((f.size, 10), h)
    with np.errstate(over="ignore"):
        to_half[1, f.size](f, i, ll, out)
        for k in range(f.size):
            for m, mode in enumerate(("rz", "rd", "ru")):
                assert out[k, m] == _directed_half(float(f[k]), mode), (f[k], mode, out[k, m])
                assert out[k, 3 + m] == _directed_half(float(i[k]), mode), (i[k], mode, out[k, 3 + m])
            assert out[k, 6] == _directed_half(float(ll[k]), "rd")
            assert out[k, 7] == _directed_half(float(ll[k]), "ru")
        np.testing.assert_array_equal(out[:, 8], f.astype(h))
        np.testing.assert_array_equal(out[:, 9], i.astype(h))


def test_the_spellings_share_the_rows_of_numba_cudas_short_names():
    by_name = {f.name: f for f in F.FP16}
    for f in F.FP16_CUDA_C:
        short = f.name[2:]
        # (CUDA-C's __hmax/__hmin ignore NaN, as fmax; numba.cuda 0.30's hmax/hmin are `a if a > b else b`.)
        if short in by_name and short not in ("hmax", "hmin"):
            assert f.routines == by_name[short].routines
    assert infer_types(lambda a, b: fp16.__hadd(a, b), (types.float16, types.float16)).return_type == types.float16


@metal.jit
def from_half(x, i8, i16, i32, i64, u64, u32):
    k = metal.grid(1)
    if k < x.size:
        i8[k] = fp16.__half2char_rz(x[k])
        i16[k, 0] = fp16.__half2short_rn(x[k])
        i16[k, 1] = fp16.__half2short_rd(x[k])
        i32[k, 0] = fp16.__half2int_rn(x[k])
        i32[k, 1] = fp16.__half2int_rz(x[k])
        i32[k, 2] = fp16.__half2int_rd(x[k])
        i32[k, 3] = fp16.__half2int_ru(x[k])
        i64[k] = fp16.__half2ll_ru(x[k])
        u64[k] = fp16.__half2ull_rz(x[k])
        u32[k] = fp16.__half2uint_rd(x[k])


def test_conversions_from_half_saturate_and_map_nan_as_cuda():
    """CUDA's cuda_fp16.h: rounded in the named direction, saturated to the type; NaN gives 0, and
    0x8000000000000000 for the 64-bit types."""
    x = np.array([2.5, -2.5, 3.5, 1000.0, -40000.0, np.inf, -np.inf, np.nan, 0.75, -0.75], h)
    i8 = np.zeros(x.size, np.int8)
    i16 = np.zeros((x.size, 2), np.int16)
    i32 = np.zeros((x.size, 4), np.int32)
    i64 = np.zeros(x.size, np.int64)
    u64 = np.zeros(x.size, np.uint64)
    u32 = np.zeros(x.size, np.uint32)
    from_half[1, x.size](x, i8, i16, i32, i64, u64, u32)
    f = x.astype(np.float64)

    def sat(v, dtype, nan=0):
        info = np.iinfo(dtype)
        return np.array([nan if np.isnan(e) else min(max(e, info.min), info.max) for e in v], dtype=object)

    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(i8, sat(np.trunc(f), np.int8).astype(np.int8))
        np.testing.assert_array_equal(i16[:, 0], sat(np.rint(f), np.int16).astype(np.int16))
        np.testing.assert_array_equal(i16[:, 1], sat(np.floor(f), np.int16).astype(np.int16))
        for k, fn in enumerate((np.rint, np.trunc, np.floor, np.ceil)):
            np.testing.assert_array_equal(i32[:, k], sat(fn(f), np.int32).astype(np.int32))
        np.testing.assert_array_equal(i64, sat(np.ceil(f), np.int64, -2 ** 63).astype(np.int64))
        np.testing.assert_array_equal(u64, sat(np.trunc(f), np.uint64, 2 ** 63).astype(np.uint64))
        np.testing.assert_array_equal(u32, sat(np.floor(f), np.uint32).astype(np.uint32))
