"""Host memory API: to_device, device_array(_like), mapped_array and DeviceNDArray."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError


def test_to_device_round_trip_preserves_data_shape_dtype():
    for dtype in (np.float32, np.int8, np.uint64, np.float16, np.bool_):
        a = (np.arange(24) % 5).astype(dtype).reshape(2, 3, 4)
        d = metal.to_device(a)
        assert d.shape == a.shape and d.dtype == a.dtype and d.ndim == 3
        assert d.size == 24 and d.nbytes == a.nbytes and d.strides == a.strides and len(d) == 2
        np.testing.assert_array_equal(d.copy_to_host(), a)


def test_to_device_of_fortran_array_keeps_its_layout_and_non_contiguous_is_made_contiguous():
    f = np.asfortranarray(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    d = metal.to_device(f)
    assert d.is_f_contiguous() and not d.is_c_contiguous() and d.strides == f.strides
    np.testing.assert_array_equal(d.copy_to_host(), f)
    view = np.arange(20, dtype=np.int32)[::3]
    dv = metal.to_device(view)
    assert dv.is_c_contiguous() and dv.strides == (4,)
    np.testing.assert_array_equal(dv.copy_to_host(), view)


def test_device_array_and_like():
    d = metal.device_array((3, 5), np.int16)
    assert d.shape == (3, 5) and d.dtype == np.int16
    np.testing.assert_array_equal(d.copy_to_host(), 0)       # fresh device memory reads as zeros
    f = metal.device_array((3, 5), np.float32, order="F")
    assert f.is_f_contiguous()
    like = metal.device_array_like(np.zeros((7, 2), np.uint8))
    assert like.shape == (7, 2) and like.dtype == np.uint8
    with pytest.raises(NumbaMetalError, match="negative"):
        metal.device_array((-1, 2))


def test_allocators_default_to_float64_as_numba_cuda():
    """numba.cuda's (and NumPy's) default dtype: a ported program computes in the precision it did."""
    assert metal.device_array(4).dtype == np.float64
    assert metal.device_array((2, 3), order="F").dtype == np.float64
    for make in (metal.mapped_array, metal.pinned_array, metal.managed_array):
        a = make(5)
        assert a.dtype == np.float64 and a.shape == (5,), make.__name__

    @metal.jit
    def third(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = 1.0 / 3.0

    d = metal.device_array(3)
    third[1, 4](d)
    assert d.copy_to_host().tolist() == [1.0 / 3.0] * 3       # float64 exactly, not float32's 0.3333333432674408


def test_copy_to_host_into_existing_array_and_copy_to_device():
    a = np.arange(10, dtype=np.float32)
    d = metal.to_device(a)
    out = np.empty_like(a)
    assert d.copy_to_host(out) is out
    np.testing.assert_array_equal(out, a)
    d.copy_to_device(a * 2)
    np.testing.assert_array_equal(d.copy_to_host(), a * 2)
    with pytest.raises(NumbaMetalError, match="shape"):
        d.copy_to_device(np.zeros(3, np.float32))
    with pytest.raises(NumbaMetalError, match="dtype"):
        d.copy_to_device(np.zeros(10, np.float64))


def test_slicing_returns_views_that_share_memory():
    a = np.arange(30, dtype=np.int32).reshape(5, 6)
    d = metal.to_device(a)
    v = d[1:4, ::2]
    assert isinstance(v, metal.DeviceNDArray) and v.shape == (3, 3)
    np.testing.assert_array_equal(v.copy_to_host(), a[1:4, ::2])
    v.copy_to_device(np.full((3, 3), -1, np.int32))          # writes through the view...
    expected = a.copy()
    expected[1:4, ::2] = -1
    np.testing.assert_array_equal(d.copy_to_host(), expected)  # ...into the parent
    assert d[2, 3] == expected[2, 3]                            # an element reads as a scalar
    row = d[4]
    assert row.shape == (6,)
    np.testing.assert_array_equal(row.copy_to_host(), expected[4])


def test_kernels_write_through_views():
    @metal.jit
    def fill(a, v):
        i = metal.grid(1)
        if i < a.size:
            a[i] = v

    d = metal.to_device(np.zeros(10, np.float32))
    fill[1, 16](d[2:8:2], 5.0)
    np.testing.assert_array_equal(d.copy_to_host(), [0, 0, 5, 0, 5, 0, 5, 0, 0, 0])
    fill[1, 16](d[::-1][:3], 1.0)                              # negative strides
    np.testing.assert_array_equal(d.copy_to_host(), [0, 0, 5, 0, 5, 0, 5, 1, 1, 1])


def test_reshape_and_ravel_of_contiguous_arrays():
    a = np.arange(24, dtype=np.float32)
    d = metal.to_device(a)
    r = d.reshape(4, 6)
    assert r.shape == (4, 6)
    np.testing.assert_array_equal(r.copy_to_host(), a.reshape(4, 6))
    np.testing.assert_array_equal(r.reshape((2, 12)).ravel().copy_to_host(), a)
    with pytest.raises(UnsupportedFeatureError, match="copy"):
        r[:, :3].reshape(12)


def test_mapped_array_is_used_by_kernels_without_copies():
    @metal.jit
    def double(a):
        i = metal.grid(1)
        if i < a.size:
            a[i] = a[i] * 2

    m = metal.mapped_array(64, np.int32)
    assert isinstance(m, np.ndarray)
    m[:] = np.arange(64)                       # the host writes unified memory directly
    double[1, 64](m)
    metal.synchronize()
    np.testing.assert_array_equal(m, np.arange(64) * 2)   # and reads the kernel's result in place
    double[1, 64](m[::2])                      # views of mapped arrays are device memory too
    metal.synchronize()
    np.testing.assert_array_equal(m[::2], np.arange(0, 64, 2) * 4)


def test_numpy_arguments_are_copied_in_and_back_like_numba_cuda():
    @metal.jit
    def inc(a):
        i = metal.grid(1)
        if i < a.size:
            a[i] += 1

    a = np.zeros(100, np.float32)
    inc[1, 128](a)
    np.testing.assert_array_equal(a, 1)         # results are in the host array when the call returns
    strided = np.zeros((10, 10), np.float32)[:, 3]
    inc[1, 128](strided)
    np.testing.assert_array_equal(strided, 1)


def test_arrays_of_a_released_buffer_cannot_be_confused():
    d = metal.device_array(4, np.float32)
    h = d.copy_to_host()
    del d
    assert h.shape == (4,)   # host copies are independent of the device buffer's life
