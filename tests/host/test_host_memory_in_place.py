"""Host memory used in place (issue 26 item 1): which NumPy memory kernels use without a copy, on every path
a Mac takes, forced here with page-aligned memory (glibc rarely gives it, macOS's malloc usually does).

By default only mapped memory (np.memmap, mmap.mmap, mapped_array views) is wrapped; page-aligned malloc'd
memory is copied unless NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY=1. A wrap the device refuses falls back to the
copy path (the launch never fails for it), and a wrap is reused while it lives, not made per launch.
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_metal import metal, runtime as rt
from numba_metal.errors import UnsupportedPlatformError
from numba_metal.host import arguments, perf_warnings, wrapping
from numba_metal.host.arguments import bind_array

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 4096


@metal.jit
def add_one(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] += 1


def malloc_aligned(n=N, dtype=np.float32) -> np.ndarray:
    """A page-aligned array in malloc'd memory (a page-aligned slice of a larger NumPy allocation)."""
    page = ctx().info.page_size
    nbytes = n * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + page, np.uint8)
    off = (-raw.ctypes.data) % page
    a = raw[off:off + nbytes].view(dtype)
    assert a.ctypes.data % page == 0 and not wrapping.is_mapped_memory(a)
    return a


def mmap_aligned(n=N, dtype=np.float32) -> np.ndarray:
    return np.frombuffer(mmap.mmap(-1, n * np.dtype(dtype).itemsize), dtype=dtype, count=n)


@pytest.fixture
def copies(monkeypatch):
    """Counts the launches' implicit copies (a NumPy argument going through a device copy)."""
    count = [0]
    monkeypatch.setattr(perf_warnings, "implicit_copy", lambda: count.__setitem__(0, count[0] + 1))
    return count


@pytest.fixture
def opt_in(monkeypatch):
    monkeypatch.setenv(wrapping.WRAP_ALIGNED_HOST_MEMORY, "1")


def ctx():
    from numba_metal.host import device
    return device.current()


def test_mapped_memory_is_known_and_malloc_memory_is_not(tmp_path):
    mm = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(N,))
    assert wrapping.is_mapped_memory(mm) and wrapping.is_mapped_memory(mm[1024:]) and wrapping.is_mapped_memory(np.asarray(mm))
    assert wrapping.is_mapped_memory(mmap_aligned())
    assert wrapping.is_mapped_memory(metal.mapped_array(8, np.float32)[2:])
    assert not wrapping.is_mapped_memory(np.zeros(N, np.float32))
    assert not wrapping.is_mapped_memory(malloc_aligned())


def test_page_aligned_malloc_memory_is_copied_by_default(copies):
    a = malloc_aligned()
    b = bind_array(ctx(), a, 0, "k")
    assert b.copy_back is not None and b.buffer.address != a.ctypes.data
    a[:] = 1
    add_one[N // 256, 256](a)
    assert (a == 2).all() and copies[0] == 2   # bind_array's and the launch's


def test_every_path_uses_page_aligned_memory_in_place_when_opted_in(opt_in, copies):
    # Each place a Mac wraps a NumPy array: a plain argument, Out and InOut hints, metal.mapped(), DLPack.
    a = malloc_aligned()
    b = bind_array(ctx(), a, 0, "k")
    assert b.buffer.address == a.ctypes.data and b.copy_back is None and b.sync
    add_one[N // 256, 256](a)
    add_one[N // 256, 256](metal.InOut(a))
    add_one[N // 256, 256](metal.Out(a))
    assert (a == 3).all()
    with metal.mapped(a) as d:
        assert d.buffer.address == a.ctypes.data
        add_one[N // 256, 256](d)
    metal.synchronize()
    assert (a == 4).all()
    d = metal.from_dlpack(a)
    assert d.buffer.address == a.ctypes.data
    add_one[N // 256, 256](d)
    metal.synchronize()
    assert (a == 5).all()

    class Exporter:   # a DLPack producer passed straight to a kernel: a NumPy view, then the same rule
        def __dlpack__(self, **kw):
            return a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return a.__dlpack_device__()

    add_one[N // 256, 256](Exporter())
    assert (a == 6).all() and copies[0] == 0


def test_mapped_memory_is_used_in_place_by_default(tmp_path, copies):
    mm = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(N,))
    add_one[N // 256, 256](mm)
    add_one[N // 256, 256](mm[1024:])   # a page-aligned view
    assert (mm[:1024] == 1).all() and (mm[1024:] == 2).all() and copies[0] == 0


def test_a_wrap_is_reused_across_launches(opt_in, monkeypatch):
    wraps = []
    original = rt.Device.wrap_buffer

    def counting(self, address, nbytes, owner):
        wraps.append((address, nbytes))
        return original(self, address, nbytes, owner)

    monkeypatch.setattr(rt.Device, "wrap_buffer", counting)
    a = malloc_aligned()
    for _ in range(5):
        add_one[N // 256, 256](a)
    assert (a == 5).all() and len(wraps) == 1


def test_a_refused_wrap_falls_back_to_a_copy(opt_in, monkeypatch, copies):
    def refuse(self, address, nbytes, owner):
        raise UnsupportedPlatformError("Metal refused to use host memory in place (test)")

    monkeypatch.setattr(rt.Device, "wrap_buffer", refuse)
    a = malloc_aligned()
    add_one[N // 256, 256](a)
    assert (a == 1).all() and copies[0] == 1
    with metal.mapped(a) as d:
        add_one[N // 256, 256](d)
    assert (a == 2).all()
    assert (metal.from_dlpack(a).copy_to_host() == 2).all()
    with pytest.raises(metal.DLPackError, match="refused"):
        metal.from_dlpack(a, copy=False)


@pytest.mark.skipif("metal-sim" not in {d.kind for d in rt.list_devices(include_simulated=True)},
                    reason="the simulated Metal device exists only in builds without Metal")
def test_the_strict_simulator_refuses_malloc_memory_and_launches_still_work(tmp_path):
    # The simulated Metal device in strict no-copy mode accepts only file-backed mapped memory: malloc'd
    # memory (opted in) is refused and copied; an np.memmap is used in place.
    code = textwrap.dedent(f"""
        import mmap, numpy as np
        from numba_metal import metal, runtime as rt
        from numba_metal.host import device, wrapping
        from numba_metal.host.arguments import bind_array
        @metal.jit
        def add_one(a):
            i = metal.grid(1)
            if i < a.size:
                a[i] += 1
        dev = device.current().device
        dev.sim_control(rt.SIM_STRICT_NO_COPY, 1)
        page = mmap.PAGESIZE
        raw = np.zeros({N} * 4 + page, np.uint8)
        off = (-raw.ctypes.data) % page
        a = raw[off:off + {N} * 4].view(np.float32)
        add_one[{N} // 256, 256](a)
        print("MALLOC", int(a.sum()), dev.sim_stats()["refused_no_copy_wraps"])
        mm = np.memmap({str(tmp_path / "m.bin")!r}, dtype=np.float32, mode="w+", shape=({N},))
        b = bind_array(device.current(), mm, 0, "k")
        add_one[{N} // 256, 256](mm)
        print("MEMMAP", int(mm.sum()), b.buffer.address == mm.ctypes.data, dev.sim_stats()["refused_no_copy_wraps"])
    """)
    env = dict(os.environ, NUMBA_METAL_DEVICE="metal-sim", NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"MALLOC {N} 1" in r.stdout, r.stdout + r.stderr
    assert f"MEMMAP {N} True 1" in r.stdout, r.stdout + r.stderr
