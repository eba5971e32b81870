"""numba.cuda's DeviceNDArray API: item and slice assignment, views, copies with streams, split, bind, view,
reshape/ravel/squeeze with numba.cuda's contiguity rules, flags, transpose and the attributes.

Each test states the numba.cuda behaviour it checks (numba-cuda's cudadrv/devicearray.py and its tests
test_cuda_ndarray.py, test_cuda_array_slicing.py and test_array_attr.py)."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import (CopyRequiredError, MetalTypeError, MetalValueError, NumbaMetalError,
                                UnsupportedFeatureError)
from shared_kernels import add_one


def _dev(shape, dtype=np.int32, order="C"):
    host = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape, order=order)
    return host, metal.to_device(host)


# -- assignment -------------------------------------------------------------------------------------


def test_setitem_of_elements_slices_and_steps_from_scalars():
    host, d = _dev((10,))
    d[3] = 42
    d[1:3] = -1
    d[::4] = 7
    d[-1] = 9
    host[3] = 42
    host[1:3] = -1
    host[::4] = 7
    host[-1] = 9
    np.testing.assert_array_equal(d.copy_to_host(), host)


def test_setitem_broadcasts_host_arrays_along_leading_and_size_one_axes():
    host, d = _dev((3, 4, 5))
    row = np.arange(5, dtype=np.int32) * 10
    d[:] = row                                   # (5,) broadcast over (3, 4)
    host[:] = row
    col = np.arange(4, dtype=np.int32).reshape(4, 1) + 100
    d[1] = col                                   # (4, 1) broadcast along the last axis
    host[1] = col
    d[2, :, 1:3] = [[1, 2]] * 4                  # a nested list
    host[2, :, 1:3] = [[1, 2]] * 4
    np.testing.assert_array_equal(d.copy_to_host(), host)


def test_setitem_from_device_arrays_including_overlapping_views_of_itself():
    host, d = _dev((12,))
    d[:4] = metal.to_device(np.array([5, 6, 7, 8], dtype=np.int32))
    host[:4] = [5, 6, 7, 8]
    d[1:] = d[:-1]                               # overlapping source and target: NumPy's semantics
    host[1:] = host[:-1].copy()
    np.testing.assert_array_equal(d.copy_to_host(), host)


def test_setitem_converts_to_the_array_dtype():
    d = metal.to_device(np.zeros(3, dtype=np.int16))
    d[:] = np.array([1.7, -2.2, 3.9])            # float values into int16, truncated as a kernel's cast would
    np.testing.assert_array_equal(d.copy_to_host(), np.array([1, -2, 3], dtype=np.int16))
    f = metal.to_device(np.zeros(2, dtype=np.float32))
    f[0] = True
    f[1] = 2**24 + 1
    np.testing.assert_array_equal(f.copy_to_host(), np.array([1, 2**24], dtype=np.float32))


def test_setitem_errors_are_numba_cudas():
    _, d = _dev((3, 4))
    with pytest.raises(ValueError, match="Can't assign 3-D array to 2-D self"):
        d[:] = np.zeros((1, 3, 4), np.int32)
    with pytest.raises(ValueError, match="Can't copy sequence with size 2 to array axis 0 with dimension 3"):
        d[:] = np.zeros((2, 4), np.int32)
    with pytest.raises(MetalValueError):
        d[0] = np.zeros(5, np.int32)


def test_setitem_waits_for_the_kernels_that_use_the_array_and_orders_with_later_ones():
    _, d = _dev((4096,))
    for _ in range(3):
        add_one[16, 256](d)
    d[:] = 0                                     # after the three launches, before the next one
    add_one[16, 256](d)
    np.testing.assert_array_equal(d.copy_to_host(), np.ones(4096, np.int32))
    s = metal.stream()
    add_one[16, 256, s](d)
    d.setitem(slice(0, 10), 100, stream=s)
    np.testing.assert_array_equal(d.copy_to_host()[:12], [100] * 10 + [2, 2])


# -- views ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [
    np.s_[1:7], np.s_[::2], np.s_[::-1], np.s_[5:1:-2], np.s_[2], np.s_[:, 1], np.s_[1, ::-3],
    np.s_[..., 2:], np.s_[None, 1:], np.s_[-2:, -1],
])
def test_getitem_gives_views_sharing_memory_that_kernels_write_through(index):
    host, d = _dev((6, 7))
    view = d[index]
    assert isinstance(view, metal.DeviceNDArray)
    np.testing.assert_array_equal(view.copy_to_host(), host[index])
    flat = view.ravel() if view.is_c_contiguous() else None
    target = view if view.ndim == 1 else flat
    if target is not None:
        add_one[1, 64](target)
        host[index] += 1
    np.testing.assert_array_equal(d.copy_to_host(), host)


def test_getitem_of_one_element_is_a_host_scalar():
    host, d = _dev((3, 4), dtype=np.float32)
    value = d[2, 3]
    assert isinstance(value, np.float32) and value == host[2, 3]
    assert d.getitem((1, -1), stream=metal.stream()) == host[1, -1]
    with pytest.raises(UnsupportedFeatureError, match="fancy"):
        d[[0, 2]]


def test_copy_to_host_and_copy_to_device_take_a_stream_and_check_compatibility_like_numba_cuda():
    host, d = _dev((4, 5), dtype=np.float32)
    s = metal.stream()
    out = np.empty((4, 5), np.float32)
    assert d.copy_to_host(out, stream=s) is out
    np.testing.assert_array_equal(out, host)
    d.copy_to_device(host * 2, stream=s)
    np.testing.assert_array_equal(d.copy_to_host(stream=s), host * 2)
    d.copy_to_device(metal.to_device(host * 3))          # device to device
    np.testing.assert_array_equal(d.copy_to_host(), host * 3)
    col = metal.device_array((4, 1), np.float32)         # shapes equal once size-1 axes are dropped
    col.copy_to_device(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(col.copy_to_host().ravel(), np.arange(4))
    with pytest.raises(TypeError, match="incompatible dtype"):
        d.copy_to_device(np.zeros((4, 5), np.float16))
    with pytest.raises(ValueError, match="incompatible shape"):
        d.copy_to_device(np.zeros((5, 4), np.float32))
    with pytest.raises(TypeError, match="incompatible dtype"):
        d.copy_to_host(np.zeros((4, 5), np.int32))
    empty = metal.device_array(0, np.float32)
    empty.copy_to_device(np.zeros(0, np.float32))        # nothing to do, as numba.cuda


def test_copies_between_any_layouts_are_exact():
    # numba.cuda copies bytes and refuses these; on shared memory every layout copies element by element.
    host, d = _dev((5, 5), order="F")
    d[2].copy_to_device(np.full(5, -5, np.int32))        # a strided row of a Fortran array
    host[2] = -5
    np.testing.assert_array_equal(d.copy_to_host(), host)
    c = metal.to_device(np.ascontiguousarray(host))
    c.copy_to_device(d)
    np.testing.assert_array_equal(c.copy_to_host(), host)


def test_split_yields_unit_stride_sections():
    host, d = _dev((10,))
    parts = list(d.split(4))
    assert [p.shape for p in parts] == [(4,), (4,), (2,)]
    for k, p in enumerate(parts):
        np.testing.assert_array_equal(p.copy_to_host(), host[4 * k:4 * k + 4])
    add_one[1, 32](parts[1])
    host[4:8] += 1
    np.testing.assert_array_equal(d.copy_to_host(), host)
    with pytest.raises(ValueError, match="only support 1d array"):
        list(metal.device_array((2, 2)).split(1))
    with pytest.raises(ValueError, match="only support unit stride"):
        list(d[::2].split(2))


def test_bind_gives_the_array_a_default_stream_its_views_keep():
    _, d = _dev((8,))
    s = metal.stream()
    b = d.bind(s)
    assert b.stream is s and b[2:].stream is s and b.reshape(2, 4).stream is s and d.stream == 0
    assert [p.stream for p in b.split(4)] == [s, s]
    np.testing.assert_array_equal(b.copy_to_host(), d.copy_to_host())


def test_view_reinterprets_memory_by_numba_cudas_rules():
    d = metal.to_device(np.array([1.0, -2.0], dtype=np.float32))
    bits = d.view(np.uint32)
    np.testing.assert_array_equal(bits.copy_to_host(), np.array([1.0, -2.0], np.float32).view(np.uint32))
    bytes_ = metal.to_device(np.arange(12, dtype=np.int32).reshape(3, 4)).view(np.uint8)
    assert bytes_.shape == (3, 16) and bytes_.strides == (16, 1)
    with pytest.raises(ValueError, match="must be C-contiguous"):
        metal.to_device(np.zeros((4, 4), np.int32))[:, ::2].view(np.int16)
    with pytest.raises(ValueError, match="must be a divisor"):
        metal.to_device(np.zeros(3, np.int16)).view(np.int32)


def test_reshape_of_contiguous_arrays_uses_the_strides_of_the_order_over_the_same_memory():
    host, d = _dev((4, 6))
    r = d.reshape(3, 8)
    np.testing.assert_array_equal(r.copy_to_host(), host.reshape(3, 8))
    f = d.reshape((8, 3), order="F")                      # numba.cuda: F strides over the same memory
    assert f.strides == (4, 32) and f.is_f_contiguous()
    np.testing.assert_array_equal(f.copy_to_host(), host.ravel().reshape((8, 3), order="F"))
    assert d.reshape(-1, 2).shape == (12, 2)
    assert d.reshape(4, 6) .shape == (4, 6)
    fd = metal.to_device(np.asfortranarray(host))
    assert fd.reshape(6, 4, order="A").is_f_contiguous()
    for bad, message in [((5, 5), "changes the size"), ((-1, -1), "one unknown"), ((-1, 5), "cannot infer")]:
        with pytest.raises(ValueError, match=message):
            d.reshape(*bad)
    with pytest.raises(ValueError, match="order not C|F|A"):
        d.reshape(24, order="K")
    with pytest.raises(TypeError, match="integers"):
        d.reshape(12.0, 2)


def test_reshape_and_ravel_of_non_contiguous_arrays_as_views_or_not_implemented():
    host, d = _dev((4, 6))
    every_other = d[:, ::2]                               # uniform stride 8: a view can be made
    np.testing.assert_array_equal(every_other.reshape(12).copy_to_host(), host[:, ::2].reshape(12))
    with pytest.raises(NotImplementedError):
        d[:, :3].reshape(12)
    with pytest.raises(CopyRequiredError, match="copy"):
        d[:, :3].ravel()
    assert d.ravel().shape == (24,)
    fd = metal.to_device(np.asfortranarray(host))
    np.testing.assert_array_equal(fd.ravel(order="F").copy_to_host(), host.ravel(order="F"))
    with pytest.raises(NotImplementedError):
        fd.ravel()                                        # 'C' needs a C-contiguous array (numba.cuda)
    with pytest.raises(ValueError, match="order not C|F|A"):
        d.ravel(order="X")


def test_squeeze_removes_size_one_axes():
    d = metal.device_array((1, 3, 1, 2), np.int32)
    assert d.squeeze().shape == (3, 2)
    assert d.squeeze(axis=2).shape == (1, 3, 2)
    assert d.squeeze((0, -2)).shape == (3, 2)
    with pytest.raises(ValueError, match="size not equal to one"):
        d.squeeze(axis=1)


def test_contiguity_flags_follow_numba_cuda():
    host, d = _dev((3, 4))
    assert d.is_c_contiguous() and not d.is_f_contiguous()
    assert d.flags == {"C_CONTIGUOUS": True, "F_CONTIGUOUS": False}
    assert d.T.is_f_contiguous() and not d.T.is_c_contiguous()
    one = metal.device_array((5,), np.int32)
    assert one.is_c_contiguous() and one.is_f_contiguous()
    column = d[:, 1:2]                                    # a (3, 1) view with strides (16, 4)
    assert not column.is_c_contiguous() and not column.is_f_contiguous()
    row = d[1:2]                                          # (1, 4): contiguous both ways
    assert row.is_c_contiguous() and row.is_f_contiguous()
    broadcast = metal.to_device(np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3)))
    assert broadcast.is_c_contiguous()                    # to_device stores a contiguous copy
    assert metal.device_array(0).is_c_contiguous()


def test_transpose_and_T_are_views():
    host, d = _dev((2, 3, 4))
    np.testing.assert_array_equal(d.T.copy_to_host(), host.T)
    np.testing.assert_array_equal(d.transpose(1, 0, 2).copy_to_host(), host.transpose(1, 0, 2))
    np.testing.assert_array_equal(d.transpose((2, 0, 1)).copy_to_host(), host.transpose(2, 0, 1))
    t = d[0].T
    t[0, 1] = -7                                          # writes go to the original memory
    assert d[0, 1, 0] == -7
    with pytest.raises(ValueError, match=r"invalid axes list \(0, 0, 1\)"):
        d.transpose(0, 0, 1)


def test_len_nbytes_alloc_size_array_and_pointer():
    host, d = _dev((5, 3), dtype=np.float32)
    assert len(d) == 5 and d.nbytes == 60 and d.alloc_size == 60
    assert d[1:3].alloc_size == 24 and d[:, 0].alloc_size == 4 * 12 + 4
    np.testing.assert_array_equal(np.asarray(d), host)
    np.testing.assert_array_equal(np.array(d, dtype=np.float64), host.astype(np.float64))
    with pytest.raises(ValueError, match="copy=False"):   # another dtype needs a copy
        d.__array__(np.float64, copy=False)
    assert np.shares_memory(d.__array__(copy=False), np.asarray(d))   # unified memory: a view, no copy
    assert d[2:].device_ctypes_pointer.value == d.device_ctypes_pointer.value + 24
    with pytest.raises(TypeError):
        len(metal.device_array(()))


def test_ipc_is_refused_clearly():
    d = metal.device_array(4)
    with pytest.raises(UnsupportedFeatureError, match="IPC handles have no Metal equivalent"):
        d.get_ipc_handle()
    with pytest.raises(UnsupportedFeatureError, match="IPC"):
        metal.open_ipc_array(None, (4,), np.float32)


def test_device_array_shapes_are_checked_with_numba_cudas_exception_types():
    with pytest.raises(TypeError):
        metal.device_array(1.5)
    with pytest.raises(TypeError):
        metal.device_array((2, 2.0))
    with pytest.raises(ValueError, match="negative"):
        metal.device_array((2, -1))
    with pytest.raises(NumbaMetalError):
        metal.device_array((2, -1))
    assert metal.device_array(np.int64(3)).shape == (3,)
    assert metal.device_array([2, 3]).shape == (2, 3)
    with pytest.raises(MetalTypeError):
        metal.device_array(True)
