"""The Metal backend's own code (MetalDevice, MetalQueue) on the simulated Metal device: each known way it
could go wrong on a Mac, through Metal's documented behaviour as the simulator models it (64 uncompleted
command buffers per queue, completion handlers on another thread, autorelease pools, failed command
buffers that never run their encoded signals, the GPU watchdog, device families).

Tests that could hang or abort the process when the backend is wrong run in a child process."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from conftest import ROOT, available_kinds, run_isolated
from numba_metal import runtime as rt
from numba_metal.errors import MetalRuntimeError
from runtime_helpers import from_buffer, launch, to_buffer

DEVICES = ("metal-sim",)
pytestmark = pytest.mark.skipif("metal-sim" not in available_kinds(),
                                reason="the simulated Metal device exists only in builds without Metal; on a Mac "
                                       "these paths run on the GPU itself (NUMBA_METAL_DEVICE=metal)")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
COUNT = HEADER + """
kernel void count(device atomic_uint* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(c, 1u, memory_order_relaxed);
}
"""
ADD_ONE = HEADER + """
kernel void add_one(device const int* src [[buffer(0)]], device int* dst [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    dst[i] = src[i] + 1;
}
"""
CHILD_PRELUDE = textwrap.dedent("""
    import os, sys, threading, time
    import numpy as np
    from numba_metal import runtime as rt
    info = [d for d in rt.list_devices(include_simulated=True) if d.kind == "metal-sim"][0]
    dev = rt.open_device(info.index)
""")


def test_a_queue_stops_at_63_committed_command_buffers_and_never_deadlocks():
    # The GPU is held while a thread commits 200 command buffers: the queue must stop at 63 committed ones
    # (makeCommandBuffer would block at 64), and once the GPU resumes, completion handlers must not need a
    # lock the blocked thread holds.
    code = CHILD_PRELUDE + textwrap.dedent(f"""
        p = dev.compile({COUNT!r}, "count")
        q = dev.new_queue()
        c = dev.new_buffer(4)
        dev.sim_control(rt.SIM_HOLD_GPU, 1)
        def submit():
            for _ in range(200):
                q.dispatch(p, [c], [0], [0], None, 31, [], (1, 1, 1), (1, 1, 1))
                q.flush()
        t = threading.Thread(target=submit, daemon=True)
        t.start()
        deadline = time.time() + 30
        while dev.sim_stats()["uncompleted_command_buffers"] < 63 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        s = dev.sim_stats()
        print("HELD", s["uncompleted_command_buffers"], s["peak_uncompleted_command_buffers"], t.is_alive(), flush=True)
        dev.sim_control(rt.SIM_HOLD_GPU, 0)
        t.join(30)
        if t.is_alive():
            print("DEADLOCK", flush=True)
            os._exit(3)
        q.wait()
        print("COUNT", int(np.frombuffer(c.memory(), dtype=np.uint32)[0]), dev.sim_stats()["peak_uncompleted_command_buffers"])
    """)
    out = run_isolated(code, timeout=120)
    assert "DEADLOCK" not in out.stdout, out.stdout + out.stderr
    assert out.returncode == 0, out.stdout + out.stderr
    held = out.stdout.split("HELD ")[1].split()
    assert held[0] == "63" and held[2] == "True", out.stdout  # stopped short of Metal's 64, the submitter waiting
    # Once the GPU runs again the peak may touch 64 for a moment: the simulated queue frees a buffer's slot
    # only after its completed handlers return (Apple does not order the two), and the handler is where the
    # backend counts the buffer done; the held state above is the bound, and nothing blocks for good.
    count = out.stdout.split("COUNT ")[1].split()[0]
    assert count == "200"


def test_100k_launches_leave_no_metal_object_behind(device):
    # Every ABI call and every completed handler drains an autorelease pool: nothing Metal autoreleases
    # (command buffers, encoders, the error of a failed command buffer) outlives its call.
    pipe = device.compile(COUNT, "count")
    counter = device.new_buffer(4)
    queue = device.new_queue()
    plan = rt.DispatchPlan(pipe, [0], 31, 0)
    plan.set_buffer(0, counter, 0)
    plan.set_grid((1, 1, 1), (1, 1, 1))
    queue.submit(plan, 0)
    queue.wait()
    gc.collect()
    before = device.sim_stats()
    n = 100_000
    for i in range(n):
        queue.submit(plan, 0)
        if i % 20_000 == 0:
            queue.wait()
    queue.flush()
    device.sim_control(rt.SIM_FAIL_NEXT_COMMAND_BUFFER)  # a failed command buffer: its handler reads the error
    queue.submit(plan, 0)
    with pytest.raises(MetalRuntimeError, match="failed on the GPU"):
        queue.wait()
    gc.collect()
    after = device.sim_stats()
    assert from_buffer(counter, np.uint32, 1)[0] == n + 1  # the failed command buffer's dispatch did not run
    assert after["autoreleased_without_pool"] == before["autoreleased_without_pool"]
    assert after["live_objects"] == before["live_objects"]
    queue.release()


@pytest.mark.parametrize("fault, code", [(rt.SIM_FAIL_NEXT_COMMAND_BUFFER, "PageFault"),
                                         (rt.SIM_WATCHDOG_NEXT_COMMAND_BUFFER, "Timeout")])
def test_a_failed_command_buffer_releases_the_queues_waiting_for_it(device, fault, code):
    # Metal never runs the encoded signal of a command buffer that faulted or that the watchdog killed; the
    # queue waiting for it must be released at once (not by the watchdog, 10 s later) and told why.
    n = 4096
    pipe = device.compile(ADD_ONE, "add_one")
    a = to_buffer(device, np.zeros(n, dtype=np.int32))
    b, c = device.new_buffer(4 * n), device.new_buffer(4 * n)
    q1, q2 = device.new_queue(), device.new_queue()
    # The GPU is held so that the consumer's command buffer is queued behind the producer's before it fails.
    device.sim_control(rt.SIM_HOLD_GPU, 1)
    device.sim_control(fault)
    w1 = launch(q1, pipe, [a, b], (n // 256, 1, 1), (256, 1, 1), label="producer")  # committed at once: it fails
    q2.wait_for(q1, w1)
    launch(q2, pipe, [b, c], (n // 256, 1, 1), (256, 1, 1), label="consumer")
    device.sim_control(rt.SIM_HOLD_GPU, 0)
    t0 = time.monotonic()
    with pytest.raises(MetalRuntimeError, match=f"waited for work {w1} of another stream, which failed.*'producer' failed on the GPU"):
        q2.wait()
    assert time.monotonic() - t0 < 5
    with pytest.raises(MetalRuntimeError, match=f"kernel 'producer' failed on the GPU.*{code}"):
        q1.wait()
    launch(q1, pipe, [a, b], (n // 256, 1, 1), (256, 1, 1))  # both queues go on
    q2.wait_for(q1, q1.marker())
    launch(q2, pipe, [b, c], (n // 256, 1, 1), (256, 1, 1))
    q2.wait()
    q1.wait()
    assert (from_buffer(c, np.int32, n) == 2).all()
    q1.release()
    q2.release()


def test_the_watchdog_names_the_kernel_and_the_queue_goes_on(device, queue):
    pipe = device.compile(ADD_ONE, "add_one")
    a = to_buffer(device, np.arange(256, dtype=np.int32))
    b = device.new_buffer(4 * 256)
    device.sim_control(rt.SIM_WATCHDOG_NEXT_COMMAND_BUFFER)
    launch(queue, pipe, [a, b], (1, 1, 1), (256, 1, 1), label="too_long")
    with pytest.raises(MetalRuntimeError, match="kernel 'too_long' failed on the GPU.*Timeout"):
        queue.wait()
    launch(queue, pipe, [a, b], (1, 1, 1), (256, 1, 1))
    queue.wait()
    assert (from_buffer(b, np.int32, 256) == np.arange(256) + 1).all()
    assert device.sim_stats()["failed_command_buffers"] >= 1


DYNAMIC_SHARED = HEADER + """
kernel void dyn(device int* x [[buffer(0)]], threadgroup int* tile [[threadgroup(0)]],
                uint tid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]]) {
    if (tid == 0) tile[0] = 7;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[gid] = tile[0];
}
"""


@pytest.mark.parametrize("kind", ["cpu", "metal-sim"])
def test_declared_dynamic_threadgroup_memory_launched_with_none_is_still_bound(kind):
    # numba.cuda allows sharedmem=0 for a kernel with a dynamic shared array; Metal needs a length bound for
    # every [[threadgroup(i)]] the kernel declares (its validation layer stops the process otherwise).
    code = textwrap.dedent(f"""
        import numpy as np
        from numba_metal import runtime as rt
        info = [d for d in rt.list_devices(include_simulated=True) if d.kind == {kind!r}][0]
        dev = rt.open_device(info.index)
        p = dev.compile({DYNAMIC_SHARED!r}, "dyn")
        q = dev.new_queue()
        for lengths in ([], [0]):
            b = dev.new_buffer(4 * 64)
            q.dispatch(p, [b], [0], [0], None, 31, lengths, (2, 1, 1), (32, 1, 1))
            q.wait()
            print(lengths, np.frombuffer(b.memory(), dtype=np.int32).tolist() == [7] * 64)
    """)
    out = run_isolated(code)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split() == ["[]", "True", "[0]", "True"], out.stdout


@pytest.mark.parametrize("gpu, refusal", [
    ("mac2", "not an Apple GPU of family 7"),
    ("apple7-simd64", "runs SIMD groups of 64 threads"),
])
def test_gpus_numba_metal_cannot_use_are_refused(gpu, refusal):
    # An Intel Mac's AMD GPU (family Mac2, SIMD width 64) is not offered; a pipeline whose SIMD width is
    # not 32 is refused however the device describes itself.
    code = textwrap.dedent(f"""
        from numba_metal import metal
        from numba_metal.errors import UnsupportedPlatformError
        try:
            metal.select_device("metal-sim").device.compile({ADD_ONE!r}, "add_one")
        except UnsupportedPlatformError as e:
            print("REFUSED", e)
        else:
            print("ACCEPTED")
    """)
    out = run_isolated(code, env={"NUMBA_METAL_SIM_GPU": gpu, "NUMBA_METAL_DEVICE": "metal-sim"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("REFUSED") and refusal in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("mode, metal_options", [
    (rt.MATH_SAFE, (0, 1)),      # MTLMathMode.safe, MTLMathFloatingPointFunctions.precise
    (rt.MATH_RELAXED, (1, 0)),   # .relaxed, .fast
    (rt.MATH_FAST, (2, 0)),      # .fast, .fast
])
def test_math_modes_map_to_metal_compile_options(device, mode, metal_options):
    src = ADD_ONE + f"// mode {mode}\n"
    device.compile(src, "add_one", fast_math=mode)
    s = device.sim_stats()
    assert (s["last_math_mode"], s["last_math_functions"]) == metal_options
    assert s["last_language_version"] == 300  # 0 pins MSL 3.0, never the OS's default (test_os_profiles.py)
    device.compile(src, "add_one", fast_math=mode, language_version=320)
    assert device.sim_stats()["last_language_version"] == 320


@pytest.mark.devices("cpu", "metal-sim", "metal")
def test_an_unknown_math_mode_is_refused(device):
    with pytest.raises(MetalRuntimeError, match="fast_math is 3, not a math mode"):
        device.compile(ADD_ONE, "add_one", fast_math=3)


def test_the_simulated_device_is_never_taken_for_a_gpu():
    # Listing devices leaves it out unless asked; selecting 'metal' without a GPU says how to choose the CPU
    # device, whatever the simulated device could do.
    assert all(d.kind != "metal-sim" for d in rt.list_devices())
    code = textwrap.dedent("""
        from numba_metal import metal
        from numba_metal.errors import UnsupportedPlatformError
        try:
            metal.select_device("metal")
        except UnsupportedPlatformError as e:
            print(e)
    """)
    out = run_isolated(code, env={"NUMBA_METAL_DEVICE": "metal"})
    assert "no Metal GPU is available" in out.stdout and "NUMBA_METAL_DEVICE=cpu" in out.stdout, out.stdout + out.stderr


KERNEL_TESTS = ["tests/kernels/test_sync.py", "tests/kernels/test_atomics.py", "tests/kernels/test_memory.py",
                "tests/kernels/test_simd.py", "tests/kernels/test_indexing.py", "tests/kernels/test_reductions.py",
                "tests/kernels/test_classic_programs.py", "tests/host/test_launch.py", "tests/host/test_streams_events.py",
                "tests/host/test_device_arrays.py"]


def test_kernel_tests_pass_through_the_metal_backend():
    # A representative part of the kernel and host tests, unchanged, on the simulated Metal device: the
    # compiler's kernels through MetalDevice and MetalQueue (streams, events, copies, shared memory, atomics,
    # SIMD-group functions, reductions).
    env = dict(os.environ, NUMBA_METAL_DEVICE="metal-sim", PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          # asserts the CPU device's own description
                          "--deselect", "tests/host/test_streams_events.py::test_device_info_and_availability",
                          *KERNEL_TESTS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]
    assert " passed" in res.stdout and "failed" not in res.stdout


def test_the_timestamp_ring_grows_and_keeps_every_id(device, queue):
    # The history ring starts small and grows (64, 128, 256, 512 entries here) as work ids outrun it: every
    # id still has its timestamps, none is taken for another.
    b = device.new_buffer(64)
    ids = [queue.fill(b, 0, 64, i % 256) for i in range(300)]
    queue.wait()
    for i in ids:
        start, end = queue.timestamps(i)
        assert 0 < start <= end
    assert queue.timestamps(ids[-1])[1] >= queue.timestamps(ids[0])[1]
