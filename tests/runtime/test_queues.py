"""Buffers and queues: wrapped host memory, lifetime of released buffers, ordering, markers, waits, timestamps."""

from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from numba_metal import runtime as rt
from numba_metal.errors import MetalRuntimeError
from runtime_helpers import from_buffer, launch, pack, to_buffer

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
SCALE = HEADER + """
kernel void scale(device float* x [[buffer(0)]], constant float& k [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * k;
}
"""
SLOW_ADD = HEADER + """
kernel void slow_add(device const int* src [[buffer(0)]], device int* dst [[buffer(1)]], constant int& spin [[buffer(2)]],
                     uint i [[thread_position_in_grid]]) {
    int acc = 0;
    for (int s = 0; s < spin; ++s) acc += (s ^ (int)i) & 1;
    dst[i] = src[i] + 1 + acc * 0;
}
"""


def test_new_buffer_is_zero_filled_and_zero_length_works(device):
    b = device.new_buffer(1 << 20)
    assert not from_buffer(b, np.uint8, 1 << 20).any()
    empty = device.new_buffer(0)
    assert empty.nbytes == 0 and empty.address != 0
    empty.release()
    empty.release()  # idempotent


def test_wrapped_page_aligned_memory_is_shared_without_copies(device, queue):
    page = device.info.page_size
    m = mmap.mmap(-1, 4 * page)
    host = np.frombuffer(m, dtype=np.float32)
    address = ctypes.addressof(ctypes.c_char.from_buffer(m))
    buf = device.wrap_buffer(address, len(m), owner=m)
    assert buf.address == address
    host[:] = np.arange(host.size, dtype=np.float32)  # host writes after wrapping are seen by the kernel
    launch(queue, device.compile(SCALE, "scale"), [buf], (host.size // 256, 1, 1), (256, 1, 1), pack("f", 3.0))
    queue.wait()
    np.testing.assert_array_equal(host, np.arange(host.size, dtype=np.float32) * 3)  # kernel writes seen by the host
    buf.release()
    del host


def test_wrap_refuses_unaligned_memory(device):
    arr = np.zeros(4096 + 16, dtype=np.uint8)
    address = arr.ctypes.data
    if address % device.info.page_size == 0:
        address += 8
    with pytest.raises(MetalRuntimeError, match="not aligned to the page size"):
        device.wrap_buffer(address, 64, owner=arr)


def test_released_buffers_stay_valid_while_in_flight(device, queue):
    n = 1 << 16
    pipe = device.compile(SLOW_ADD, "slow_add")
    src = to_buffer(device, np.arange(n, dtype=np.int32))
    dst = device.new_buffer(4 * n)
    keep = device.new_buffer(4 * n)
    launch(queue, pipe, [src, dst], (n // 256, 1, 1), (256, 1, 1), pack("i", 200))
    queue.copy(dst, 0, keep, 0, 4 * n)
    src.release()
    dst.release()
    import gc
    gc.collect()
    queue.wait()
    np.testing.assert_array_equal(from_buffer(keep, np.int32, n), np.arange(n, dtype=np.int32) + 1)


def test_copy_fill_marker_run_in_order(device, queue):
    a, b = device.new_buffer(4096), device.new_buffer(4096)
    f = queue.fill(a, 0, 4096, 7)
    c = queue.copy(a, 0, b, 1024, 1024)
    f2 = queue.fill(a, 0, 16, 9)
    m = queue.marker()
    assert f < c < f2 < m
    queue.wait()
    assert all(queue.query(i) for i in (f, c, f2, m))
    got = from_buffer(b, np.uint8, 4096)
    assert (got[:1024] == 0).all() and (got[1024:2048] == 7).all() and (got[2048:] == 0).all()
    assert (from_buffer(a, np.uint8, 16) == 9).all()
    with pytest.raises(MetalRuntimeError, match="outside the buffer"):
        queue.copy(a, 4000, b, 0, 200)


def test_wait_for_orders_work_across_queues(device):
    n = 1 << 16
    q1, q2 = device.new_queue(), device.new_queue()
    pipe = device.compile(SLOW_ADD, "slow_add")
    x = to_buffer(device, np.zeros(n, dtype=np.int32))
    y = device.new_buffer(4 * n)
    z = device.new_buffer(4 * n)
    w1 = launch(q1, pipe, [x, y], (n // 256, 1, 1), (256, 1, 1), pack("i", 400))  # y = 1
    q2.wait_for(q1, w1)
    launch(q2, pipe, [y, z], (n // 256, 1, 1), (256, 1, 1), pack("i", 0))  # z = y + 1 = 2
    q2.wait()
    assert q1.query(w1)
    assert (from_buffer(z, np.int32, n) == 2).all()
    q1.release()
    q2.release()


def test_timestamps_are_ordered_and_in_now_ns_base(device, queue):
    pipe = device.compile(SCALE, "scale")
    buf = device.new_buffer(4 * 1024)
    t0 = rt.now_ns()
    ids = [launch(queue, pipe, [buf], (4, 1, 1), (256, 1, 1), pack("f", 1.0)) for _ in range(5)]
    queue.wait()
    t1 = rt.now_ns()
    stamps = [queue.timestamps(i) for i in ids]
    for (s, e) in stamps:
        assert t0 <= s <= e <= t1
    # In order: later work starts and ends no earlier (on Metal, work of one command buffer shares its times).
    for (s0, e0), (s1, e1) in zip(stamps, stamps[1:]):
        assert s0 <= s1 and e0 <= e1
    with pytest.raises(MetalRuntimeError, match="never issued"):
        queue.timestamps(ids[-1] + 100)


def test_many_queued_dispatches_before_one_wait(device, queue):
    src = HEADER + """
kernel void inc(device atomic_uint* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(c, 1u, memory_order_relaxed);
}"""
    counter = device.new_buffer(4)
    plan = rt.DispatchPlan(device.compile(src, "inc"), [0], 31, 0)
    plan.set_buffer(0, counter, 0)
    plan.set_grid((1, 1, 1), (1, 1, 1))
    n = 100_000
    last = 0
    for _ in range(n):
        last = queue.submit(plan, 0)
    queue.wait()
    assert from_buffer(counter, np.uint32, 1)[0] == n
    assert queue.query(last)


def test_dispatch_plan_argument_block(device, queue):
    import struct
    plan = rt.DispatchPlan(device.compile(SCALE, "scale"), [0], 1, 16, label="scaled")
    buf = to_buffer(device, np.ones(256, dtype=np.float32))
    plan.set_buffer(0, buf, 0)
    plan.set_grid((1, 1, 1), (256, 1, 1))
    for k in (2.0, 5.0):
        struct.pack_into("f", plan.arg_view, 0, k)
        queue.submit(plan, 4)
    queue.wait()
    assert (from_buffer(buf, np.float32, 256) == 10.0).all()
    stats = device.stats()
    assert stats["live_buffers"] >= 1 and stats["dispatches"] >= 2


def test_query_of_work_id_zero_means_everything_issued(device, queue):
    assert queue.query(0)                      # nothing issued yet on a fresh queue counts as done
    a = device.new_buffer(64)
    b = device.new_buffer(64)
    queue.copy(a, 0, b, 0, 64)
    queue.wait()
    assert queue.query(0)
