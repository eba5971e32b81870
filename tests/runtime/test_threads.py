"""Failures belong to the thread that submitted the failed work: its wait raises them, other threads' waits
do not take them (a thread waiting for all queues, as ``metal.synchronize()`` does, included), and a failure
whose submitter has exited goes to the next wait of any thread, so none is lost."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from numba_metal.errors import MetalRuntimeError
from runtime_helpers import from_buffer, launch

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
KERNELS = HEADER + """
kernel void wild(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    device int* p = (device int*)(0x10 + 0 * i);
    x[i] = *p;
}
kernel void fill(device int* x [[buffer(0)]], constant int& v [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    x[i] = v + int(i);
}
"""
ROUNDS = 200
# 200 faults in one process would put a Mac's GPU in its penalty box: off the real GPU (tests/conftest.py).
pytestmark = pytest.mark.deliberate_faults


def run_threads(device, queues_of, rounds=ROUNDS):
    """Thread 0 launches a faulting kernel each round, threads 1-3 correct ones; each thread then waits for
    the queues queues_of(t) names. Returns each thread's errors and its wrong results."""
    wild = device.compile(KERNELS, "wild")
    fill = device.compile(KERNELS, "fill")
    errors = [[] for _ in range(4)]
    wrong = [0] * 4
    start = threading.Barrier(4)

    def body(t):
        out = device.new_buffer(64 * 4)
        start.wait()
        for r in range(rounds):
            mine, waits = queues_of(t)
            if t == 0:
                launch(mine, wild, [out], (1, 1, 1), (64, 1, 1), label="faulting_kernel")
            else:
                launch(mine, fill, [out], (1, 1, 1), (64, 1, 1), np.int32(1000 * t + r).tobytes(), label=f"good_{t}")
            for q in waits:
                try:
                    q.wait()
                except MetalRuntimeError as e:
                    errors[t].append(str(e))
            if t and from_buffer(out, np.int32, 64).tolist() != [1000 * t + r + i for i in range(64)]:
                wrong[t] += 1

    threads = [threading.Thread(target=body, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(300)
        assert not th.is_alive(), "a thread hung"
    return errors, wrong


def test_each_fault_is_raised_in_the_thread_that_launched_it_with_a_queue_per_thread(device):
    """The issue's case, with a stream per thread: every thread waits for every queue (metal.synchronize)."""
    queues = [device.new_queue() for _ in range(4)]
    try:
        errors, wrong = run_threads(device, lambda t: (queues[t], queues))
    finally:
        for q in queues:
            q.release()
    assert len(errors[0]) == ROUNDS and all("faulting_kernel" in e for e in errors[0])
    assert errors[1:] == [[], [], []], "another thread's wait raised the faulting thread's error"
    assert wrong[1:] == [0, 0, 0]


@pytest.mark.devices("cpu")  # Metal fails the whole command buffer: work after the fault in it never ran
def test_each_fault_is_raised_in_the_thread_that_launched_it_on_a_shared_queue(device):
    shared = device.new_queue()
    try:
        errors, wrong = run_threads(device, lambda t: (shared, [shared]))
    finally:
        shared.release()
    assert len(errors[0]) == ROUNDS and all("faulting_kernel" in e for e in errors[0])
    assert errors[1:] == [[], [], []], "another thread's wait raised the faulting thread's error"
    assert wrong[1:] == [0, 0, 0]


def test_the_fault_of_a_thread_that_exited_goes_to_the_next_wait(device, queue):
    out = device.new_buffer(64 * 4)
    wild = device.compile(KERNELS, "wild")
    t = threading.Thread(target=lambda: launch(queue, wild, [out], (1, 1, 1), (64, 1, 1), label="orphan_kernel"))
    t.start()
    t.join()
    # join() returns before the OS thread has quite finished: the failure is this thread's once it has.
    deadline = time.monotonic() + 10
    with pytest.raises(MetalRuntimeError, match="orphan_kernel"):
        while time.monotonic() < deadline:
            queue.wait()
            time.sleep(0.01)
    queue.wait()  # reported once


def test_a_thread_that_waits_later_still_gets_its_fault_after_others_waited(device, queue):
    out = device.new_buffer(64 * 4)
    wild = device.compile(KERNELS, "wild")
    launched = threading.Event()
    release = threading.Event()
    seen = []

    def faulting():
        launch(queue, wild, [out], (1, 1, 1), (64, 1, 1), label="late_kernel")
        launched.set()
        release.wait(60)
        try:
            queue.wait()
        except MetalRuntimeError as e:
            seen.append(str(e))

    t = threading.Thread(target=faulting)
    t.start()
    launched.wait(60)
    for _ in range(3):
        queue.wait()  # this thread's waits see the work complete and raise nothing
    release.set()
    t.join(60)
    assert len(seen) == 1 and "late_kernel" in seen[0]
