"""The one deliberate fault allowed on a real Metal GPU (issue 26 item 10): in a child process, so that the
penalty box, should macOS close it, cannot reach the test session. It records what the device answered (the
MTLCommandBufferError code the backend classified, and whether the next launch worked) as the test's
``metal_error_code`` and ``next_launch`` properties (pytest's junit XML), which on a Mac are the real values.
The other tests that fault on purpose are marked ``deliberate_faults`` and skipped on a Metal GPU."""

from __future__ import annotations

import re
import textwrap

import pytest

from conftest import available_kinds, run_isolated

KINDS = [k for k in ("metal-sim", "metal") if k in available_kinds()]

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from numba_metal import runtime as rt
    from numba_metal.errors import MetalRuntimeError
    KERNELS = ("#include <metal_stdlib>\\nusing namespace metal;\\n"
               "kernel void wild(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
               "{ device int* p = (device int*)(0x10 + 0 * i); x[i] = *p; }\\n"
               "kernel void one(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1; }\\n")
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == sys.argv[1]][0]
    dev = rt.open_device(info.index)
    buf, q = dev.new_buffer(4 * 64), dev.new_queue()
    def run(name):
        q.dispatch(dev.compile(KERNELS, name), [buf], [0], [0], None, 1, [], (1, 1, 1), (64, 1, 1), "the_" + name)
        q.wait()
    try:
        run("wild")
        print("FAULT none")
    except MetalRuntimeError as e:
        print("FAULT", type(e).__name__, str(e).replace("\\n", " "))
    try:
        run("one")
        print("NEXT", "works" if (np.frombuffer(buf.memory(), dtype=np.int32)[:64] == 1).all() else "wrong")
    except MetalRuntimeError as e:
        print("NEXT", type(e).__name__, str(e).replace("\\n", " "))
""")


@pytest.mark.skipif(not KINDS, reason="no Metal device here (the simulated one exists only in builds without Metal)")
@pytest.mark.parametrize("kind", KINDS)
def test_one_fault_in_a_child_process_records_the_error_code(kind, record_property):
    out = run_isolated(f"import sys; sys.argv[1:] = [{kind!r}]\n" + CHILD)
    assert out.returncode == 0, out.stdout + out.stderr
    fault = next(line for line in out.stdout.splitlines() if line.startswith("FAULT "))
    after = next(line for line in out.stdout.splitlines() if line.startswith("NEXT "))
    code = re.search(r"MTLCommandBufferError \w+, code (\d+)", fault)
    record_property("metal_error_code", code.group(1) if code else fault)
    record_property("next_launch", after[5:])
    if kind == "metal-sim":  # the simulator's answer is a page fault, after which the device goes on
        assert "kernel 'the_wild' failed on the GPU" in fault and code and code.group(1) == "3", fault
        assert after == "NEXT works", after
    else:  # a Mac's answer is what it is (an Apple GPU may not fault at all): only that it was classified
        assert fault == "FAULT none" or code or "MetalDeviceLostError" in fault, fault


def test_deliberate_fault_tests_are_skipped_on_a_metal_gpu():
    # What a Mac's session sees (NUMBA_METAL_DEVICE=metal): the marked test is skipped with the reason, not run.
    import os
    import subprocess
    import sys

    from conftest import ROOT
    env = dict(os.environ, NUMBA_METAL_DEVICE="metal")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:msl-lint",
                          "tests/stress/test_stress.py", "-k", "crashing_kernel"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert "1 skipped" in res.stdout and "deliberately faults the GPU" in res.stdout, res.stdout + res.stderr
