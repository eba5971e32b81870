"""A GPU that refuses the process (issue 26 item 9), on the simulated Metal device: a failed command buffer's
error code is classified (GPUErrors.swift); codes that mean the GPU refuses further work (accessRevoked after
the penalty box, code 14) latch the device as lost, and every later call fails with one MetalDeviceLostError
saying to restart the process, instead of blaming its own kernel; the watchdog is named on a timeout; with
NUMBA_METAL_GPU_DEBUG=1 Metal's encoder execution status names the faulting kernel instead of a guess.

A lost device stays lost for the process (as on a Mac), so those tests run in child processes."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from conftest import available_kinds, run_isolated
from numba_metal import runtime as rt
from numba_metal.errors import MetalDeviceLostError, MetalRuntimeError
from runtime_helpers import from_buffer, launch, to_buffer

DEVICES = ("metal-sim",)
pytestmark = pytest.mark.skipif("metal-sim" not in available_kinds(),
                                reason="the simulated Metal device exists only in builds without Metal; on a Mac "
                                       "`numba-metal doctor --deep` records the real error codes")

KERNELS = """#include <metal_stdlib>
using namespace metal;
kernel void add_one(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] + 1; }
kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
kernel void wild(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    device int* p = (device int*)(0x10 + 0 * i);
    x[i] = *p;
}
"""

CHILD = textwrap.dedent("""
    import numpy as np
    from numba_metal import runtime as rt
    from numba_metal.errors import MetalDeviceLostError, MetalRuntimeError
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
    add = dev.compile(KERNELS, "add_one")
    wild = dev.compile(KERNELS, "wild")
    buf = dev.new_buffer(4 * 64)
    q = dev.new_queue()
    def run(pipe, label, queue=q):
        queue.dispatch(pipe, [buf], [0], [0], None, 1, [], (1, 1, 1), (64, 1, 1), label)
    def outcome(step):
        try:
            step()
            return "ok"
        except MetalDeviceLostError as e:
            return "LOST " + str(e)
        except MetalRuntimeError as e:
            return "FAILED " + str(e)
""")


def child(body: str, env: dict | None = None) -> list[str]:
    out = run_isolated(f"KERNELS = {KERNELS!r}\n" + CHILD + textwrap.dedent(body), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if line]


def test_after_the_penalty_box_every_call_fails_with_one_device_lost_message():
    lines = child("""
        dev.sim_control(rt.SIM_PENALTY_BOX_AFTER, 3)
        for i in range(3):                                  # three faults of the process's own kernel
            run(wild, f"faulty_{i}")
            print("FAULT", outcome(q.wait))
        run(add, "innocent")                                # refused: the penalty box answers accessRevoked
        print("WAIT", outcome(q.wait))
        print("LAUNCH", outcome(lambda: run(add, "later")))
        print("WAIT2", outcome(q.wait))
        print("ALLOC", outcome(lambda: dev.new_buffer(64)))
        print("QUEUE", outcome(dev.new_queue))
        print("COMPILE", outcome(lambda: dev.compile(KERNELS.replace("add_one", "add_two"), "add_two")))
    """)
    faults = [line for line in lines if line.startswith("FAULT")]
    assert len(faults) == 3
    for i, line in enumerate(faults):  # before the penalty box each fault is its own kernel's, not a lost device
        assert line.startswith(f"FAULT FAILED kernel 'faulty_{i}' failed on the GPU"), line
        assert "pageFault, code 3" in line
    lost = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines if not line.startswith("FAULT")}
    assert set(lost) == {"WAIT", "LAUNCH", "WAIT2", "ALLOC", "QUEUE", "COMPILE"}
    messages = set(lost.values())
    assert len(messages) == 1, lost  # one message, the same for every later call
    message = messages.pop()
    assert message.startswith("LOST the GPU refused further work from this process")
    assert "accessRevoked, code 4" in message and "restart the Python process" in message
    assert "kernel 'innocent' failed" not in message  # the innocent kernel is not blamed


def test_code_14_which_swifts_enum_cannot_hold_loses_the_device():
    lines = child("""
        dev.sim_control(rt.SIM_INTERACTIVITY_NEXT_COMMAND_BUFFER)
        run(add, "drawing_time")
        print("WAIT", outcome(q.wait))
        print("LAUNCH", outcome(lambda: run(add, "later")))
    """)
    assert lines[0].startswith("WAIT LOST the GPU refused further work"), lines
    assert "ImpactingInteractivity, code 14" in lines[0] and "kept the display from responding" in lines[0]
    assert lines[1] == lines[0].replace("WAIT", "LAUNCH", 1)


def test_a_timeout_names_the_watchdog_and_does_not_lose_the_device(device, queue):
    pipe = device.compile(KERNELS, "add_one")
    buf = to_buffer(device, np.zeros(64, dtype=np.int32))
    device.sim_control(rt.SIM_WATCHDOG_NEXT_COMMAND_BUFFER)
    launch(queue, pipe, [buf], (1, 1, 1), (64, 1, 1), label="long_one")
    with pytest.raises(MetalRuntimeError) as info:
        queue.wait()
    assert not isinstance(info.value, MetalDeviceLostError)
    assert "kernel 'long_one' failed on the GPU (MTLCommandBufferError timeout, code 2)" in str(info.value)
    assert "macOS's GPU watchdog ended the command buffer" in str(info.value)
    launch(queue, pipe, [buf], (1, 1, 1), (64, 1, 1))  # the device goes on
    queue.wait()
    assert (from_buffer(buf, np.int32, 64) == 1).all()


def test_a_running_dispatch_stopped_by_the_watchdog_is_a_timeout_not_a_fault(device, queue):
    # The simulated GPU's watchdog on a running dispatch (the engine's time limit) answers timeout (code 2), as
    # a GPU's does; it was reported as a page fault, blaming the kernel's memory accesses.
    pipe = device.compile(KERNELS, "spin")
    flag = device.new_buffer(64)
    previous = device.time_limit
    device.set_time_limit(0.2)
    try:
        launch(queue, pipe, [flag], (1, 1, 1), (1, 1, 1), label="spins")
        with pytest.raises(MetalRuntimeError) as info:
            queue.wait()
    finally:
        device.set_time_limit(previous)
    message = str(info.value)
    assert "kernel 'spins' failed on the GPU (MTLCommandBufferError timeout, code 2)" in message, message
    assert "macOS's GPU watchdog ended the command buffer" in message and "ran longer than its time limit" in message
    assert not isinstance(info.value, MetalDeviceLostError)


BATCH = """
    rt.Queue.set_batching(True)                             # three dispatches in one command buffer
    run(add, "first_ok")
    run(wild, "the_faulty_one")
    run(add, "after_it")
    rt.Queue.set_batching(False)
    print("WAIT", outcome(q.wait))
"""


@pytest.mark.parametrize("debug", ["1", "0"])
def test_gpu_debug_mode_names_the_faulting_kernel_instead_of_guessing(debug):
    lines = child(BATCH, env={"NUMBA_METAL_GPU_DEBUG": debug})
    if debug == "1":
        assert lines[0].startswith("WAIT FAILED kernel 'the_faulty_one' failed on the GPU (named by Metal's encoder "
                                   "execution status)"), lines
    else:  # without the encoders' execution status Metal does not say which: all are named, none blamed
        assert lines[0].startswith("WAIT FAILED one of the kernels 'first_ok', 'the_faulty_one', 'after_it' of a command "
                                   "buffer failed on the GPU (Metal does not say which; NUMBA_METAL_GPU_DEBUG=1 names "
                                   "it)"), lines


PARTIAL = """
    other = dev.new_buffer(4 * 64)
    rt.Queue.set_batching(True)                             # two dispatches in one command buffer
    run(add, "writes_buf")
    q.dispatch(add, [other], [0], [0], None, 1, [], (1, 1, 1), (64, 1, 1), "writes_other")
    dev.sim_control(rt.SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER, 2)
    rt.Queue.set_batching(False)
    print("LAUNCHED")                                       # no error before the wait
    print("WAIT", outcome(q.wait))
    for name, b in (("BUF", buf), ("OTHER", other)):
        host = np.zeros(64, np.int32)
        b.read(0, host.ctypes.data, host.nbytes)
        print(name, set(host.tolist()))
"""


@pytest.mark.parametrize("debug", ["1", "0"])
def test_a_fault_after_part_of_a_command_buffer_ran_keeps_the_earlier_results(debug):
    # A GPU fault in the second dispatch of a command buffer (issue 26 item 14): the first dispatch's results
    # are written, the second's are not, the error is raised at the wait and never blames the first kernel.
    lines = child(PARTIAL, env={"NUMBA_METAL_GPU_DEBUG": debug})
    assert lines[0] == "LAUNCHED", lines
    if debug == "1":
        assert lines[1].startswith("WAIT FAILED kernel 'writes_other' failed on the GPU (named by Metal's encoder "
                                   "execution status) (MTLCommandBufferError pageFault, code 3)"), lines
    else:
        assert lines[1].startswith("WAIT FAILED one of the kernels 'writes_buf', 'writes_other' of a command buffer "
                                   "failed on the GPU"), lines
    assert lines[2] == "BUF {1}", lines                     # the first kernel ran
    assert lines[3] == "OTHER {0}", lines                   # the faulting one wrote nothing
