"""numba.cuda's ``devicearray`` names over numba-metal's arrays (issue 27 item 5): ``is_contiguous``,
``auto_device``, ``DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None)``, ``flags`` read as a dict
and as NumPy's flags, and ``_numba_type_``."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import MetalTypeError, MetalValueError, UnsupportedFeatureError
from numba_metal.host import devicearray


def test_is_contiguous_ignores_broadcast_and_size_one_axes_like_numba_cuda():
    a = np.zeros((4, 6))
    assert devicearray.is_contiguous(a) and devicearray.is_contiguous(metal.to_device(a))
    assert not devicearray.is_contiguous(a[:, ::2]) and not devicearray.is_contiguous(metal.to_device(a)[:, 1:3])
    assert devicearray.is_contiguous(np.broadcast_to(np.arange(6.0), (4, 6)))   # the zero stride is ignored
    assert devicearray.is_contiguous(metal.to_device(a)[1:2, :])                   # size-1 axis
    assert not devicearray.is_contiguous(np.asfortranarray(a))                     # C-contiguity only


def test_auto_device_returns_device_arrays_unchanged_and_copies_the_rest():
    d = metal.to_device(np.arange(3.0))
    assert devicearray.auto_device(d) == (d, False)
    got, converted = devicearray.auto_device(2)
    assert converted and got.shape == () and got.copy_to_host() == 2
    got, converted = devicearray.auto_device([1.5, 2.5])
    assert converted and got.copy_to_host().tolist() == [1.5, 2.5]
    empty, _ = devicearray.auto_device(np.arange(4, dtype=np.int32), copy=False)
    assert empty.shape == (4,) and empty.dtype == np.int32
    with pytest.raises(ValueError, match="non-contiguous buffer") as e:
        devicearray.auto_device(np.arange(10.0)[:-1:2])
    assert isinstance(e.value, MetalValueError) and str(e.value) == devicearray.errmsg_contiguous_buffer


def test_numba_cuda_constructor_allocates_or_views_gpu_data():
    arr = metal.DeviceNDArray((1, 10), (800, 8), np.float64)   # numba.cuda's issue 6824 reproducer
    assert arr.shape == (1, 10) and arr.strides == (800, 8) and arr.flags["C_CONTIGUOUS"] and arr.flags["F_CONTIGUOUS"]
    empty = metal.DeviceNDArray(shape=(0,), strides=(8,), dtype=np.int8)
    assert empty.size == 0 and metal.DeviceNDArray(5, 4, np.float32).shape == (5,)
    base = metal.to_device(np.arange(6, dtype=np.int32))
    view = metal.DeviceNDArray((2, 3), (12, 4), np.int32, gpu_data=base)
    assert view.copy_to_host().tolist() == [[0, 1, 2], [3, 4, 5]]
    view[1, 2] = 50
    assert base.copy_to_host()[5] == 50                        # the same memory
    with pytest.raises(MetalValueError, match="does not fit gpu_data"):
        metal.DeviceNDArray((7,), (4,), np.int32, gpu_data=base)
    with pytest.raises(MetalTypeError, match="gpu_data"):
        metal.DeviceNDArray((2,), (4,), np.int32, gpu_data=12345)


def test_flags_are_a_dict_and_read_as_numpy_flags():
    d = metal.to_device(np.zeros((3, 4), order="F"))
    assert d.flags == {"C_CONTIGUOUS": False, "F_CONTIGUOUS": True}
    assert d.flags.f_contiguous and not d.flags.c_contiguous and not d.flags.contiguous
    with pytest.raises(AttributeError, match="writeable"):
        d.flags.writeable
    like = metal.mapped_array_like(d)                            # read d.flags.f_contiguous before the fix
    assert like.flags.f_contiguous and like.shape == (3, 4)


@pytest.mark.parametrize("make, layout", [
    (lambda: metal.to_device(np.zeros(10, order="F")), "C"),
    (lambda: metal.to_device(np.zeros((2, 10), order="F")), "F"),
    (lambda: metal.to_device(np.zeros((5, 5)))[:, 2], "A"),
    (lambda: metal.to_device(np.zeros((5, 5), order="F"))[:, 2], "C"),
])
def test_numba_type_is_the_array_type_kernels_see(make, layout):
    from numba import types
    ty = make()._numba_type_
    assert isinstance(ty, types.Array) and ty.layout == layout and ty.dtype == types.float64


def test_devicearray_is_reachable_as_numba_cuda_names_it():
    assert metal.devicearray.DeviceNDArray is metal.DeviceNDArray
    assert metal.devicearray.is_cuda_ndarray(metal.device_array(2)) and not metal.devicearray.is_cuda_ndarray([1])


def test_verify_cuda_ndarray_interface_accepts_device_arrays_only():
    for dev in (metal.device_array(100), metal.to_device(np.asarray(1.234))):
        metal.devicearray.verify_cuda_ndarray_interface(dev)
    with pytest.raises(ValueError, match="a device array is required, not ndarray") as e:
        metal.devicearray.verify_cuda_ndarray_interface(np.zeros(3))
    assert isinstance(e.value, MetalValueError)


def test_a_shape_may_be_a_numpy_array_as_in_numba_cuda():
    assert metal.device_array(shape=np.array([10, 10]), dtype=np.bool_).shape == (10, 10)


@pytest.mark.parametrize("like", [metal.device_array_like, metal.mapped_array_like, metal.pinned_array_like])
def test_array_like_of_a_strided_view_is_laid_out_as_numpy_zeros_like(like):
    for order in "CF":
        view = np.zeros((10, 12), order=order)[::2, ::2]
        got = like(metal.device_array((10, 12), order=order)[::2, ::2])
        assert got.shape == view.shape and got.strides == np.zeros_like(view).strides   # F view: (8, 40)
        assert got.flags["F_CONTIGUOUS"] == (order == "F")
    assert like(metal.device_array((4, 6))[::2, ::2].T).strides == np.zeros_like(np.zeros((4, 6))[::2, ::2].T).strides


def test_from_array_like_keeps_shape_strides_and_dtype_and_refuses_gpu_data():
    # numba.cuda's devicearray.from_array_like (numba-cuda's test_transpose makes its output with it)
    for host in (np.zeros((4, 6)), np.asfortranarray(np.zeros((3, 5), np.int32)), np.zeros(7, np.complex64)):
        d = devicearray.from_array_like(host)
        assert (d.shape, d.strides, d.dtype) == (host.shape, host.strides, host.dtype)
        np.testing.assert_array_equal(d.copy_to_host(), host)
    with pytest.raises(UnsupportedFeatureError, match="gpu_data"):
        devicearray.from_array_like(np.zeros(3), gpu_data=object())
