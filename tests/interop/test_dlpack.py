"""DLPack both ways between numba-metal and NumPy (the array API's ``__dlpack__``/``from_dlpack``), NumPy
views of device arrays, ``as_metal_array``/``is_metal_array``, and kernels taking any DLPack exporter."""

from __future__ import annotations

import gc
import mmap
import os
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.host import dlpack
from shared_kernels import add_one, spin_then_set

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ON_CPU_DEVICE = metal.get_device_info().kind == "cpu"
cpu_device_only = pytest.mark.skipif(not ON_CPU_DEVICE, reason="about the CPU reference device")


def from_device(d) -> np.ndarray:
    """NumPy's import of a device array as host memory: on a Metal device NumPy must ask for kDLCPU."""
    return np.from_dlpack(d, device="cpu")


def page_aligned(n, dtype=np.float32) -> np.ndarray:
    """A writable NumPy array over fresh page-aligned memory (an anonymous mapping)."""
    nbytes = max(n * np.dtype(dtype).itemsize, 1)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype, count=n)


class Exporter:
    """An object that exports DLPack and nothing else (no NumPy array protocol)."""

    def __init__(self, array, legacy=False, device=None):
        self.array, self.legacy, self.device = array, legacy, device
        self.calls = []

    def __dlpack__(self, stream=None, **kwargs):
        self.calls.append(dict(stream=stream, **kwargs))
        if self.legacy:
            if kwargs:
                raise TypeError("__dlpack__() got an unexpected keyword argument")
            return self.array.__dlpack__(stream=stream)
        return self.array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return self.device or self.array.__dlpack_device__()


# -- export: numba-metal -> NumPy ---------------------------------------------------------------


def test_device_type_is_cpu_on_the_cpu_device_and_metal_on_metal():
    d = metal.to_device(np.arange(4, dtype=np.float32))
    kind = dlpack.DeviceType.kDLCPU if ON_CPU_DEVICE else dlpack.DeviceType.kDLMetal
    assert d.__dlpack_device__() == (kind, 0)


def test_np_from_dlpack_is_a_view_of_the_device_memory():
    host = np.arange(10, dtype=np.float32)
    d = metal.to_device(host)
    v = from_device(d)
    assert v.ctypes.data == d.buffer.address + d.offset
    np.testing.assert_array_equal(v, host)
    add_one[1, 32](d)
    metal.synchronize()
    np.testing.assert_array_equal(v, host + 1)   # the kernel's writes are seen through the view
    v[0] = 42
    assert d.copy_to_host()[0] == 42


def test_np_asarray_is_a_view_and_copy_gives_a_copy():
    d = metal.to_device(np.arange(6, dtype=np.int32).reshape(2, 3))
    v = np.asarray(d)
    assert v.ctypes.data == d.buffer.address + d.offset and v.shape == (2, 3)
    c = np.array(d, copy=True)
    assert c.ctypes.data != v.ctypes.data
    np.testing.assert_array_equal(c, v)
    f = np.asarray(d, dtype=np.float64)
    assert f.dtype == np.float64 and f.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError):
        np.asarray(d, dtype=np.float64, copy=False)


def test_views_wait_for_pending_work():
    d = metal.device_array(4096, np.float32)
    spin_then_set[16, 256](d, 20000, np.float32(7))
    np.testing.assert_array_equal(np.asarray(d), 7)
    e = metal.device_array(4096, np.float32)
    s = metal.stream()
    spin_then_set[16, 256, s](e, 20000, np.float32(3))   # on another stream too
    np.testing.assert_array_equal(from_device(e), 3)


@pytest.mark.parametrize("index", [np.s_[::2], np.s_[::-1], np.s_[3:3], np.s_[1:, ::-2], np.s_[..., 1]])
def test_non_contiguous_and_empty_views(index):
    host = np.arange(40, dtype=np.float32).reshape(5, 8)
    d = metal.to_device(host)
    sub = d[index]
    np.testing.assert_array_equal(from_device(sub), host[index])
    np.testing.assert_array_equal(np.asarray(sub), host[index])


def test_transposed_and_zero_size():
    host = np.arange(12, dtype=np.int16).reshape(3, 4)
    d = metal.to_device(host)
    np.testing.assert_array_equal(from_device(d.T), host.T)
    z = metal.device_array((0, 3), np.float32)
    assert from_device(z).shape == (0, 3)


def test_view_outlives_the_device_array():
    d = metal.to_device(np.arange(1000, dtype=np.float64))
    buffer = weakref.ref(d.buffer)
    v = from_device(d)
    w = np.asarray(d)
    del d
    gc.collect()
    assert buffer() is not None   # the views keep the buffer
    np.testing.assert_array_equal(v, np.arange(1000))
    np.testing.assert_array_equal(w, np.arange(1000))
    del v
    gc.collect()
    assert buffer() is not None
    del w
    gc.collect()
    assert buffer() is None


def test_versioned_and_legacy_capsules():
    d = metal.to_device(np.arange(3, dtype=np.float32))
    assert '"dltensor_versioned"' in repr(d.__dlpack__(max_version=(1, 0)))
    assert '"dltensor_versioned"' in repr(d.__dlpack__(max_version=(2, 5)))
    assert '"dltensor"' in repr(d.__dlpack__())
    assert '"dltensor"' in repr(d.__dlpack__(max_version=(0, 8)))
    # NumPy reads both (it does not retry a legacy producer without dl_device, so device="cpu", which
    # a Metal device needs, cannot be asked of one).
    if ON_CPU_DEVICE:
        np.testing.assert_array_equal(np.from_dlpack(Exporter(d, legacy=True)), [0, 1, 2])
    np.testing.assert_array_equal(np.from_dlpack(Exporter(d), device="cpu"), [0, 1, 2])


def test_unconsumed_capsules_release_the_array():
    gc.collect()
    before = dlpack.live_exports()
    d = metal.to_device(np.arange(3, dtype=np.float32))
    caps = [d.__dlpack__(max_version=(1, 1)), d.__dlpack__()]
    assert dlpack.live_exports() == before + 2
    del caps
    gc.collect()
    assert dlpack.live_exports() == before
    v = from_device(d)
    assert dlpack.live_exports() == before + 1
    del v
    gc.collect()
    assert dlpack.live_exports() == before


def test_copy_true_exports_a_copy():
    d = metal.to_device(np.arange(5, dtype=np.float32))
    c = np.from_dlpack(d, device="cpu", copy=True)
    assert c.ctypes.data != d.buffer.address
    c[0] = 9
    assert d.copy_to_host()[0] == 0
    np.testing.assert_array_equal(np.from_dlpack(d, device="cpu", copy=False), np.arange(5))


def test_export_errors_are_buffer_errors():
    d = metal.to_device(np.arange(3, dtype=np.float32))
    with pytest.raises(BufferError, match="stream=None"):
        d.__dlpack__(stream=1, dl_device=(1, 0))
    with pytest.raises(BufferError, match="stream=1"):
        d.__dlpack__(stream=1)
    with pytest.raises(metal.DLPackError, match="kDLCUDA"):
        d.__dlpack__(dl_device=(dlpack.DeviceType.kDLCUDA, 0))
    with pytest.raises(metal.DLPackError, match="dtype"):
        metal.to_device(np.zeros(2, dtype=">f4")).__dlpack__()
    # The array is still usable.
    np.testing.assert_array_equal(from_device(d), [0, 1, 2])


# -- import: NumPy (and any producer) -> numba-metal ------------------------------------------


def test_page_aligned_host_memory_is_wrapped_without_a_copy():
    host = page_aligned(1000)
    host[:] = np.arange(1000)
    d = metal.from_dlpack(host)
    assert d.buffer.address == host.ctypes.data
    add_one[4, 256](d)
    metal.synchronize()
    np.testing.assert_array_equal(host, np.arange(1000) + 1)
    assert metal.as_metal_array(host).buffer.address == host.ctypes.data


def test_wrapped_memory_keeps_the_producer_alive():
    gc.collect()
    before = dlpack.live_exports()
    d = metal.to_device(np.arange(8, dtype=np.int32))
    imported = metal.from_dlpack(Exporter(d[::2]))   # numba-metal's own memory is page-aligned
    del d
    gc.collect()
    np.testing.assert_array_equal(imported.copy_to_host(), [0, 2, 4, 6])
    del imported
    gc.collect()
    assert dlpack.live_exports() == before


def test_unaligned_memory_is_copied_unless_copy_false():
    host = page_aligned(100)
    host[:] = np.arange(100)
    tail = host[1:]
    d = metal.from_dlpack(tail)
    assert d.buffer.address != tail.ctypes.data
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(1, 100))
    with pytest.raises(metal.DLPackError, match="page size") as e:
        metal.from_dlpack(tail, copy=False)
    assert isinstance(e.value, BufferError)
    with pytest.raises(metal.DLPackError, match="page size"):
        metal.as_metal_array(tail)
    c = metal.from_dlpack(host, copy=True)
    assert c.buffer.address != host.ctypes.data
    np.testing.assert_array_equal(c.copy_to_host(), host)


def test_read_only_memory_is_copied():
    host = page_aligned(16)
    host[:] = 5
    host.flags.writeable = False
    d = metal.from_dlpack(host)
    assert d.buffer.address != host.ctypes.data
    np.testing.assert_array_equal(d.copy_to_host(), 5)
    with pytest.raises(metal.DLPackError, match="read-only"):
        metal.from_dlpack(host, copy=False)


def test_non_contiguous_and_negative_strides_import():
    host = page_aligned(64, np.float64).reshape(8, 8)
    host[:] = np.arange(64).reshape(8, 8)
    for view in (host[:, ::3], host.T, host[::-1, :][4:]):
        d = metal.from_dlpack(view)
        np.testing.assert_array_equal(d.copy_to_host(), view)
        np.testing.assert_array_equal(np.asarray(d), view)
    empty = metal.from_dlpack(np.zeros((0, 4), np.float32))
    assert empty.shape == (0, 4) and empty.copy_to_host().shape == (0, 4)


def test_legacy_producers_and_the_request_made():
    host = page_aligned(4)
    host[:] = [1, 2, 3, 4]
    legacy = Exporter(host, legacy=True)
    np.testing.assert_array_equal(metal.from_dlpack(legacy).copy_to_host(), [1, 2, 3, 4])
    assert legacy.calls[0] == {"stream": None, "max_version": dlpack.VERSION}   # asked for 1.x first
    assert legacy.calls[-1] == {"stream": None}                                 # then without it
    modern = Exporter(host)
    metal.from_dlpack(modern)
    assert modern.calls == [{"stream": None, "max_version": dlpack.VERSION}]


def test_import_errors():
    with pytest.raises(metal.DLPackError, match="does not export DLPack"):
        metal.from_dlpack([1, 2, 3])
    with pytest.raises(metal.DLPackError, match="kDLCUDA"):
        metal.from_dlpack(Exporter(np.zeros(2), device=(2, 0)))
    if ON_CPU_DEVICE:   # (on a Metal device the fake would be taken for an MTLBuffer)
        with pytest.raises(metal.DLPackError, match="Metal buffer.*CPU reference device"):
            metal.from_dlpack(Exporter(np.zeros(2), device=(8, 0)))
    with pytest.raises(metal.DLPackError, match="bfloat16|NumPy dtype"):
        from numba_metal.host.dlpack import np_dtype
        np_dtype(4, 16, 1)
    d = metal.to_device(np.arange(2, dtype=np.float32))
    assert metal.from_dlpack(d) is d
    assert metal.from_dlpack(d, copy=True).buffer is not d.buffer


def test_is_metal_array():
    d = metal.to_device(np.zeros(2, np.float32))
    assert metal.is_metal_array(d)
    assert not metal.is_metal_array(np.zeros(2))
    assert not metal.is_metal_array(object())
    assert metal.is_metal_array(Exporter(np.zeros(2), device=(8, 0)))


# -- kernels take any DLPack exporter -----------------------------------------------------------


def test_kernels_take_dlpack_exporters():
    aligned = page_aligned(300)
    unaligned = np.arange(301, dtype=np.float32)[1:]
    for host in (aligned, unaligned):
        host[:] = np.arange(300)
        add_one[2, 256](Exporter(host))
        np.testing.assert_array_equal(host, np.arange(300) + 1)   # in place, or copied in and back


def test_a_kernel_refuses_an_exporter_it_cannot_use():
    with pytest.raises(metal.KernelLaunchError, match="argument 0.*kDLCUDA"):
        add_one[1, 1](Exporter(np.zeros(2, np.float32), device=(2, 0)))


# -- the simulated Metal device: kDLMetal with MTLBuffer handles --------------------------------


def test_metal_devices_export_mtlbuffers_and_wrap_them_back():
    code = textwrap.dedent("""
        import numpy as np
        from numba_metal import metal
        metal.select_device("metal-sim")
        d = metal.to_device(np.arange(16, dtype=np.float32))
        sub = d[4:]
        assert sub.__dlpack_device__() == (8, 0), sub.__dlpack_device__()
        class Exporter:                        # only DLPack, as another library's array
            def __dlpack__(self, **kw): return sub.__dlpack__(**kw)
            def __dlpack_device__(self): return sub.__dlpack_device__()
        back = metal.from_dlpack(Exporter())   # kDLMetal: the MTLBuffer and a byte offset
        assert back.buffer is not d.buffer and back.buffer.address == d.buffer.address, "not the same MTLBuffer"
        assert back.offset == 16 and back.copy_to_host().tolist() == list(range(4, 16))
        assert metal.as_metal_array(Exporter()).buffer.address == d.buffer.address
        assert metal.as_metal_array(Exporter(), sync=False).offset == 16
        assert metal.is_metal_array(Exporter())
        @metal.jit
        def add_one(a):
            i = metal.grid(1)
            if i < a.size:
                a[i] += 1
        add_one[1, 16](Exporter())             # kernels use the MTLBuffer in place
        metal.synchronize()
        assert d.copy_to_host().tolist() == list(range(4)) + list(range(5, 17))
        s = metal.stream()                     # a consumer's stream: ordered after the device's work
        cap = sub.__dlpack__(stream=s, max_version=(1, 1))
        cap = sub.__dlpack__(stream=-1)
        # A consumer that wants host memory gets the shared memory's address.
        cap = sub.__dlpack__(dl_device=(1, 0), max_version=(1, 1))
        assert '"dltensor_versioned"' in repr(cap)
        del cap
        v = np.from_dlpack(sub, device="cpu")  # NumPy asks for kDLCPU: a view of the shared memory
        assert v.ctypes.data == d.buffer.address + 16 and v.tolist() == list(range(5, 17))
        # NumPy refuses a kDLMetal capsule: its error comes through intact and the capsule is released.
        import gc
        from numba_metal.host import dlpack
        del v, back, s
        gc.collect()
        before = dlpack.live_exports()
        try:
            np.from_dlpack(sub)
        except RuntimeError as e:
            assert "device" in str(e), e
        else:
            raise AssertionError("NumPy took a kDLMetal capsule")
        assert dlpack.live_exports() == before
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@cpu_device_only
def test_the_cpu_device_has_no_mtlbuffers():
    d = metal.to_device(np.zeros(2, np.float32))
    with pytest.raises(metal.UnsupportedPlatformError, match="no MTLBuffers"):
        d.buffer.native_handle()
