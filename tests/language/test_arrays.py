"""Arrays in kernels: any dimension and layout, tuple indexing, attributes, views, 64-bit indices."""

import numpy as np
import pytest

from numba_metal import metal


@metal.jit
def scale_3d(a, out):
    x, y, z = metal.grid(3)
    if x < a.shape[0] and y < a.shape[1] and z < a.shape[2]:
        out[x, y, z] = a[x, y, z] * 2 + a[(x, y, z)]


@pytest.mark.parametrize("layout", ["C", "F", "strided", "reversed"])
def test_3d_arrays_of_every_layout(layout):
    base = np.arange(2 * 5 * 7 * 4, dtype=np.float32).reshape(4, 5, 7, 2)
    if layout == "C":
        a = np.ascontiguousarray(base[..., 0])
    elif layout == "F":
        a = np.asfortranarray(base[..., 0])
    elif layout == "strided":
        a = base[::2, :, 1:, 1]
    else:
        a = base[::-1, ::-2, :, 0]
    d_a = metal.to_device(a) if layout in ("C", "F") else a
    out = np.zeros(a.shape, np.float32)
    scale_3d[(1, 2, 2), (4, 4, 4)](d_a, out)
    np.testing.assert_array_equal(out, a * 3)


@metal.jit
def attributes(a, out):
    out[0] = a.shape[0]
    out[1] = a.shape[1]
    out[2] = a.strides[0]
    out[3] = a.strides[1]
    out[4] = a.size
    out[5] = a.ndim
    out[6] = len(a)
    s0, s1 = a.shape
    out[7] = s0 * 100 + s1


def test_shape_strides_size_ndim_len_on_device_and_strided_views():
    host = np.zeros((6, 8), np.int16)
    for a in (host, host[1::2, ::3]):
        out = np.zeros(8, np.int64)
        attributes[1, 1](a, out)
        # A NumPy argument that cannot be used in place is passed as a contiguous copy (as to_device
        # does), so the kernel sees the copy's strides.
        c = np.ascontiguousarray(a)
        np.testing.assert_array_equal(out, [a.shape[0], a.shape[1], c.strides[0], c.strides[1], a.size,
                                            2, len(a), a.shape[0] * 100 + a.shape[1]])
    view = metal.to_device(np.zeros((6, 8), np.int16))[1::2, ::3]
    out = np.zeros(8, np.int64)
    attributes[1, 1](view, out)
    np.testing.assert_array_equal(out, [3, 3, 32, 6, 9, 2, 3, 303])  # a device view keeps its strides
    d = metal.device_array((6, 8), np.int16)
    out = np.zeros(8, np.int64)
    attributes[1, 1](d, out)
    np.testing.assert_array_equal(out, [6, 8, 16, 2, 48, 2, 6, 608])


@metal.jit
def row_sums(a, out):
    i = metal.grid(1)
    if i < a.shape[0]:
        row = a[i]                 # a view of row i
        s = 0.0
        for j in range(row.shape[0]):
            s += row[j]
        out[i] = s


def test_partial_indexing_gives_views():
    a = np.random.default_rng(1).random((9, 13)).astype(np.float32)
    out = np.zeros(9, np.float32)
    row_sums[1, 16](a, out)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    out2 = np.zeros(13, np.float32)
    row_sums[1, 16](np.asfortranarray(a).T, out2)
    np.testing.assert_allclose(out2, a.T.sum(axis=1), rtol=1e-5)


@metal.jit
def four_d(a, out):
    i = metal.grid(1)
    if i < a.shape[0]:
        s = 0
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                for m in range(a.shape[3]):
                    s += a[i, j, k, m]
        out[i] = s


def test_four_dimensional_arrays():
    a = np.arange(3 * 4 * 5 * 6, dtype=np.int32).reshape(3, 4, 5, 6)
    out = np.zeros(3, np.int64)
    four_d[1, 4](a, out)
    np.testing.assert_array_equal(out, a.sum(axis=(1, 2, 3)))


@metal.jit
def poke_far(a, base, value):
    i = metal.grid(1)
    a[base + i] = value + i


def test_index_arithmetic_is_64_bit():
    # A 2**31 + 64 byte array: indices past 2**31 must not wrap to negative 32-bit values.
    n = 2**31 + 64
    d = metal.device_array(n, np.uint8)
    poke_far[1, 32](d, 2**31 + 8, 7)
    tail = d[2**31:].copy_to_host()
    assert tail[8] == 7 and tail[39] == 38 and tail[7] == 0 and tail[40] == 0
    assert d[0] == 0


@metal.jit
def bool_and_half_arrays(flags, h, out):
    i = metal.grid(1)
    if i < flags.size:
        out[i] = h[i] * 2 if flags[i] else -h[i]


def test_bool_and_float16_arrays():
    flags = np.array([True, False, True, False])
    h = np.array([0.5, 1.5, -2.0, 65504], np.float16)
    out = np.zeros(4, np.float16)
    bool_and_half_arrays[1, 4](flags, h, out)
    with np.errstate(over="ignore"):
        expected = np.where(flags, h * np.float16(2), -h)
    np.testing.assert_array_equal(out, expected)
