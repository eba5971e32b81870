"""Barriers fence only what needs fencing (issue 28 item 3, compiler/barriers.py): a ``syncthreads()``
fences threadgroup memory only when no device-memory write by this thread reaches it since the previous
barrier, and no device-memory read before it can meet a device-memory write after it; otherwise it keeps
numba.cuda's guarantee (``mem_device | mem_threadgroup``). The MSL is checked barrier by barrier, and the
kernels that need the device fence run and give numba.cuda's results."""

import re

import numpy as np
import pytest

from numba_metal import metal

BOTH = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)"
SHARED_ONLY = "threadgroup_barrier(mem_flags::mem_threadgroup)"


def _fences(fn, sig):
    """The flags of each threadgroup_barrier of the kernel function, in source order: 'both' or 'shared'."""
    text = metal.compile_msl(fn, sig)
    text = text[text.index("kernel void"):]
    calls = re.findall(r"threadgroup_barrier\([^)]*\)", text)
    return ["both" if c == BOTH else "shared" if c == SHARED_ONLY else c for c in calls]


def shared_only(a, out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = t
    metal.syncthreads()
    out[t] = s[63 - t]


def device_write_before(a, out):
    t = metal.threadIdx.x
    out[t] = a[t] * 2
    metal.syncthreads()
    a[t] = out[(t + 1) % 64]


def device_write_in_a_branch(a, out):
    t = metal.threadIdx.x
    if t % 2 == 0:
        out[t] = 1
    metal.syncthreads()


def device_write_around_a_loop(a, out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    for k in range(4):
        s[t] = k
        metal.syncthreads()        # after the first trip, out[t] was written above it (the back edge)
        out[t] = s[(t + k) % 64]


def atomic_before(a, out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    metal.atomic.add(out, 0, 1.0)
    metal.syncthreads()
    s[t] = 1


@metal.jit(device=True)
def _store(arr, i, v):
    arr[i] = v


def device_function_before(a, out):
    t = metal.threadIdx.x
    _store(out, t, 1.0)
    metal.syncthreads()


def read_before_write_after(a, out):
    # in-place reversal through registers: the read must not see the other thread's later write
    t = metal.threadIdx.x
    v = a[t]
    metal.syncthreads()
    a[63 - t] = v


def read_before_write_elsewhere_after(a, out):
    # a and out may be the same array: the read of a before and the write of out after still meet
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = a[t]
    metal.syncthreads()
    out[t] = s[63 - t]


def tiled_copy(a, out):
    # the matmul's shape: device reads, a barrier (shared only), shared reads, a barrier (both: the write
    # after the loop can meet the reads before the first barrier), a device write after the loop
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    acc = np.float32(0)
    for k in range(a.size // 64):
        s[t] = a[k * 64 + t]
        metal.syncthreads()
        acc += s[63 - t]
        metal.syncthreads()
    out[t] = acc


def local_write_before(a, out):
    loc = metal.local.array(4, np.float32)
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    loc[0] = t
    s[t] = loc[0]
    metal.syncthreads()
    s[t] += 1


SIG = "void(float32[::1], float32[::1])"
CASES = [
    (shared_only, ["shared"]),
    (device_write_before, ["both"]),
    (device_write_in_a_branch, ["both"]),
    (device_write_around_a_loop, ["both"]),
    (atomic_before, ["both"]),
    (device_function_before, ["both"]),
    (read_before_write_after, ["both"]),
    (read_before_write_elsewhere_after, ["both"]),
    (tiled_copy, ["shared", "both"]),
    (local_write_before, ["shared"]),
]


@pytest.mark.parametrize("fn,want", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_barrier_fences_device_memory_exactly_where_an_access_needs_it(fn, want):
    assert _fences(fn, SIG) == want


def test_a_barrier_in_a_device_function_always_fences_device_memory():
    @metal.jit(device=True)
    def sync_in_device_function(s, t):
        s[t] = 1
        metal.syncthreads()

    def kernel(a, out):
        s = metal.shared.array(64, np.float32)
        sync_in_device_function(s, metal.threadIdx.x)

    text = metal.compile_msl(kernel, SIG)
    assert text.count("threadgroup_barrier(") == 1 and BOTH in text


def test_a_barrier_after_a_device_write_orders_it_for_the_threadgroup():
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    metal.jit(device_write_before)[1, 64](a, out)
    np.testing.assert_array_equal(a, 2 * np.roll(np.arange(64, dtype=np.float32), -1))


def test_a_read_before_a_barrier_does_not_see_a_write_after_it():
    a = np.arange(64, dtype=np.float32)
    metal.jit(read_before_write_after)[1, 64](a, np.zeros(1, np.float32))
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float32)[::-1])


def test_barriers_that_fence_only_threadgroup_memory_and_those_that_do_not_give_the_same_results():
    a = np.arange(256, dtype=np.float32)
    out = np.zeros(64, np.float32)
    metal.jit(tiled_copy)[1, 64](a, out)
    np.testing.assert_array_equal(out, a.reshape(4, 64)[:, ::-1].sum(axis=0, dtype=np.float32))
    out = np.zeros(64, np.float32)
    metal.jit(read_before_write_elsewhere_after)[1, 64](a[:64].copy(), out)
    np.testing.assert_array_equal(out, a[:64][::-1])
