"""Streams, events, synchronisation and the device API."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalError, UnsupportedPlatformError


@metal.jit
def busy_add(a, n, v):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        for _ in range(n):
            x = x * 1.0000001 + 0.0
        a[i] = x + v


def test_work_on_one_stream_runs_in_order():
    s = metal.stream()
    d = metal.to_device(np.zeros(4096, np.float32))
    for v in range(1, 21):
        busy_add[16, 256, s](d, 10, float(v))
    s.synchronize()
    expected = np.zeros(4096, np.float32)
    for v in range(1, 21):
        for _ in range(10):
            expected = expected * np.float32(1.0000001) + np.float32(0)
        expected = expected + np.float32(v)
    np.testing.assert_allclose(d.copy_to_host(stream=s), expected, rtol=1e-5)


def test_events_order_work_across_streams_and_time_it():
    s1, s2 = metal.stream(), metal.stream()
    d = metal.to_device(np.zeros(2048, np.float32))
    start, mid = metal.event(), metal.event()
    start.record(s1)
    busy_add[8, 256, s1](d, 2000, 1.0)
    mid.record(s1)
    mid.wait(s2)                     # s2's next work starts after s1's first kernel
    busy_add[8, 256, s2](d, 1, 10.0)
    s2.synchronize()
    mid.synchronize()
    assert mid.query() and start.query()
    out = d.copy_to_host()
    assert np.all(out > 10.9)        # both kernels ran, the second after the first
    ms = start.elapsed_time(mid)
    assert ms > 0 and ms == metal.event_elapsed_time(start, mid)


def test_unrecorded_event_and_timing_disabled():
    e = metal.event()
    with pytest.raises(NumbaMetalError, match="not been recorded"):
        e.query()
    e2, e3 = metal.event(timing=False), metal.event(timing=False)
    e2.record()
    e3.record()
    e3.synchronize()
    with pytest.raises(NumbaMetalError, match="timing=False"):
        e2.elapsed_time(e3)


def test_default_stream_and_synchronize():
    ds = metal.default_stream()
    assert ds is metal.default_stream()
    d = metal.to_device(np.zeros(256, np.float32))
    busy_add[1, 256, ds](d, 5, 2.0)
    busy_add[1, 256, 0](d, 5, 3.0)
    metal.synchronize()
    assert ds.query()
    np.testing.assert_allclose(d.copy_to_host(), 5.0, rtol=1e-5)


def test_stream_auto_synchronize_context():
    s = metal.stream()
    d = metal.to_device(np.zeros(64, np.float32))
    with s.auto_synchronize():
        busy_add[1, 64, s](d, 1, 7.0)
    assert s.query()
    np.testing.assert_allclose(d.copy_to_host(stream=s), 7.0)


def test_device_info_and_availability():
    info = metal.get_device_info()
    assert info.kind == "cpu" and info.simd_width == 32 and info.max_threads_per_threadgroup == 1024
    assert info.unified_memory and info.max_threadgroup_memory == 32768
    assert metal.is_available() is False      # no Metal GPU on this machine
    assert metal.select_device("cpu").info.kind == "cpu"
    with pytest.raises(UnsupportedPlatformError, match="unknown device kind"):
        metal.select_device("tpu")


def test_without_a_metal_gpu_the_error_says_how_to_choose_the_cpu_device():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_METAL_DEVICE"}
    code = ("import numpy as np\nfrom numba_metal import metal\n"
            "try:\n    metal.to_device(np.zeros(3))\nexcept Exception as e:\n"
            "    print(type(e).__name__, '|', e)\n")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "UnsupportedPlatformError" in res.stdout
    assert "NUMBA_METAL_DEVICE=cpu" in res.stdout and "select_device('cpu')" in res.stdout


def test_many_python_threads_compile_launch_and_copy_at_once():
    errors = []

    def worker(k):
        try:
            @metal.jit
            def add_k(a):
                i = metal.grid(1)
                if i < a.size:
                    a[i] += k
            s = metal.stream()
            for _ in range(5):
                d = metal.to_device(np.full(1000, k, np.int64))
                add_k[4, 256, s](d)
                add_k[4, 256, s](d)          # same stream: ordered after the first launch
                np.testing.assert_array_equal(d.copy_to_host(stream=s), 3 * k)
                add_k[4, 256](d)             # default stream, after the host copy waited
                np.testing.assert_array_equal(d.copy_to_host(), 4 * k)
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
