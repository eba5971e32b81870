"""The Python binding itself: lazy loading, device listing and caching, buffer views, error mapping."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from numba_metal import runtime as rt
from numba_metal.errors import KernelCompilationError, MetalRuntimeError

DEVICES = ("cpu",)  # the binding itself, and the CPU device's own settings


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_importing_does_not_load_the_library():
    code = ("import numba_metal.runtime as r\n"
            "maps = open('/proc/self/maps').read()\n"
            "assert 'libNumbaMetalRuntime' not in maps\n"
            "r.list_devices()\n"
            "assert 'libNumbaMetalRuntime' in open('/proc/self/maps').read()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_device_list_and_open_device_is_cached(device):
    infos = rt.list_devices()
    cpu = [d for d in infos if d.kind == "cpu"]
    assert len(cpu) == 1 and infos[-1] == cpu[0]  # Metal devices first, then the CPU device
    info = cpu[0]
    assert info.max_threads_per_threadgroup == 1024 and info.max_threadgroup_memory == 32768
    assert info.simd_width == 32 and info.unified_memory and info.max_buffer_slots == 31
    assert info.max_argument_bytes == 4096 and info.page_size >= 4096 and info.recommended_working_set > 0
    assert info.name.startswith("CPU reference device (")
    assert rt.open_device(info.index) is device


def test_buffer_memory_view_and_host_copies(device):
    buf = device.new_buffer(64)
    view = np.frombuffer(buf.memory(), dtype=np.int32)
    view[:] = np.arange(16)
    out = np.zeros(16, dtype=np.int32)
    buf.read(0, out.ctypes.data, 64)
    np.testing.assert_array_equal(out, np.arange(16))
    src = np.full(4, 7, dtype=np.int32)
    buf.write(16, src.ctypes.data, 16)
    assert list(view[4:8]) == [7, 7, 7, 7]
    with pytest.raises(MetalRuntimeError, match="outside the buffer"):
        buf.read(60, out.ctypes.data, 8)
    assert device.stats()["live_buffer_bytes"] >= 64


def test_compile_error_carries_the_full_log(device):
    with pytest.raises(KernelCompilationError) as e:
        device.compile("#include <metal_stdlib>\nkernel void k(device float* x [[buffer(0)]]) { x[0] = y; }\n", "k")
    assert "kernel.metal:2:" in str(e.value) and "undeclared identifier 'y'" in str(e.value)


def test_missing_library_says_how_to_build_it(tmp_path):
    code = ("from numba_metal import runtime as r\n"
            "from numba_metal.errors import MetalRuntimeError\n"
            "try:\n    r.list_devices()\nexcept MetalRuntimeError as e:\n    print('ERR', e)\n")
    env = dict(__import__("os").environ, NUMBA_METAL_LIBRARY=str(tmp_path / "libNope.so"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert "ERR" in out.stdout and "python -m numba_metal.tools.build" in out.stdout, out.stdout + out.stderr


def test_thread_and_stack_settings_are_honoured():
    code = ("from numba_metal import runtime as r\n"
            "import numpy as np\n"
            "info = [d for d in r.list_devices() if d.kind == 'cpu'][0]\n"
            "assert info.name.endswith(', 1 threads)'), info.name\n"
            "dev = r.open_device(info.index)\n"
            "src = '#include <metal_stdlib>\\nusing namespace metal;\\n' \\\n"
            "      'kernel void k(device int* x [[buffer(0)]], uint t [[thread_index_in_threadgroup]], uint g [[thread_position_in_grid]]) {' \\\n"
            "      ' threadgroup int s[1024]; s[t] = 1; threadgroup_barrier(mem_flags::mem_threadgroup); x[g] = s[1023 - t] + int(t); }'\n"
            "p = dev.compile(src, 'k')\n"
            "b = dev.new_buffer(4 * 4096)\n"
            "q = dev.new_queue()\n"
            "q.dispatch(p, [b], [0], [0], None, 31, [], (4, 1, 1), (1024, 1, 1))\n"
            "q.wait()\n"
            "v = np.frombuffer(b.memory(), dtype=np.int32)\n"
            "assert (v == np.tile(np.arange(1024) + 1, 4)).all()\n"
            "print('OK')\n")
    env = dict(__import__("os").environ, NUMBA_METAL_CPU_THREADS="1", NUMBA_METAL_CPU_STACK_KB="32")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.strip().endswith("OK"), out.stdout + out.stderr


def test_prebuilt_ffi_is_used_only_when_it_matches_the_header(tmp_path, monkeypatch):
    from numba_metal.runtime import _loader
    cdef = _loader._header_text()
    assert _loader._prebuilt_ffi(cdef) is not None          # the build generated it for this header
    assert _loader._prebuilt_ffi(cdef + "\nint nm_new_function(void);") is None   # stale: parse instead
    monkeypatch.setattr(_loader, "_LIB_DIR", tmp_path)
    assert _loader._prebuilt_ffi(cdef) is None              # absent: parse instead


def test_compiled_sources_are_dumped_by_their_hash(device, tmp_path, monkeypatch):
    import hashlib
    monkeypatch.setenv("NUMBA_METAL_MSL_DUMP_DIR", str(tmp_path / "msl"))
    src = "#include <metal_stdlib>\nkernel void dumped(device int* x [[buffer(0)]]) { x[0] = 5; }\n"
    device.compile(src, "dumped")
    with pytest.raises(KernelCompilationError):
        device.compile(src.replace("5;", "y;"), "dumped")  # refused sources are collected too
    files = sorted((tmp_path / "msl").glob("*.metal"))
    assert sorted(f.name for f in files) == sorted(hashlib.sha256(s.encode()).hexdigest() + ".metal"
                                                   for s in (src, src.replace("5;", "y;")))
    assert (tmp_path / "msl" / (hashlib.sha256(src.encode()).hexdigest() + ".metal")).read_text() == src
    # The MSL versions each source was compiled at, for .ci/macos.sh's sweep (0: the pinned MSL 3.0).
    device.compile(src, "dumped", language_version=320)
    digest = hashlib.sha256(src.encode()).hexdigest()
    assert sorted(f.name for f in (tmp_path / "msl").glob(digest + ".metal.std*")) == [digest + ".metal.std300",
                                                                                         digest + ".metal.std320"]


def test_math_modes_are_the_header_constants():
    from numba_metal.runtime._loader import load
    _, lib = load()
    assert (rt.MATH_SAFE, rt.MATH_RELAXED, rt.MATH_FAST) == (lib.NM_MATH_SAFE, lib.NM_MATH_RELAXED, lib.NM_MATH_FAST)
    assert True == rt.MATH_RELAXED  # @jit(fastmath=True) passes True: relaxed, which keeps Inf and NaN
