"""numba.cuda's host-memory API on unified memory: pinned_array(_like), managed_array, mapped_array(_like),
the pinned() and mapped() blocks, defer_cleanup(), and the In / Out / InOut argument hints."""

import mmap
import warnings

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalError


@metal.jit
def scale(a, factor):
    i = metal.grid(1)
    if i < a.size:
        a[i] *= factor


@metal.jit
def copy_twice(src, dst):
    i = metal.grid(1)
    if i < dst.size:
        dst[i] = 2 * src[i]
        src[i] = -1


def _page_aligned(n, dtype=np.float32):
    """A NumPy array over page-aligned memory (what unified memory can use in place)."""
    buf = mmap.mmap(-1, max(n * np.dtype(dtype).itemsize, 1))
    return np.frombuffer(buf, dtype=dtype, count=n)


@pytest.mark.parametrize("make", [
    lambda: metal.pinned_array(64, np.float32),
    lambda: metal.pinned_array_like(np.zeros(64, np.float32)),
    lambda: metal.managed_array(64, np.float32),
    lambda: metal.mapped_array(64, np.float32),
    lambda: metal.mapped_array_like(np.zeros(64, np.float32)),
])
def test_pinned_managed_and_mapped_arrays_are_host_arrays_kernels_use_in_place(make):
    a = make()
    assert isinstance(a, np.ndarray) and a.shape == (64,) and a.dtype == np.float32
    a[:] = np.arange(64)
    scale[1, 64](a, np.float32(3))
    metal.synchronize()                       # the launch is asynchronous: the array is device memory
    np.testing.assert_array_equal(a, 3 * np.arange(64, dtype=np.float32))


def test_pinned_block_changes_nothing_and_copies_work_inside_it():
    host = np.arange(10, dtype=np.float32)
    with metal.pinned(host):
        d = metal.to_device(host)
        np.testing.assert_array_equal(d.copy_to_host(), host)


def test_mapped_block_uses_page_aligned_memory_in_place():
    host = _page_aligned(256)
    host[:] = np.arange(256)
    with metal.mapped(host) as d:
        assert isinstance(d, metal.DeviceNDArray)
        scale[1, 256](d, np.float32(2))
        metal.synchronize()
        np.testing.assert_array_equal(host, 2 * np.arange(256, dtype=np.float32))   # no copy back needed


def test_mapped_block_copies_other_memory_back_at_its_end():
    a = np.arange(1, 101, dtype=np.float32)[1:]            # not page-aligned
    b = np.zeros(99, np.float32)
    with metal.mapped(a, b) as (da, db):
        copy_twice[1, 128](da, db)
    np.testing.assert_array_equal(b, 2 * np.arange(2, 101, dtype=np.float32))
    np.testing.assert_array_equal(a, -1)
    with pytest.raises(TypeError):
        with metal.mapped([1, 2, 3]):
            pass


def test_defer_cleanup_is_a_harmless_block():
    with metal.defer_cleanup():
        d = metal.to_device(np.ones(4, np.float32))
        del d
    np.testing.assert_array_equal(metal.to_device(np.ones(2)).copy_to_host(), 1)


def test_in_is_copied_to_the_device_and_never_back():
    src = np.arange(1, 65, dtype=np.float32)
    dst = np.zeros(64, np.float32)
    copy_twice[1, 64](metal.In(src), dst)
    np.testing.assert_array_equal(dst, 2 * np.arange(1, 65, dtype=np.float32))
    np.testing.assert_array_equal(src, np.arange(1, 65, dtype=np.float32))   # the kernel's writes stay there


def test_out_is_not_copied_in_but_is_copied_back():
    src = np.arange(1, 65, dtype=np.float32)
    dst = np.full(64, 99, np.float32)[::1]
    copy_twice[1, 64](src, metal.Out(dst))
    np.testing.assert_array_equal(dst, 2 * np.arange(1, 65, dtype=np.float32))
    np.testing.assert_array_equal(src, -1)                  # a plain NumPy argument is copied back


def test_out_kernel_sees_no_host_data_when_it_is_copied():
    @metal.jit
    def read_then_write(a):
        i = metal.grid(1)
        if i < a.size:
            a[i] = a[i] + 1
    dst = np.full(65, 50, np.float32)[1:]                   # not page-aligned: a device array, not copied in
    read_then_write[1, 64](metal.Out(dst))
    np.testing.assert_array_equal(dst, 1)


def test_inout_and_hints_around_device_arrays():
    a = np.arange(32, dtype=np.float32)
    scale[1, 32](metal.InOut(a), np.float32(2))
    np.testing.assert_array_equal(a, 2 * np.arange(32, dtype=np.float32))
    d = metal.to_device(np.ones(32, np.float32))
    scale[1, 32](metal.In(d), np.float32(5))                 # a device array is used as it is
    np.testing.assert_array_equal(d.copy_to_host(), 5)
    with pytest.raises(NumbaMetalError, match="wrap arrays"):
        scale[1, 32](metal.In("text"), np.float32(5))
    with pytest.raises(NumbaMetalError, match="wrap arrays"):
        scale[1, 32](d, metal.In(np.float32(5)))


def test_numpy_arguments_copied_at_every_launch_warn_as_numba_cuda(monkeypatch):
    from numba.core.errors import NumbaPerformanceWarning
    monkeypatch.setenv("NUMBA_METAL_WARN_ON_IMPLICIT_COPY", "1")
    a = np.arange(1, 34, dtype=np.float32)[1:]              # not page-aligned: copied in and back
    with pytest.warns(NumbaPerformanceWarning, match="copy overhead") as record:
        scale[1, 32](a, np.float32(2))
    assert record[0].filename == __file__                   # attributed to the launching line
    aligned = _page_aligned(32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        scale[1, 32](aligned, np.float32(2))                 # used in place: nothing copied, no warning
        scale[1, 32](metal.to_device(a), np.float32(2))
    monkeypatch.setenv("NUMBA_DISABLE_PERFORMANCE_WARNINGS", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        scale[1, 32](a, np.float32(2))
