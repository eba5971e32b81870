"""What Metal refuses is refused here: compile errors name the MSL line; bad launches fail before queueing;
failed work surfaces at the next wait naming the kernel, and the queue keeps working."""

from __future__ import annotations

import numpy as np
import pytest

from numba_metal import runtime as rt
from numba_metal.errors import KernelBarrierError, KernelCompilationError, KernelLaunchError, MetalRuntimeError
from runtime_helpers import from_buffer, launch, pack, to_buffer

# Compile logs and the faults the CPU engine catches are the CPU engine's words: the CPU device and the
# simulated Metal device (which runs kernels on that engine) say them; Apple's compiler and GPU do not.
CPU_ENGINE = pytest.mark.devices("cpu", "metal-sim")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
OK_KERNEL = HEADER + """
kernel void ok(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = int(i) + 1; }
"""


@CPU_ENGINE
def test_double_is_refused_naming_the_line(device):
    src = HEADER + "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" \
                   "    double d = x[i];\n    x[i] = d;\n}\n"
    with pytest.raises(KernelCompilationError) as e:
        device.compile(src, "k")
    assert "kernel.metal:4:" in str(e.value)
    assert "double_is_not_supported_in_Metal" in str(e.value)


@CPU_ENGINE
def test_address_space_mixup_is_refused_naming_the_line(device):
    src = HEADER + """
void helper(thread float* p) { *p = 1.0f; }
kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    helper(x + i);
}
"""
    with pytest.raises(KernelCompilationError) as e:
        device.compile(src, "k")
    assert "kernel.metal:6:" in str(e.value) and "error" in str(e.value)


@CPU_ENGINE
def test_signature_rules_of_metal(device):
    cases = {
        "kernel void k(device float* x [[buffer(0)]], int n) {}": "has no attribute",
        "kernel void k(device float* x [[buffer(31)]]) {}": "between 0 and 30",
        "kernel void k(device float* x [[buffer(1)]], device float* y [[buffer(1)]]) {}": "buffer indices must be unique",
        "kernel void k(int n [[buffer(0)]]) {}": "invalid type 'int'",
        "kernel void k(float3 p [[thread_position_in_grid]]) {}": "invalid type 'float3'",
    }
    for body, expected in cases.items():
        with pytest.raises(KernelCompilationError) as e:
            device.compile(HEADER + body, "k")
        assert "kernel.metal:3:" in str(e.value), str(e.value)
        assert expected in str(e.value)
    with pytest.raises(KernelCompilationError, match="no kernel function named 'missing'"):
        device.compile(OK_KERNEL, "missing")


@CPU_ENGINE
def test_atomics_accept_only_relaxed_order(device):
    src = HEADER + """
kernel void k(device atomic_int* x [[buffer(0)]]) { atomic_fetch_add_explicit(x, 1, memory_order_seq_cst); }
"""
    with pytest.raises(KernelCompilationError, match="memory_order_seq_cst"):
        device.compile(src, "k")


def test_launch_limits_are_refused_before_queueing(device, queue):
    pipe = device.compile(OK_KERNEL, "ok")
    buf = device.new_buffer(4 * 2048)
    before = device.stats()["dispatches"]
    with pytest.raises(KernelLaunchError, match="1025 threads per threadgroup"):
        launch(queue, pipe, [buf], (1, 1, 1), (1025, 1, 1))
    with pytest.raises(KernelLaunchError, match="zero dimension"):
        launch(queue, pipe, [buf], (1, 0, 1), (1, 1, 1))
    with pytest.raises(KernelLaunchError, match="slot 31 is out of range"):
        queue.dispatch(pipe, [buf], [0], [31], None, 0, [], (1, 1, 1), (1, 1, 1))
    with pytest.raises(KernelLaunchError, match="4097 bytes exceeds"):
        launch(queue, pipe, [buf], (1, 1, 1), (1, 1, 1), args=bytes(4097), arg_slot=1)
    with pytest.raises(KernelLaunchError, match="bound twice"):
        launch(queue, pipe, [buf], (1, 1, 1), (1, 1, 1), args=bytes(4), arg_slot=0)
    with pytest.raises(KernelLaunchError, match="beyond its length"):
        queue.dispatch(pipe, [buf], [buf.nbytes + 4], [0], None, 1, [], (1, 1, 1), (1, 1, 1))
    with pytest.raises(KernelLaunchError, match="declares \\[\\[buffer\\(0\\)\\]\\]"):
        queue.dispatch(pipe, [], [], [], None, 1, [], (1, 1, 1), (1, 1, 1))
    with pytest.raises(KernelLaunchError, match="threadgroup memory"):
        launch(queue, pipe, [buf], (1, 1, 1), (1, 1, 1), threadgroup_memory=[32768 + 16])
    assert device.stats()["dispatches"] == before
    launch(queue, pipe, [buf], (2, 1, 1), (1024, 1, 1))
    queue.wait()
    assert from_buffer(buf, np.int32, 2048)[-1] == 2048


@CPU_ENGINE
def test_faulting_kernel_fails_the_dispatch_and_the_queue_goes_on(device, queue):
    bad = HEADER + """
kernel void wild(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    device int* p = (device int*)(0x10 + 0 * i);
    x[i] = *p;
}
"""
    pipe = device.compile(bad, "wild")
    ok = device.compile(OK_KERNEL, "ok")
    buf = device.new_buffer(4 * 64)
    launch(queue, pipe, [buf], (4, 1, 1), (16, 1, 1), label="my_wild_kernel")
    launch(queue, ok, [buf], (1, 1, 1), (64, 1, 1))  # whether this runs is the device's business (Metal: not)
    with pytest.raises(MetalRuntimeError, match="kernel 'my_wild_kernel'.*faulted with SIGSEGV"):
        queue.wait()
    launch(queue, ok, [buf], (1, 1, 1), (64, 1, 1))
    queue.wait()  # the failure was reported once
    assert from_buffer(buf, np.int32, 64)[63] == 64  # and the queue goes on


def test_integer_division_by_zero_fails_the_dispatch(device, queue):
    src = HEADER + """
kernel void div(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 7 / x[i]; }
"""
    buf = device.new_buffer(16)
    launch(queue, device.compile(src, "div"), [buf], (1, 1, 1), (4, 1, 1))
    import platform
    if device.info.kind != "metal" and platform.machine() in ("x86_64", "AMD64"):
        with pytest.raises(MetalRuntimeError, match="kernel 'div'.*faulted with SIGFPE"):
            queue.wait()
    else:  # MSL: an unspecified value; arm64 and Apple GPUs give one without a trap
        queue.wait()


@CPU_ENGINE
def test_divergent_barrier_fails_instead_of_hanging(device, queue):
    src = HEADER + """
kernel void diverge(device int* x [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
    if (tid < 16) threadgroup_barrier(mem_flags::mem_threadgroup);
    else simdgroup_barrier(mem_flags::mem_none);
    x[tid] = 1;
}
"""
    buf = device.new_buffer(4 * 64)
    launch(queue, device.compile(src, "diverge"), [buf], (1, 1, 1), (64, 1, 1))
    with pytest.raises(MetalRuntimeError, match="kernel 'diverge'.*divergent barrier"):
        queue.wait()
    launch(queue, device.compile(OK_KERNEL, "ok"), [buf], (1, 1, 1), (64, 1, 1))
    queue.wait()


@CPU_ENGINE
def test_work_items_that_exit_before_a_barrier_the_others_reach_fail_the_dispatch(device, queue):
    # MSL: a barrier inside a conditional must be reached by every thread of the threadgroup; an early
    # return before it is such a conditional. The CPU device reports it instead of returning a result.
    src = HEADER + """
kernel void early(device int* x [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
    if (tid >= 40) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    x[tid] = 1;
}
"""
    buf = device.new_buffer(4 * 64)
    launch(queue, device.compile(src, "early"), [buf], (1, 1, 1), (64, 1, 1))
    with pytest.raises(KernelBarrierError, match=r"kernel 'early'.*40 work-items wait at the barrier on line \d+ "
                       r"of the kernel's MSL, 24 did not arrive; 24 have exited without reaching it \(threads \(40,0,0\)"):
        queue.wait()
    launch(queue, device.compile(OK_KERNEL, "ok"), [buf], (1, 1, 1), (64, 1, 1))
    queue.wait()


# Private memory larger than a work-item's stack: 512 KB on a 128 KiB fiber (a kernel with a barrier), and
# 16 MB on an 8 MB worker thread. Stack-clash protection makes the first touch below the stack the guard
# page, never other memory (MSL has no recursion, so a big frame is how a kernel overflows).
STACK_OVERFLOWS = {
    "fiber": ("""
kernel void big(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    threadgroup_barrier(mem_flags::mem_none);
    volatile int pad[131072];
    for (int k = 131071; k >= 0; k -= 1024) pad[k] = k;
    x[i] = pad[i];
}
""", "overflowed its work-item's 128 KiB stack"),
    "worker thread": ("""
kernel void big(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    volatile int pad[4194304];
    for (int k = 0; k < 4194304; k += 1024) pad[k] = k;
    x[i] = pad[i * 1024];
}
""", "overflowed the .* stack of the CPU thread"),
}


@CPU_ENGINE
@pytest.mark.parametrize("stack", STACK_OVERFLOWS)
def test_a_stack_overflow_fails_the_dispatch_and_the_queue_goes_on(device, queue, stack):
    src, message = STACK_OVERFLOWS[stack]
    buf = device.new_buffer(4 * 64)
    for _ in range(3):
        launch(queue, device.compile(HEADER + src, "big"), [buf], (2, 1, 1), (32, 1, 1))
        with pytest.raises(MetalRuntimeError, match=f"kernel 'big'.*{message}"):
            queue.wait()
        launch(queue, device.compile(OK_KERNEL, "ok"), [buf], (1, 1, 1), (64, 1, 1))
        queue.wait()
        assert from_buffer(buf, np.int32, 64).tolist() == [i + 1 for i in range(64)]


ABI_KERNEL = HEADER + """
struct args_t { uint n; float scale; };
kernel void scaled(device float* x [[buffer(0)]], constant args_t& args [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) { if (i < args.n) x[i] *= args.scale; }
"""


def abi_params(**changes):
    params = [rt.KernelParam(rt.PARAM_BUFFER, 0, 0, "device float*", "x"),
              rt.KernelParam(rt.PARAM_ARGUMENT_BLOCK, 1, 8, "constant args_t&", "args"),
              rt.KernelParam(rt.PARAM_BUILTIN, 0, 0, "uint", "i", "thread_position_in_grid")]
    for position, param in changes.items():
        params[int(position[1:])] = param
    return params


def test_a_kernel_compiled_with_its_declared_abi_runs(device, queue):
    pipe = device.compile(ABI_KERNEL, "scaled", params=abi_params())
    buf = to_buffer(device, np.arange(4, dtype=np.float32))
    launch(queue, pipe, [buf], (1, 1, 1), (4, 1, 1), pack("If", 4, 2.0))
    queue.wait()
    assert from_buffer(buf, np.float32, 4).tolist() == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.parametrize("changes, expected", [
    ({"p0": rt.KernelParam(rt.PARAM_BUFFER, 2, 0, "device float*", "x")}, "parameter 0 of kernel 'scaled'"),
    ({"p0": rt.KernelParam(rt.PARAM_BUFFER, 0, 0, "device int*", "x")}, "'device int* x [[buffer(0)]]'"),
    ({"p2": rt.KernelParam(rt.PARAM_BUILTIN, 0, 0, "uint", "i", "thread_index_in_threadgroup")}, "parameter 2"),
])
def test_an_msl_signature_that_differs_from_the_declared_abi_is_refused(device, changes, expected):
    with pytest.raises(KernelCompilationError) as e:
        device.compile(ABI_KERNEL, "scaled", params=abi_params(**changes))
    assert expected in str(e.value) and "ABI" in str(e.value)


def test_a_missing_parameter_is_refused(device):
    with pytest.raises(KernelCompilationError, match="declares 3 parameters in its MSL but its compiler's ABI has 2"):
        device.compile(ABI_KERNEL, "scaled", params=abi_params()[:2])


@pytest.mark.devices("cpu")  # a compile-time check of the CPU device's glue
def test_an_argument_struct_of_another_size_than_the_host_packs_is_refused(device):
    wrong = rt.KernelParam(rt.PARAM_ARGUMENT_BLOCK, 1, 12, "constant args_t&", "args")
    with pytest.raises(KernelCompilationError, match="not the 12 bytes the host packs"):
        device.compile(ABI_KERNEL, "scaled", params=abi_params(p1=wrong))
