"""Unified memory without copies where that is correct: mapped arrays, page-aligned NumPy arrays,
``copy_to_host`` into the array's own memory; and copies where zero copy would be wrong."""

import mmap

import numpy as np
import pytest

from numba_metal import metal, profiling
from numba_metal.errors import KernelLaunchError
from numba_metal.host import device as _device
from shared_kernels import add_one

#: add_one never sanitized (NUMBA_METAL_SANITIZE): the tests that count a launch's events use it, as a sanitized
#: launch waits for its kernel (docs/sanitizer.md)
plain_add_one = metal.jit(sanitize=False)(add_one.py_func)


@metal.jit
def copy_into(dst, src):
    i = metal.grid(1)
    if i < dst.size:
        dst[i] = src[i]


class Events:
    def __init__(self):
        self.events = []

    def __enter__(self):
        profiling.add_listener(self.events.append)
        return self

    def __exit__(self, *exc):
        profiling.remove_listener(self.events.append)

    def kinds(self):
        return [e.kind for e in self.events if e.kind != "compile"]


def _page() -> int:
    return _device.current().info.page_size


def _aligned_empty(n, dtype=np.float32):
    """A writeable NumPy array whose data starts on a page boundary (the usual over-allocate trick)."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(n * itemsize + _page(), np.uint8)
    start = -raw.ctypes.data % _page()
    return raw[start:start + n * itemsize].view(dtype)


def test_mapped_arrays_are_shared_both_ways_without_copies_or_waits():
    m = metal.mapped_array(1000, np.float32)
    plain_add_one[4, 256](m)          # compile outside the measured region
    metal.synchronize()
    m[:] = np.arange(1000)      # the host writes; the kernel sees it
    with Events() as ev:
        plain_add_one[4, 256](m)
    assert ev.kinds() == ["launch"]                  # no alloc, no copy, no wait: asynchronous
    metal.synchronize()
    np.testing.assert_array_equal(m, np.arange(1000) + 1)   # the host sees the kernel's writes


def test_views_of_mapped_arrays_are_used_in_place():
    m = metal.mapped_array(16, np.int32)
    with Events() as ev:
        add_one[1, 16](m[::2])
        add_one[1, 16](m[::-1][:4])
        metal.synchronize()
    assert "copy" not in ev.kinds() and "alloc" not in ev.kinds()
    expected = np.zeros(16, np.int32)
    expected[::2] += 1
    expected[::-1][:4] += 1
    np.testing.assert_array_equal(m, expected)


def test_arrays_computed_from_a_mapped_array_are_not_taken_for_its_memory():
    m = metal.mapped_array(8, np.float32)
    derived = m + 1               # a MappedNDArray by class, in new memory
    add_one[1, 8](derived)
    metal.synchronize()
    np.testing.assert_array_equal(derived, 2)
    np.testing.assert_array_equal(m, 0)


@pytest.mark.parametrize("make", ["mmap", "aligned_empty"])
def test_page_aligned_numpy_arrays_are_wrapped_without_copies(make, monkeypatch):
    # Mapped memory is wrapped by default; page-aligned malloc'd memory when the setting opts in (issue 26
    # item 1: Metal may refuse malloc'd memory; host/test_host_memory_in_place.py has the default).
    n = 3000
    if make == "mmap":
        mem = mmap.mmap(-1, n * 4)
        a = np.frombuffer(mem, dtype=np.float32)
    else:
        monkeypatch.setenv("NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY", "1")
        a = _aligned_empty(n)
    assert a.ctypes.data % _page() == 0 and a.flags.writeable
    a[:] = np.arange(n)
    plain_add_one[12, 256](a)           # compiles (and is wrapped) once before measuring
    with Events() as ev:
        plain_add_one[12, 256](a)
    assert ev.kinds() == ["launch", "wait"]          # in place: no alloc, no copies; waits for its result
    np.testing.assert_array_equal(a, np.arange(n) + 2)


def test_unaligned_numpy_arrays_are_copied_in_and_out():
    raw = _aligned_empty(1001)
    a = raw[1:]                    # 4 bytes past a page boundary
    a[:] = 5
    add_one[4, 256](a)
    with Events() as ev:
        add_one[4, 256](a)
    assert "alloc" in ev.kinds() and "copy" in ev.kinds()
    np.testing.assert_array_equal(a, 7)


def test_read_only_memory_is_never_written_by_a_kernel():
    data = bytes(3 * _page())
    ro = np.frombuffer(data, dtype=np.float32)
    start = (-ro.ctypes.data % _page()) // 4
    view = ro[start:start + 256]
    assert view.ctypes.data % _page() == 0 and not view.flags.writeable
    with pytest.raises(KernelLaunchError, match="read-only NumPy memory"):
        add_one[1, 256](view)                      # a kernel that writes it is refused
    assert data == bytes(3 * _page())              # the bytes object is unchanged
    np.testing.assert_array_equal(view, 0)


def test_copy_to_host_into_the_arrays_own_memory_is_skipped():
    d = metal.to_device(np.arange(64, dtype=np.float32))
    own = d._host_view()
    with Events() as ev:
        got = d.copy_to_host(own)
    assert got is own and "copy" not in ev.kinds()
    np.testing.assert_array_equal(own, np.arange(64))
    other = np.empty(64, np.float32)
    with Events() as ev:
        d.copy_to_host(other)
    assert "copy" in ev.kinds()
    np.testing.assert_array_equal(other, np.arange(64))


def test_transfers_are_correct_for_every_layout():
    c = np.arange(24, dtype=np.int32).reshape(4, 6)
    f = np.asfortranarray(c)
    strided = c[:, ::2]
    for host in (c, f, strided, c[::-1]):
        d = metal.to_device(host)
        np.testing.assert_array_equal(d.copy_to_host(), host)
    d = metal.to_device(f)
    assert d.is_f_contiguous()
    target = metal.device_array((4, 6), np.int32)
    metal.to_device(c * 2, to=target)
    np.testing.assert_array_equal(target.copy_to_host(), c * 2)
    target.copy_to_device(c)
    np.testing.assert_array_equal(target.copy_to_host(), c)
    np.testing.assert_array_equal(metal.to_device(c)[1:3, 2:].copy_to_host(), c[1:3, 2:])


def test_zero_dimensional_views_read_their_own_element():
    d = metal.to_device(np.arange(10, dtype=np.float32))
    assert d[3, ...].copy_to_host() == 3
    assert d[2:][1, ...].copy_to_host() == 3


def test_device_arrays_and_mapped_arrays_mix_in_one_launch():
    m = metal.mapped_array(32, np.float32)
    src = metal.to_device(np.arange(32, dtype=np.float32))
    copy_into[1, 32](m, src)
    metal.synchronize()
    np.testing.assert_array_equal(m, np.arange(32))
