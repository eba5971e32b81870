"""The launch path of a known specialisation: everything it skips (re-validating a configuration,
re-typing arguments, rebinding unchanged buffers, allocating) must not change what a launch does or
which errors it raises. Speed itself is measured by benchmarks/perf_launch.py, not here."""

import threading

import numpy as np
import pytest

from numba_metal import metal, profiling
from numba_metal.errors import KernelLaunchError
from numba_metal.host import device as _device


@metal.jit
def axpy(out, x, a, b):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a * x[i] + b


@metal.jit
def nothing(a, b):
    pass


def _device_stats():
    return _device.current().device.stats()


def test_a_launch_is_one_dispatch_and_allocates_no_buffers():
    x = metal.to_device(np.arange(64, dtype=np.float32))
    out = metal.device_array(64, np.float32)
    axpy[2, 32](out, x, np.float32(2), np.float32(1))
    nothing[1, 1](np.float32(1), 3)
    metal.synchronize()
    before = _device_stats()
    for i in range(500):
        axpy[2, 32](out, x, np.float32(i), np.float32(1))
        nothing[1, 1](np.float32(i), i)
    metal.synchronize()
    after = _device_stats()
    assert after["dispatches"] - before["dispatches"] == 1000
    assert after["live_buffers"] == before["live_buffers"]
    assert after["live_buffer_bytes"] == before["live_buffer_bytes"]
    np.testing.assert_array_equal(out.copy_to_host(), 499 * np.arange(64, dtype=np.float32) + 1)


def test_launch_configurations_of_plain_ints_are_reused_and_other_values_still_checked():
    assert axpy[4, 32] is axpy[4, 32]
    assert axpy[(2, 2), (8, 4)] is axpy[(2, 2), (8, 4)]
    x = metal.to_device(np.zeros(8, np.float32))
    out = metal.device_array(8, np.float32)
    axpy[4, 32](out, x, 1.0, 2.0)
    for config, match in (((4.0, 32), "int"), ((True, 32), "int"), ((4, 32.0), "int"), ((4, True), "int"),
                          (((4.0,), 32), "integers"), ((4, 32, 0, -1), "sharedmem")):
        with pytest.raises(KernelLaunchError, match=match):
            axpy[config](out, x, 1.0, 2.0)


def test_a_reused_configuration_is_checked_for_every_kernel_it_launches():
    @metal.jit
    def ones(out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = 1.0
    out = metal.device_array(1024, np.float32)
    x = metal.to_device(np.zeros(1024, np.float32))
    launcher = axpy[1, 1024]
    for _ in range(2):   # the same configuration alternating between two kernels
        launcher(out, x, 1.0, 5.0)
        ones[1, 1024](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.ones(1024, np.float32))
    for _ in range(2):   # a cached configuration that is wrong raises every time
        with pytest.raises(KernelLaunchError, match="maximum of 1024"):
            axpy[1, 2048](out, x, 1.0, 0.0)
        with pytest.raises(KernelLaunchError, match="exceeds 2"):
            axpy[2 ** 23, 1024](out, x, 1.0, 0.0)


def test_argument_errors_still_raise_after_the_specialisation_is_known():
    x = metal.to_device(np.arange(8, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    axpy[1, 8](out, x, 1.0, 2.0)
    with pytest.raises(KernelLaunchError, match="argument 2 has type str"):
        axpy[1, 8](out, x, "1", 2.0)
    with pytest.raises(KernelLaunchError, match="argument 3 has type bytes"):
        axpy[1, 8](out, x, 1.0, b"2")
    with pytest.raises(KernelLaunchError, match="does not fit"):
        nothing[1, 1](np.float32(1), 2 ** 64)
    nothing[1, 1](np.float32(1), 2 ** 62)


def test_changing_arrays_views_and_grids_between_launches():
    base = np.arange(32, dtype=np.float32)
    x = metal.to_device(base)
    outs = [metal.device_array(32, np.float32) for _ in range(3)]
    for rep in range(3):
        for k, out in enumerate(outs):
            axpy[1, 32](out, x, np.float32(k), np.float32(rep))
    for k, out in enumerate(outs):
        np.testing.assert_array_equal(out.copy_to_host(), k * base + 2)
    # Views bind the same buffer at other offsets (and negative strides bind the lowest address).
    out = metal.device_array(32, np.float32)
    axpy[1, 32](out, x, np.float32(1), np.float32(0))
    axpy[1, 32](out[8:], x[8:], np.float32(2), np.float32(0))
    axpy[1, 32](out[:8], x[::-1][:8], np.float32(1), np.float32(0))
    expected = base.copy()
    expected[8:] = 2 * base[8:]
    expected[:8] = base[::-1][:8]
    np.testing.assert_array_equal(out.copy_to_host(), expected)
    # A smaller grid after a larger one: only the first 16 elements change.
    axpy[1, 16](out, x, np.float32(0), np.float32(-1))
    expected[:16] = -1
    np.testing.assert_array_equal(out.copy_to_host(), expected)


def test_host_and_device_arrays_alternate_on_one_specialisation():
    x = np.arange(16, dtype=np.float32)
    host_out = np.zeros(16, np.float32)
    dev_out = metal.device_array(16, np.float32)
    dx = metal.to_device(x)
    for rep in range(3):
        axpy[1, 16](host_out, x, np.float32(rep), np.float32(0))    # synchronous, copied back
        np.testing.assert_array_equal(host_out, rep * x)
        axpy[1, 16](dev_out, dx, np.float32(rep), np.float32(1))
        np.testing.assert_array_equal(dev_out.copy_to_host(), rep * x + 1)


def test_dynamic_shared_memory_size_follows_each_launch():
    @metal.jit
    def count(out):
        buf = metal.shared.array(0, np.int32)
        if metal.threadIdx.x == 0:
            out[0] = buf.size
    out = metal.device_array(1, np.int32)
    for nbytes in (16, 64, 4096, 64):
        count[1, 1, 0, nbytes](out)
        assert out.copy_to_host()[0] == nbytes // 4


def test_threads_launching_one_kernel_each_get_their_own_arguments():
    errors = []
    x = metal.to_device(np.arange(256, dtype=np.float32))

    def worker(k):
        try:
            out = metal.device_array(256, np.float32)
            for rep in range(50):
                axpy[1, 256](out, x, np.float32(k), np.float32(rep))
            metal.synchronize()
            np.testing.assert_array_equal(out.copy_to_host(), k * np.arange(256, dtype=np.float32) + 49)
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_profilers_see_every_launch():
    events = []
    x = metal.to_device(np.arange(8, dtype=np.float32))
    out = metal.device_array(8, np.float32)
    axpy[1, 8](out, x, 1.0, 2.0)
    profiling.add_listener(events.append)
    try:
        for _ in range(3):
            axpy[1, 8](out, x, 1.0, 2.0)
    finally:
        profiling.remove_listener(events.append)
    launches = [e for e in events if e.kind == "launch"]
    assert len(launches) == 3 and all(e.name == "axpy" and e.grid == (1, 1, 1) for e in launches)
