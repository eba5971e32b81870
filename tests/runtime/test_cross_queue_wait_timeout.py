"""Issue 26 item 8: Apple documents that a command buffer waiting on an MTLEvent too long fails with
``timeout``. A cross-queue wait (``nm_queue_wait_for``) is encoded on the GPU only once the producer's
work has started (committed, with all earlier work of its queue completed); before that the consumer's
thread is held on the host. Shown on the simulated Metal device, whose event-wait timeout
``NUMBA_METAL_SIM_EVENT_WAIT_TIMEOUT_MS`` shortens to 500 ms, in a child process (the variable is read when
the device is made)."""

from __future__ import annotations

import textwrap

import pytest

from conftest import available_kinds, run_isolated

pytestmark = pytest.mark.skipif("metal-sim" not in available_kinds(),
                                reason="the simulated Metal device exists only in builds without Metal")

PRELUDE = textwrap.dedent("""
    import threading, time
    import numpy as np
    from numba_metal import runtime as rt
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
    SRC = '''#include <metal_stdlib>
    using namespace metal;
    kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
        while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
    }
    kernel void add_one(device const int* src [[buffer(0)]], device int* dst [[buffer(1)]], uint i [[thread_position_in_grid]]) {
        dst[i] = src[i] + 1;
    }
    '''
    spin, add_one = dev.compile(SRC, "spin"), dev.compile(SRC, "add_one")
    flag, a, b, c = dev.new_buffer(4), dev.new_buffer(256), dev.new_buffer(256), dev.new_buffer(256)
    q1, q2 = dev.new_queue(), dev.new_queue()
    def go(buffers, pipe, q):
        return q.dispatch(pipe, buffers, [0] * len(buffers), list(range(len(buffers))), None, 30, [], (1, 1, 1), (64, 1, 1))
    def release_spin_after(seconds):
        t = threading.Timer(seconds, lambda: np.frombuffer(flag.memory(), np.int32).__setitem__(0, 1))
        t.start()
        return t
""")
ENV = {"NUMBA_METAL_SIM_EVENT_WAIT_TIMEOUT_MS": "500"}


def test_a_wait_for_work_that_has_not_started_holds_the_consumer_on_the_host():
    # The producer's queue runs a kernel for 1.5 s; the work waited for sits behind it, committed but not
    # started. Before: the consumer's command buffer waited on the event for longer than the timeout and
    # failed with `timeout` ("timed out waiting for a shared event").
    code = PRELUDE + textwrap.dedent("""
        go([flag], spin, q1)                  # started at once: the queue was idle
        w = go([a, b], add_one, q1)           # behind it: not started
        t = release_spin_after(1.5)
        t0 = time.monotonic()
        q2.wait_for(q1, w)
        held = time.monotonic() - t0
        go([b, c], add_one, q2)
        q2.wait()
        q1.wait()
        t.join()
        print("HELD", round(held, 2), "C", np.frombuffer(c.memory(), np.int32)[:2].tolist())
    """)
    out = run_isolated(code, env=ENV, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    held = float(out.stdout.split("HELD ")[1].split()[0])
    assert held > 0.5, out.stdout      # held on the host until the spin ended
    assert "C [2, 2]" in out.stdout


def test_a_wait_for_work_that_has_started_is_encoded_on_the_gpu_at_once():
    code = PRELUDE + textwrap.dedent("""
        w = go([flag], spin, q1)              # started: the GPU-side wait is safe to encode now
        t0 = time.monotonic()
        q2.wait_for(q1, w)
        held = time.monotonic() - t0
        go([a, c], add_one, q2)
        t = release_spin_after(0.2)
        q2.wait()
        t.join()
        print("HELD", round(held, 2), "C", np.frombuffer(c.memory(), np.int32)[:2].tolist())
    """)
    out = run_isolated(code, env=ENV, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert float(out.stdout.split("HELD ")[1].split()[0]) < 0.2, out.stdout
    assert "C [1, 1]" in out.stdout
