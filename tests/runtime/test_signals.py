"""Signals the runtime did not cause pass through it.

The CPU device catches SIGSEGV, SIGBUS, SIGILL and SIGFPE raised by kernel code (a fault fails the dispatch,
the process goes on). A signal sent to the process (``kill``, ``sigqueue``: ``si_code <= 0``) is not a
kernel's fault: it gets the disposition it would have had without numba-metal (the default action kills
the process, an ignored signal is ignored, a handler installed before numba-metal's is called), and
numba-metal's handler stays installed, so a faulting kernel afterwards is still an error, not a crash.
Each case runs in a child process, which may die as it should.
"""

from __future__ import annotations

import signal
import sys

import pytest

from conftest import run_isolated

DEVICES = ("cpu",)  # the CPU engine's signal handlers (the simulated Metal device shares them)

SIGNALS = ["SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL"]

PRELUDE = r'''
import ctypes, os, resource, signal, sys
if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(4, 0)   # PR_SET_DUMPABLE 0: a child killed by a signal leaves no core dump
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
{before}
import numpy as np
from numba_metal import runtime as rt
from numba_metal.errors import MetalRuntimeError
dev = rt.open_device([d for d in rt.list_devices() if d.kind == "cpu"][0].index)
q = dev.new_queue()
HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
ok = dev.compile(HEADER + "kernel void ok(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                 "{ x[i] = int(i) + 1; }", "ok")
wild = dev.compile(HEADER + "kernel void wild(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                   "{ device int* p = (device int*)(0x10 + 0 * i); x[i] = *p; }", "wild")
buf = dev.new_buffer(4 * 64)

def run(pipe):
    q.dispatch(pipe, [buf], [0], [0], None, 1, [], (1, 1, 1), (64, 1, 1))
    q.wait()

def handler_of(signum):
    """The address of the signal's handler (sigaction(2); sa_handler is the first member on Linux and macOS)."""
    old = ctypes.create_string_buffer(512)
    assert ctypes.CDLL(None).sigaction(signum, None, old) == 0
    return int.from_bytes(old.raw[:ctypes.sizeof(ctypes.c_void_p)], sys.byteorder)

def faulting_kernel_is_an_error():
    try:
        run(wild)
    except MetalRuntimeError as e:
        assert "faulted with SIGSEGV" in str(e), str(e)
    else:
        raise AssertionError("the faulting kernel did not fail")
    run(ok)
    out = np.empty(64, np.int32)
    buf.read(0, out.ctypes.data, out.nbytes)
    assert out[63] == 64
'''


def child(body: str, before: str = ""):
    """Runs body after PRELUDE (a CPU device, a queue, kernels); before runs first, before numba-metal
    installs its handlers (at the first queue)."""
    return run_isolated(PRELUDE.replace("{before}", before) + body, env={"PYTHONFAULTHANDLER": ""}, timeout=180)


@pytest.mark.parametrize("name", SIGNALS)
def test_a_signal_sent_to_the_process_takes_its_default_action(device, name):
    """kill -SEGV after a first launch kills the process with that signal, as it would without numba-metal
    (it was swallowed, and numba-metal's handler left uninstalled)."""
    r = child(f"run(ok)\nos.kill(os.getpid(), signal.{name})\nprint('survived', flush=True)\n")
    assert "survived" not in r.stdout, r.stdout + r.stderr
    assert r.returncode == -getattr(signal, name), (r.returncode, r.stderr)


@pytest.mark.parametrize("name", SIGNALS)
def test_an_ignored_signal_stays_ignored_and_kernel_faults_are_still_caught(device, name):
    """numba-metal's handler stays installed (it was replaced by SIG_DFL, so the next kernel fault killed
    the process)."""
    r = child(f"run(ok)\nours = handler_of(signal.{name})\n"
              "assert ours not in (0, 1)\n"
              f"for _ in range(3):\n    os.kill(os.getpid(), signal.{name})\n"
              f"assert handler_of(signal.{name}) == ours\n"
              "faulting_kernel_is_an_error()\nfaulting_kernel_is_an_error()\nprint('ok', flush=True)\n",
              before=f"signal.signal(signal.{name}, signal.SIG_IGN)")
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr)


@pytest.mark.parametrize("name", SIGNALS)
def test_a_handler_installed_before_numba_metal_is_called_and_kernel_faults_are_still_caught(device, name):
    r = child(f"run(ok)\n"
              f"ours = handler_of(signal.{name})\n"
              f"os.kill(os.getpid(), signal.{name})\n"
              f"assert seen == [signal.{name}], seen\n"
              f"assert handler_of(signal.{name}) == ours\n"
              "faulting_kernel_is_an_error()\n"
              f"os.kill(os.getpid(), signal.{name})\n"
              f"assert seen == [signal.{name}] * 2, seen\n"
              "print('ok', flush=True)\n",
              before=f"seen = []\nsignal.signal(signal.{name}, lambda s, f: seen.append(s))")
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sends to each thread with tgkill, a Linux call")
def test_a_signal_sent_while_a_kernel_runs_is_not_taken_for_its_fault(device):
    """A SIGSEGV sent (not raised by an instruction) to a thread running kernel code is the sender's
    business: the handler installed before numba-metal's sees it and the kernel finishes; the dispatch does
    not fail as if the kernel had faulted. The signal is sent to each of the runtime's threads, among them
    the one running the kernel."""
    r = child(r'''
import threading, time
spin = dev.compile(HEADER + """
kernel void spin(device atomic_int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_store_explicit(x, 1, memory_order_relaxed);   // running
    while (atomic_load_explicit(x + 1, memory_order_relaxed) == 0) {}
    atomic_store_explicit(x, 2, memory_order_relaxed);   // told to stop
}""", "spin")
flags = np.zeros(2, np.int32)
buf.write(0, flags.ctypes.data, 8)
q.dispatch(spin, [buf], [0], [0], None, 1, [], (1, 1, 1), (1, 1, 1))
view = np.frombuffer(buf.memory(), np.int32, 2)
while view[0] == 0:
    time.sleep(0.001)
libc = ctypes.CDLL(None)
threads = [int(t) for t in os.listdir("/proc/self/task") if int(t) != threading.get_native_id()]
for _ in range(20):
    for tid in threads:
        assert libc.tgkill(os.getpid(), tid, signal.SIGSEGV) == 0
    time.sleep(0.002)
view[1] = 1
q.wait()
assert view[0] == 2, view
assert seen, "the handler installed before numba-metal's never saw the signal"
print("ok", flush=True)
''', before="seen = []\nsignal.signal(signal.SIGSEGV, lambda s, f: seen.append(s))")
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stdout, r.stderr)
