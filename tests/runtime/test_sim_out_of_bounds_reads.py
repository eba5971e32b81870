"""Out-of-bounds reads that do not fault (issue 26 item 14), on the simulated Metal device: an Apple GPU is
reported to answer an out-of-bounds read with 0 or stale data without faulting (only writes or unmapped pages
fault), so a kernel without debug=True reads past an array's end unreported; debug=True is the way to find it.
SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO puts read-only pages of zeros after the buffers allocated from then on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from numba_metal import runtime as rt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif("metal-sim" not in {d.kind for d in rt.list_devices(include_simulated=True)},
                                reason="the simulated Metal device exists only in builds without Metal")

CHILD = textwrap.dedent("""
    import warnings
    import numpy as np
    from numba_metal import metal, runtime as rt
    from numba_metal.errors import KernelBoundsError, MetalRuntimeError
    warnings.simplefilter("ignore")
    metal.select_device("metal-sim")
    metal.current_context().device.sim_control(rt.SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO, 1)

    def shifted(a, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = a[i + 8]

    def write_past(a):
        i = metal.grid(1)
        if i < a.size:
            a[i + 8] = 1.0

    a = metal.to_device(np.arange(1, 1025, dtype=np.float32))
    out = metal.to_device(np.full(1024, -1, dtype=np.float32))
    metal.jit(shifted)[4, 256](a, out)
    h = out.copy_to_host()
    print("READ", h[:1016].tolist() == list(range(9, 1025)), h[1016:].tolist())
    try:
        metal.jit(shifted, debug=True)[4, 256](a, out)
        metal.synchronize()
        print("DEBUG none")
    except KernelBoundsError as e:
        print("DEBUG", str(e).splitlines()[0])
    try:
        metal.jit(write_past)[4, 256](a)
        metal.synchronize()
        print("WRITE none")
    except MetalRuntimeError as e:
        print("WRITE", type(e).__name__, str(e).splitlines()[0])
""")


def test_an_out_of_bounds_read_answers_zero_unreported_and_debug_finds_it(tmp_path):
    script = tmp_path / "oob_child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    # Without debug=True: the 8 reads past a's end answer 0 and nothing is raised, at the launch or the wait.
    assert lines[0] == "READ True [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]", lines
    # debug=True names the access.
    assert lines[1].startswith("DEBUG "), lines
    assert "index 1024 is out of bounds for axis 0 with size 1024 in array 'a' of kernel shifted()" in lines[1]
    # A write there still faults, as on a GPU.
    assert lines[2].startswith("WRITE MetalRuntimeError kernel 'write_past"), lines
    assert "pageFault" in lines[2]
