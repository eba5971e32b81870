"""Out-of-order completion across queues with one completion thread shared by them (issue 26 item 14), on the
simulated Metal device: Metal does not promise a completion thread per queue, and command buffers of different
queues finish in any order. With SIM_SHARED_COMPLETION_THREAD the queues made afterwards share one completion
thread that runs handlers in the order the GPU finished their command buffers; numba-metal's handlers never
wait for another queue, so a later queue's work completes, and its wait returns, while an earlier queue's
kernel still runs, and a cross-queue wait still resolves once the producer finishes."""

from __future__ import annotations

import textwrap

import pytest

from conftest import available_kinds, run_isolated

pytestmark = pytest.mark.skipif("metal-sim" not in available_kinds(),
                                reason="the simulated Metal device exists only in builds without Metal")

KERNELS = """#include <metal_stdlib>
using namespace metal;
kernel void add_one(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] + 1; }
kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
"""

CHILD = textwrap.dedent("""
    import numpy as np
    from numba_metal import runtime as rt
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
    dev.sim_control(rt.SIM_SHARED_COMPLETION_THREAD, 1)
    spin, add = dev.compile(KERNELS, "spin"), dev.compile(KERNELS, "add_one")
    flag, buf, later = dev.new_buffer(64), dev.new_buffer(4 * 64), dev.new_buffer(4 * 64)
    qa, qb, qc = dev.new_queue(), dev.new_queue(), dev.new_queue()
    def run(q, pipe, b, n, label):
        return q.dispatch(pipe, [b], [0], [0], None, 1, [], (1, 1, 1), (n, 1, 1), label)
    def ints(b):
        host = np.zeros(64, np.int32)
        b.read(0, host.ctypes.data, host.nbytes)
        return set(host.tolist())
    spinning = run(qa, spin, flag, 1, "spins")
    qa.flush()
    run(qb, add, buf, 64, "adds")
    qb.wait(deadline=60.0)                                  # completes before qa's earlier work
    print("B", ints(buf), "A DONE", qa.query(spinning))
    qc.wait_for(qa, spinning)                               # qc's work waits for the spinning kernel
    run(qc, add, later, 64, "after_spin")
    qc.flush()
    print("C BEFORE", ints(later))
    one = np.ones(1, np.int32)
    flag.write(0, one.ctypes.data, 4)                       # the spinning kernel ends
    qa.wait(deadline=60.0)
    qc.wait(deadline=60.0)
    print("A DONE", qa.query(spinning), "C", ints(later))
""")


def test_a_later_queues_work_completes_while_an_earlier_queues_kernel_runs_on_one_completion_thread():
    out = run_isolated(f"KERNELS = {KERNELS!r}\n" + CHILD)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line for line in out.stdout.splitlines() if line]
    assert lines[0] == "B {1} A DONE False", lines
    assert lines[1] == "C BEFORE {0}", lines
    assert lines[2] == "A DONE True C {1}", lines


THREADS = textwrap.dedent("""
    import os
    from numba_metal import runtime as rt
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
    buf = dev.new_buffer(64)
    def threads_of_four_queues():
        before = len(os.listdir("/proc/self/task"))
        queues = [dev.new_queue() for _ in range(4)]
        for q in queues:
            q.fill(buf, 0, 64, 1)
            q.wait()
        return len(os.listdir("/proc/self/task")) - before, queues
    own, kept = threads_of_four_queues()
    dev.sim_control(rt.SIM_SHARED_COMPLETION_THREAD, 1)
    shared, kept2 = threads_of_four_queues()
    print("THREADS", own, shared)
""")


def test_the_mode_gives_new_queues_one_completion_thread_instead_of_one_each():
    out = run_isolated(THREADS)
    assert out.returncode == 0, out.stdout + out.stderr
    # Four queues: a GPU thread and a completion thread each; in the mode, four GPU threads and one shared.
    assert out.stdout.split() == ["THREADS", "8", "5"], out.stdout
