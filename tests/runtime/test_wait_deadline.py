"""Issue 26 item 11: a runaway kernel cannot be bounded on Metal (the GPU cannot stop work it was given), so a
wait takes a host-side deadline (``NUMBA_METAL_WAIT_DEADLINE`` in the host layer, ``Queue.wait(deadline)`` in
the binding). On the Metal backend (here on the simulated device, its GPU held so that the work never
finishes) a wait past the deadline raises "still running after N s; the GPU cannot stop it" and the queue
is unusable from then on; on the CPU device the work is cancelled and the queue goes on."""

from __future__ import annotations

import textwrap
import time

import numpy as np
import pytest

from conftest import available_kinds, run_isolated
from numba_metal import runtime as rt
from numba_metal.errors import MetalRuntimeError, NumbaMetalError
from runtime_helpers import from_buffer, launch

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
KERNELS = HEADER + """
kernel void spin(device atomic_int* flag [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    while (atomic_load_explicit(flag, memory_order_relaxed) == 0) {}
}
kernel void ok(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = int(i) + 7; }
"""
SIM = pytest.mark.skipif("metal-sim" not in available_kinds(),
                         reason="the simulated Metal device exists only in builds without Metal")
STUCK = r"still running after 0\.3 s.*the GPU cannot stop it.*unusable"


@SIM
@pytest.mark.devices("metal-sim")
def test_a_wait_past_its_deadline_on_metal_raises_and_the_stream_stays_unusable(device):
    pipe = device.compile(KERNELS, "ok")
    q, other = device.new_queue(), device.new_queue()
    out = device.new_buffer(4 * 64)
    device.sim_control(rt.SIM_HOLD_GPU, 1)       # the work never finishes while the GPU is held
    try:
        launch(q, pipe, [out], (1, 1, 1), (64, 1, 1))
        t0 = time.monotonic()
        with pytest.raises(MetalRuntimeError, match=STUCK) as caught:
            q.wait(deadline=0.3)
        assert 0.3 <= time.monotonic() - t0 < 5
        assert isinstance(caught.value, NumbaMetalError)
        # Every later use of the stream fails with the same message, not a hang.
        with pytest.raises(MetalRuntimeError, match=STUCK):
            launch(q, pipe, [out], (1, 1, 1), (64, 1, 1))
        with pytest.raises(MetalRuntimeError, match=STUCK):
            q.wait()
        with pytest.raises(MetalRuntimeError, match=STUCK):
            q.copy(out, 0, out, 128, 4)
        with pytest.raises(MetalRuntimeError, match=STUCK):
            other.wait_for(q, 1)
    finally:
        device.sim_control(rt.SIM_HOLD_GPU, 0)
    # Another stream goes on.
    launch(other, pipe, [out], (1, 1, 1), (64, 1, 1))
    other.wait(deadline=10)
    assert list(from_buffer(out, np.int32, 64)) == [i + 7 for i in range(64)]
    other.release()
    q.release()


@SIM
@pytest.mark.devices("metal-sim")
def test_a_wait_within_its_deadline_returns(device):
    pipe = device.compile(KERNELS, "ok")
    q = device.new_queue()
    out = device.new_buffer(4 * 64)
    launch(q, pipe, [out], (1, 1, 1), (64, 1, 1))
    q.wait(deadline=30)
    assert from_buffer(out, np.int32, 2).tolist() == [7, 8]
    q.release()


@pytest.mark.devices("cpu")
def test_on_the_cpu_device_the_deadline_cancels_the_work_and_the_queue_goes_on(device):
    spin, ok = device.compile(KERNELS, "spin"), device.compile(KERNELS, "ok")
    q = device.new_queue()
    flag, out = device.new_buffer(4), device.new_buffer(4 * 64)
    launch(q, spin, [flag], (1, 1, 1), (1, 1, 1))
    with pytest.raises(MetalRuntimeError, match=r"still running after 0\.3 s.*was cancelled"):
        q.wait(deadline=0.3)
    launch(q, ok, [out], (1, 1, 1), (64, 1, 1))
    q.wait()
    assert from_buffer(out, np.int32, 1)[0] == 7
    q.release()


@SIM
def test_numba_metal_wait_deadline_bounds_synchronize_on_the_simulated_metal_device():
    # The host layer reads the variable at each wait; the stream stays unusable, the default stream goes on.
    code = textwrap.dedent("""
        import numpy as np
        from numba_metal import metal, runtime as rt
        from numba_metal.errors import MetalRuntimeError

        @metal.jit
        def fill(a):
            i = metal.grid(1)
            if i < a.size:
                a[i] = i

        d = metal.device_array(64, dtype=np.int32)
        s = metal.stream()
        dev = metal.current_context().device
        dev.sim_control(rt.SIM_HOLD_GPU, 1)
        fill[1, 64, s](d)
        try:
            s.synchronize()
        except MetalRuntimeError as e:
            print("FIRST", e)
        try:
            fill[1, 64, s](d)
        except MetalRuntimeError as e:
            print("LATER", e)
        try:
            d.copy_to_host()    # the stuck kernel may still write d: the read must not return
        except MetalRuntimeError as e:
            print("READ", e)
        dev.sim_control(rt.SIM_HOLD_GPU, 0)
        import time
        for _ in range(100):   # the released work finishes soon; until then every wait for all streams raises
            try:
                metal.synchronize()
                break
            except MetalRuntimeError:
                time.sleep(0.05)
        fill[1, 64](d)
        metal.synchronize()    # waits for every stream but the unusable one, whose work has finished
        print("DEFAULT", d.copy_to_host()[:3].tolist())
    """)
    out = run_isolated(code, env={"NUMBA_METAL_DEVICE": "metal-sim", "NUMBA_METAL_WAIT_DEADLINE": "0.3"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FIRST stream work still running after 0.3 s" in out.stdout and "the GPU cannot stop it" in out.stdout
    assert "LATER stream work still running after 0.3 s" in out.stdout
    assert "READ stream work still running after 0.3 s" in out.stdout
    assert "DEFAULT [0, 1, 2]" in out.stdout


@pytest.mark.parametrize("text", ["soon", "-1", "nan"])
def test_an_invalid_wait_deadline_warns_and_means_none(monkeypatch, text):
    from numba_metal.errors import NumbaMetalWarning
    from numba_metal.host import settings
    monkeypatch.setenv("NUMBA_METAL_WAIT_DEADLINE", text)
    with pytest.warns(NumbaMetalWarning, match=f"NUMBA_METAL_WAIT_DEADLINE='{text}' is not a number from 0 to 1e"):
        assert settings.wait_deadline() is None
    monkeypatch.setenv("NUMBA_METAL_WAIT_DEADLINE", "2.5")
    assert settings.wait_deadline() == 2.5
