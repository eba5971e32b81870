"""Regression (issue 26 item 2): ``runtime.Buffer.release()`` dropped the owner of wrapped host memory (the
NumPy array, the DLPack tensor) at once, while work using the memory could still be queued (on Metal, in an
uncommitted or unfinished command buffer): the kernel's writes would land in freed memory.

Now the runtime counts the queued work holding a wrapped buffer (``nm_buffer_in_use``), and a released
wrapped buffer keeps its owner until that work completes (``Device.reap`` at every wait). The kernel here
waits for the host to open a gate, so its work is still queued when the buffer is released; the owner's
finalizer records what the memory held when the owner was let go: the kernel's result, not zeros.
"""

import gc
import mmap
import weakref

import numpy as np
import pytest

from numba_metal import runtime as rt

GATE = """#include <metal_stdlib>
using namespace metal;
kernel void gated(device atomic_uint* gate [[buffer(0)]], device uint* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(gate, memory_order_relaxed) == 0u) {}
    out[i] = 7u;
}
"""


class Owner:
    """What a wrapped buffer keeps alive (a stand-in for a NumPy array or a DLPack tensor)."""


@pytest.fixture(params=["cpu", "metal-sim"])
def device(request):
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == request.param]
    if not info:
        pytest.skip(f"this build has no {request.param} device")
    return rt.open_device(info[0].index)


def test_the_owner_of_wrapped_memory_outlives_the_work_using_it(device):
    page = device.info.page_size
    memory = np.frombuffer(mmap.mmap(-1, page), np.uint32)
    seen = []
    owner = Owner()
    weakref.finalize(owner, lambda m: seen.append(int(m[0])), memory)   # reads the memory as the owner goes
    pipe = device.compile(GATE, "gated")
    q = device.new_queue()
    gate = device.new_buffer(4)
    buf = device.wrap_buffer(memory.ctypes.data, page, owner)
    del owner
    q.dispatch(pipe, [gate, buf], [0, 0], [0, 1], None, 2, [], (1, 1, 1), (1, 1, 1))
    assert buf.in_use()
    buf.release()
    gc.collect()
    assert seen == [], "the owner was dropped while queued work still used its memory"
    assert device.deferred_releases >= 1
    gate.memory()[:4] = np.uint32(1).tobytes()
    q.wait()
    gc.collect()
    assert seen == [7], "the owner must be let go once the work completed, after the kernel wrote"
    assert device.deferred_releases == 0
    q.release()


def test_memory_the_device_allocated_is_never_in_use_for_the_caller(device):
    q = device.new_queue()
    b = device.new_buffer(64)
    q.fill(b, 0, 64, 1)
    assert not b.in_use()   # its memory is the device's: the runtime keeps it for the work
    q.wait()
    b.release()
    q.release()


@pytest.mark.skipif("metal-sim" not in {d.kind for d in rt.list_devices(include_simulated=True)},
                    reason="the simulated Metal device exists only in builds without Metal")
def test_an_array_used_in_place_by_metal_mapped_outlives_the_launch_using_it():
    # The host API's path: metal.mapped() uses an mmap'd NumPy array in place; the block ends and the program
    # drops the array and the device array while the kernel still waits for the (held) GPU.
    from numba_metal import metal

    @metal.jit
    def put(a, v):
        i = metal.grid(1)
        if i < a.size:
            a[i] = v

    previous = metal.get_current_device().kind
    metal.select_device("metal-sim")
    dev = rt.open_device([d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0].index)
    try:
        memory = mmap.mmap(-1, mmap.PAGESIZE)
        ary = np.frombuffer(memory, np.uint32)
        seen = []
        weakref.finalize(ary, lambda m: seen.append(int(np.frombuffer(m, np.uint32)[0])), memory)
        put[1, 32](metal.to_device(np.zeros(32, np.uint32)), np.uint32(0))   # compile outside the hold
        metal.synchronize()
        dev.sim_control(rt.SIM_HOLD_GPU, 1)
        try:
            with metal.mapped(ary) as d:
                assert d.buffer.address == ary.ctypes.data   # in place
                put[1, 32](d, np.uint32(7))
            del d, ary
            metal.current_context().deallocations.clear()   # drops the kernel's last bindings: nothing else holds it
            gc.collect()
            assert seen == [], "the array was let go while the launch using its memory was still queued"
        finally:
            dev.sim_control(rt.SIM_HOLD_GPU, 0)
        metal.synchronize()
        gc.collect()
        assert seen == [7]
    finally:
        metal.select_device(previous)
