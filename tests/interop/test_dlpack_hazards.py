"""Imported MTLBuffers and hazard tracking (issue 26 item 7), on the simulated Metal device: numba-metal orders
its work on a buffer by Metal's hazard tracking (between its blit and compute encoders and between command
buffers), so a DLPack kDLMetal tensor whose MTLBuffer was allocated untracked
(MTLHazardTrackingMode.untracked) is refused with a DLPackError that says why, and a tracked one is used in
place. The simulator allocates the next buffer untracked on request (SIM_UNTRACKED_NEXT_BUFFER), as a library
that orders its own work would."""

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


def test_an_untracked_mtlbuffer_is_refused_and_a_tracked_one_is_used_in_place():
    code = textwrap.dedent("""
        import numpy as np
        from numba_metal import metal, runtime as rt
        from numba_metal.errors import DLPackError
        metal.select_device("metal-sim")
        def exporter(arr):
            class Exporter:                    # only DLPack, as another library's array
                def __dlpack__(self, **kw): return arr.__dlpack__(**kw)
                def __dlpack_device__(self): return arr.__dlpack_device__()
            return Exporter()
        metal.current_context().device.sim_control(rt.SIM_UNTRACKED_NEXT_BUFFER)
        untracked = metal.to_device(np.arange(16, dtype=np.float32))
        tracked = metal.to_device(np.arange(16, dtype=np.float32))
        try:
            metal.from_dlpack(exporter(untracked))
            print("ACCEPTED")
        except DLPackError as e:
            print("REFUSED", str(e).replace("\\n", " "))
        back = metal.from_dlpack(exporter(tracked))
        print("TRACKED", back.buffer.address == tracked.buffer.address, back.copy_to_host().tolist() == list(range(16)))
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("REFUSED the kDLMetal tensor's MTLBuffer cannot be used"), lines
    assert "allocated untracked (MTLHazardTrackingMode.untracked" in lines[0]
    assert "allocate it with hazard tracking" in lines[0]
    assert lines[1] == "TRACKED True True", lines
