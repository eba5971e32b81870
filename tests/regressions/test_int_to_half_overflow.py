"""Regression: an integer beyond float16's range converted to float16 must be infinity, as NumPy gives.
``np.float16(a[i] << 21)`` of a uint8 array gave 4194304.0 (stored into a float32 array): converting an
out-of-range integer to half is undefined in C, and clang folded ``float(half(x))`` to ``float(x)`` because
x has few significant bits. Found by the long differential run (seed 2000548); the compiler now limits such
integers to +-65520 first (compiler/conversions.py, HALF_OVERFLOW)."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler.conversions import HALF_OVERFLOW


@metal.jit
def shifted_to_half(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = abs(np.float16(a[i] << 21))


def test_a_shifted_byte_beyond_half_range_is_infinity():
    a = np.array([2, 227, 0, 1, 255], np.uint8)
    out = np.zeros(a.size, np.float32)
    shifted_to_half[1, a.size](a, out)
    want = np.abs((a.astype(np.int64) << 21).astype(np.float16)).astype(np.float32)
    np.testing.assert_array_equal(out, want)
    assert np.isinf(out[[0, 1, 3, 4]]).all() and out[2] == 0


@metal.jit
def to_half(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = np.float16(a[i])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_every_integer_width_converts_to_half_as_numpy(dtype):
    info = np.iinfo(dtype)
    edges = [0, 1, -1, 2047, 2049, 65503, 65504, 65505, 65519, HALF_OVERFLOW, HALF_OVERFLOW + 1, 65535,
             65536, 1 << 21, (1 << 24) + 1, 1 << 40]
    edges += [-v for v in edges] + [int(info.min), int(info.max)]
    a = np.array(sorted({v for v in edges if info.min <= v <= info.max}), dtype)
    out = np.zeros(a.size, np.float16)
    to_half[1, a.size](a, out)
    np.testing.assert_array_equal(out, a.astype(np.float16))
