"""Regression (issue 26 item 3): on Metal, work did not start when it was launched. MetalQueue committed its
open command buffer only at a wait, a flush or the 64th dispatch, so the GPU idled while the host worked,
and a host loop polling memory for a kernel's result hung on Metal while the same program worked on the CPU
device: after a launch and a sleep the command buffer was still uncommitted.

Now a launch commits when its queue has nothing committed and unfinished; launches made while the GPU is
busy gather in the open command buffer, which the completed handler that leaves the queue idle commits; and
a thread inside ``metal.batch()`` (``nm_set_batching``) leaves its work for the flush. Checked on the
simulated Metal device (the Metal backend's own code), through its statistic of command buffers holding
work uncommitted.
"""

import time

import numpy as np
import pytest

from numba_metal import metal, runtime as rt

pytestmark = pytest.mark.skipif("metal-sim" not in {d.kind for d in rt.list_devices(include_simulated=True)},
                                reason="the simulated Metal device exists only in builds without Metal")

MARK = """#include <metal_stdlib>
using namespace metal;
kernel void mark(device uint* out [[buffer(0)]], device const uint* value [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[i] = value[0];
}
"""


@pytest.fixture(scope="module")
def sim():
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
    return dev, dev.compile(MARK, "mark")


def launch_mark(q, pipe, out, value_buf):
    return q.dispatch(pipe, [out, value_buf], [0, 0], [0, 1], None, 2, [], (1, 1, 1), (1, 1, 1))


def value(dev, v):
    b = dev.new_buffer(4)
    b.memory()[:4] = np.uint32(v).tobytes()
    return b


def poll(buf, expected, seconds=10.0):
    """Reads the buffer's first word without any wait or flush until it is `expected` (True) or time is up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if int(np.frombuffer(buf.memory(), np.uint32)[0]) == expected:
            return True
        time.sleep(0.005)
    return False


def test_a_launch_on_an_idle_queue_is_committed_at_once(sim):
    dev, pipe = sim
    q = dev.new_queue()
    out = dev.new_buffer(4)
    before = dev.sim_stats()["uncommitted_work_command_buffers"]   # other tests' queues (normally 0)
    launch_mark(q, pipe, out, value(dev, 5))
    time.sleep(0.2)
    assert dev.sim_stats()["uncommitted_work_command_buffers"] == before
    assert poll(out, 5), "a host loop polling for the kernel's result would hang: the work never started"
    q.wait()
    q.release()


def test_launches_gather_while_the_gpu_is_busy_and_start_when_it_is_done(sim):
    dev, pipe = sim
    q = dev.new_queue()
    first, second = dev.new_buffer(4), dev.new_buffer(4)
    before = dev.sim_stats()
    dev.sim_control(rt.SIM_HOLD_GPU, 1)
    try:
        launch_mark(q, pipe, first, value(dev, 1))     # committed: the queue was idle
        launch_mark(q, pipe, second, value(dev, 2))    # the GPU is busy: it waits in the open command buffer
        launch_mark(q, pipe, second, value(dev, 3))    # ... with this one
        time.sleep(0.1)
        s = dev.sim_stats()
        assert s["uncommitted_work_command_buffers"] == before["uncommitted_work_command_buffers"] + 1
        assert s["uncompleted_command_buffers"] == before["uncompleted_command_buffers"] + 2   # committed + open
    finally:
        dev.sim_control(rt.SIM_HOLD_GPU, 0)
    # No wait, no flush: the completed handler of the first command buffer commits the second.
    assert poll(second, 3)
    assert dev.sim_stats()["uncommitted_work_command_buffers"] == before["uncommitted_work_command_buffers"]
    q.wait()
    q.release()


def test_a_batch_leaves_work_for_its_end(sim):
    dev, pipe = sim
    q = dev.new_queue()
    out = dev.new_buffer(4)
    before = dev.sim_stats()["uncommitted_work_command_buffers"]
    rt.Queue.set_batching(True)
    try:
        launch_mark(q, pipe, out, value(dev, 9))
        time.sleep(0.2)
        s = dev.sim_stats()
        assert s["uncommitted_work_command_buffers"] == before + 1 and s["longest_uncommitted_ns"] >= 150_000_000
    finally:
        rt.Queue.set_batching(False)
    q.flush()
    assert poll(out, 9)
    q.wait()
    q.release()


def test_metal_batch_suppresses_it_and_submits_at_its_end(sim):
    dev, _ = sim

    @metal.jit
    def fill(a, v):
        i = metal.grid(1)
        if i < a.size:
            a[i] = v

    previous = metal.get_current_device().kind
    metal.select_device("metal-sim")
    try:
        d = metal.device_array(64, np.float32)
        metal.synchronize()
        before = dev.sim_stats()["uncommitted_work_command_buffers"]
        with metal.batch():
            fill[1, 64](d, np.float32(4))
            time.sleep(0.1)
            assert dev.sim_stats()["uncommitted_work_command_buffers"] == before + 1
        assert dev.sim_stats()["uncommitted_work_command_buffers"] == before   # flushed as the block ends
        fill[1, 64](d, np.float32(5))
        time.sleep(0.1)
        assert dev.sim_stats()["uncommitted_work_command_buffers"] == before   # outside a batch: started at once
        assert (d.copy_to_host() == 5).all()
    finally:
        metal.synchronize()
        metal.select_device(previous)
