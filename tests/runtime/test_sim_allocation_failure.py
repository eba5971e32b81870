"""An allocation Metal refuses (issue 26 item 14), on the simulated Metal device: makeBuffer answers nil when
Metal cannot allocate the memory, and the simulator does so for the next allocation on request
(SIM_FAIL_NEXT_ALLOCATION). numba-metal turns it into a MetalOutOfMemoryError (also a MemoryError) that says
what to do, never a crash, and the device stays usable."""

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


def test_a_nil_makebuffer_is_an_out_of_memory_error_and_the_device_stays_usable():
    code = textwrap.dedent("""
        import numpy as np
        from numba_metal import metal, runtime as rt
        metal.select_device("metal-sim")
        metal.current_context().device.sim_control(rt.SIM_FAIL_NEXT_ALLOCATION)
        try:
            metal.device_array(1000, dtype=np.float32)
            print("ALLOCATED")
        except MemoryError as e:
            print("REFUSED", type(e).__name__, isinstance(e, metal.MetalRuntimeError), str(e))
        after = metal.to_device(np.arange(8, dtype=np.float32))
        print("AFTER", after.copy_to_host().tolist() == list(range(8)))
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("REFUSED MetalOutOfMemoryError True Metal could not allocate a buffer of 4000 bytes"), lines
    assert "free device arrays no longer needed" in lines[0]
    assert lines[1] == "AFTER True", lines
