"""Waits that cannot hang a process: a wait is interrupted by Ctrl-C (KeyboardInterrupt) at once, a queue's
unfinished work can be cancelled, a dispatch can be given a time limit, and neither releasing a queue nor
leaving the interpreter waits for a kernel that never ends.

The kernels that never end spin on an atomic load: a loop without side effects may be deleted by the
compiler (C++'s forward-progress rule), an atomic access is a side effect.
"""

from __future__ import annotations

import json
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from numba_metal.errors import MetalRuntimeError, UnsupportedPlatformError
from conftest import run_isolated
from runtime_helpers import from_buffer, launch

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
KERNELS = HEADER + """
kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
kernel void spin_at_barrier(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    threadgroup_barrier(mem_flags::mem_device);
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
kernel void spin_announced(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_store_explicit(flag + 1, 1, memory_order_relaxed);
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
kernel void ok(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = int(i) + 7; }
"""
CPU_ENGINE = pytest.mark.devices("cpu", "metal-sim")  # the devices whose kernels run on the CPU engine

# A child process: the device of kind KIND, the kernels above, helpers.
CHILD = textwrap.dedent('''
    import json, os, signal, sys, threading, time
    import numpy as np
    from numba_metal import runtime as rt
    KIND = sys.argv[1]
    dev = rt.open_device([d for d in rt.list_devices(include_simulated=True) if d.kind == KIND][0].index)
    SRC = {src!r}
    spin, ok = dev.compile(SRC, "spin"), dev.compile(SRC, "ok")
    flag, out = dev.new_buffer(4), dev.new_buffer(64 * 4)
    def run_ok(q):
        q.dispatch(ok, [out], [0], [0], None, 31, [], (1, 1, 1), (8, 1, 1))
        q.wait()
        return np.frombuffer(out.memory(), np.int32)[:8].tolist() == [i + 7 for i in range(8)]
''').format(src=KERNELS)


def child(body: str, kind: str, env=None, timeout=90):
    code = CHILD + textwrap.dedent(body)
    return run_isolated(code.replace("sys.argv[1]", repr(kind)), env=env, timeout=timeout)


def report(result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def spin_forever(device, queue, name="spin", label=None):
    flag = device.new_buffer(8)   # [0]: the flag the kernel waits for; [1]: set by spin_announced once running
    launch(queue, device.compile(KERNELS, name), [flag], (4, 1, 1), (32, 1, 1), label=label)
    return flag


def runs_ok(device, queue) -> bool:
    out = device.new_buffer(64 * 4)
    launch(queue, device.compile(KERNELS, "ok"), [out], (1, 1, 1), (8, 1, 1))
    queue.wait()
    return from_buffer(out, np.int32, 8).tolist() == [i + 7 for i in range(8)]


def test_ctrl_c_interrupts_a_wait_for_a_kernel_that_never_ends(device):
    result = child('''
        # Ctrl-C as an interactive Python has it: a test run started in the background (a shell's `cmd &`)
        # inherits SIGINT ignored, and the interpreter then installs no KeyboardInterrupt handler.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        q = dev.new_queue()
        q.dispatch(spin, [flag], [0], [0], None, 31, [], (4, 1, 1), (32, 1, 1))
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        sent = time.monotonic() + 0.5
        notes = []
        try:
            q.wait()
            outcome = "returned"
        except KeyboardInterrupt as e:
            outcome, notes = "interrupted", getattr(e, "__notes__", [])
        late = time.monotonic() - sent
        # The CPU device cancelled the queue's work: the same queue runs new work. A GPU cannot stop work
        # it was given: its queue waits for it still, but the device's other queues run.
        usable = run_ok(q) if KIND == "cpu" else run_ok(dev.new_queue())
        print(json.dumps({"outcome": outcome, "late": late, "usable": usable, "notes": notes}))
    ''', device.info.kind)
    r = report(result)
    assert r["outcome"] == "interrupted" and r["usable"]
    assert r["late"] < 5, f"KeyboardInterrupt came {r['late']:.1f} s after Ctrl-C"
    if device.info.kind != "cpu" and sys.version_info >= (3, 11):  # the note says what became of the work
        assert any("cannot stop work it was given" in n for n in r["notes"]), r["notes"]


def test_interpreter_exit_does_not_wait_for_a_kernel_that_never_ends(device):
    result = child('''
        q = dev.new_queue()
        q.dispatch(spin, [flag], [0], [0], None, 31, [], (4, 1, 1), (32, 1, 1))
        q.flush()
        print(json.dumps({"exiting": True}))
    ''', device.info.kind, timeout=60)
    assert report(result)["exiting"]


def test_releasing_a_queue_does_not_wait_for_its_work(device):
    result = child('''
        q = dev.new_queue()
        q.dispatch(spin, [flag], [0], [0], None, 31, [], (4, 1, 1), (32, 1, 1))
        t0 = time.monotonic()
        q.release()
        took = time.monotonic() - t0
        print(json.dumps({"took": took, "usable": run_ok(dev.new_queue())}))
    ''', device.info.kind, timeout=60)
    r = report(result)
    assert r["took"] < 1 and r["usable"]


@pytest.mark.devices("cpu")
def test_cancel_stops_the_running_kernel_and_tells_the_other_submitters(device, queue):
    errors, flags = [], []
    launched = threading.Event()

    def other_thread():
        flags.append(spin_forever(device, queue, "spin_announced", label="other_threads_kernel"))
        launched.set()
        try:
            queue.wait()
        except MetalRuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=other_thread)
    t.start()
    assert launched.wait(60)
    deadline = time.monotonic() + 60   # cancel only once the kernel runs: a loaded machine may start it late
    while not from_buffer(flags[0], np.int32, 2)[1] and time.monotonic() < deadline:
        time.sleep(0.001)
    assert from_buffer(flags[0], np.int32, 2)[1], "the spinning kernel never started"
    out = device.new_buffer(64 * 4)
    launch(queue, device.compile(KERNELS, "ok"), [out], (1, 1, 1), (8, 1, 1), label="queued_behind")
    t0 = time.monotonic()
    assert queue.cancel() is True
    assert time.monotonic() - t0 < 5
    t.join(60)
    assert len(errors) == 1 and "'other_threads_kernel' was cancelled while it ran" in errors[0]
    queue.wait()  # the canceller's own cancelled work is not reported to it
    assert not from_buffer(out, np.int32, 8).any(), "work queued behind the cancelled kernel ran"
    assert runs_ok(device, queue)


@pytest.mark.devices("metal-sim")
def test_a_gpu_queue_cannot_be_cancelled_and_stays_usable(device, queue):
    assert queue.cancel() is False
    assert runs_ok(device, queue)


@CPU_ENGINE
@pytest.mark.parametrize("kernel", ["spin", "spin_at_barrier"])  # the plain loop, and work-items as fibers
def test_a_dispatch_over_the_time_limit_fails_naming_the_kernel(device, queue, kernel):
    assert device.time_limit is None
    device.set_time_limit(0.3)
    try:
        assert device.time_limit == pytest.approx(0.3)
        t0 = time.monotonic()
        spin_forever(device, queue, kernel, label="runaway_kernel")
        with pytest.raises(MetalRuntimeError, match=r"'runaway_kernel'.* ran longer than its time limit of 0\.300 s"):
            queue.wait()
        assert time.monotonic() - t0 < 10
        assert runs_ok(device, queue)
    finally:
        device.set_time_limit(None)
    assert device.time_limit is None


@CPU_ENGINE
def test_the_time_limit_comes_from_the_environment(device):
    result = child('''
        q = dev.new_queue()
        q.dispatch(spin, [flag], [0], [0], None, 31, [], (4, 1, 1), (32, 1, 1), label="env_limited")
        try:
            q.wait()
            error = None
        except Exception as e:
            error = str(e)
        print(json.dumps({"limit": dev.time_limit, "error": error, "usable": run_ok(q)}))
    ''', device.info.kind, env={"NUMBA_METAL_CPU_TIME_LIMIT_MS": "250"})
    r = report(result)
    assert r["limit"] == pytest.approx(0.25) and "'env_limited'" in r["error"] and "0.250 s" in r["error"]
    assert r["usable"]


def test_a_bad_time_limit_is_refused(device):
    with pytest.raises(MetalRuntimeError, match="seconds"):
        device.set_time_limit(-1)
    if device.info.kind == "metal":
        with pytest.raises(UnsupportedPlatformError, match="watchdog"):
            device.set_time_limit(1.0)
