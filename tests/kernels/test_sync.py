"""Synchronisation: barriers (both spellings), barriers with a count/and/or, SIMD-group barriers and
memory fences."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import KernelCompilationError, UnsupportedFeatureError


@metal.jit
def rotate_rounds(out, rounds):
    """Each round every thread reads its right neighbour's value from shared memory: only correct if
    every barrier separates the reads of one round from the writes of the next."""
    s = metal.shared.array(64, np.int32)
    t = metal.threadIdx.x
    n = metal.blockDim.x
    s[t] = t
    for r in range(rounds):
        metal.syncthreads()
        v = s[(t + 1) % n]
        metal.barrier()  # the earlier numba-metal's spelling
        s[t] = v
    metal.syncthreads()
    out[metal.grid(1)] = s[t]


def test_syncthreads_and_barrier_order_shared_memory():
    out = np.zeros(128, np.int32)
    rotate_rounds[2, 64](out, 37)
    t = np.arange(64)
    np.testing.assert_array_equal(out, np.tile((t + 37) % 64, 2))


@metal.jit
def votes(out, rounds):
    tx, ty = metal.threadIdx.x, metal.threadIdx.y
    t = ty * metal.blockDim.x + tx
    i = metal.blockIdx.x * metal.blockDim.x * metal.blockDim.y + t
    total = 0
    for r in range(rounds):  # repeated calls: the counter is reset correctly each time
        total += metal.syncthreads_count((t + r) % 3 == 0)
    out[i, 0] = total
    out[i, 1] = metal.syncthreads_and(t < 1000)
    out[i, 2] = metal.syncthreads_and(t != 17)
    out[i, 3] = metal.syncthreads_or(t == 17 and metal.blockIdx.x == 1)
    out[i, 4] = metal.syncthreads_or(t > 1000)


def test_syncthreads_count_and_or_in_2d_threadgroups():
    groups, threads = 3, (16, 4)
    out = np.zeros((groups * 64, 5), np.int32)
    votes[groups, threads](out, 5)
    t = np.arange(64)
    expected_total = sum(int(((t + r) % 3 == 0).sum()) for r in range(5))
    assert (out[:, 0] == expected_total).all()
    assert (out[:, 1] == 1).all()
    assert (out[:, 2] == 0).all()
    np.testing.assert_array_equal(out[:, 3], np.repeat([0, 1, 0], 64))
    assert (out[:, 4] == 0).all()


@metal.jit
def simd_neighbours(out):
    """Lanes exchange values through shared memory with only a SIMD-group barrier between."""
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    lane = metal.laneid
    base = t - lane
    s[t] = t * 2.0
    metal.simdgroup_barrier()
    a = s[base + (lane + 1) % 32]
    metal.syncwarp()
    b = s[base + (lane + 31) % 32]
    metal.syncwarp(0xFFFFFFFF)
    out[metal.grid(1)] = a + b


def test_simdgroup_barrier_and_syncwarp():
    out = np.zeros(64, np.float32)
    simd_neighbours[1, 64](out)
    t = np.arange(64)
    base, lane = t - t % 32, t % 32
    np.testing.assert_array_equal(out, 2.0 * (base + (lane + 1) % 32) + 2.0 * (base + (lane + 31) % 32))


def test_syncwarp_with_a_partial_mask_is_refused():
    def k(out):
        metal.syncwarp(0xFFFF)
        out[0] = 1

    with pytest.raises(UnsupportedFeatureError, match="0xffffffff"):
        metal.compile_msl(k, (types.int32[::1],))


def test_fences_lower_to_scoped_atomic_thread_fences():
    def k(out):
        out[0] = 1
        metal.threadfence()
        out[1] = 2
        metal.threadfence_block()

    src = metal.compile_msl(k, (types.int32[::1],))
    assert "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)" in src
    assert "thread_scope_threadgroup)" in src


@metal.jit
def publish(data, flags):
    """Classic message passing: write data, fence, then raise a flag (numba.cuda's threadfence use)."""
    i = metal.grid(1)
    data[i] = i * 3
    metal.threadfence()
    metal.threadfence_block()
    metal.atomic.exch(flags, i, 1)


def test_threadfence_runs():
    data = np.zeros(64, np.int32)
    flags = np.zeros(64, np.int32)
    publish[2, 32](data, flags)
    np.testing.assert_array_equal(data, np.arange(64) * 3)
    assert (flags == 1).all()


@pytest.mark.parametrize("call, advice", [
    ("metal.threadfence_system()", "metal.threadfence"),
    ("metal.nanosleep(100)", "suspend"),
    ("metal.cg.this_grid().sync()", "two launches"),
])
def test_numba_cuda_names_without_a_metal_equivalent_are_clear_compile_errors(call, advice):
    ns = {"metal": metal}
    exec(f"def k(out):\n    {call}\n    out[0] = 1\n", ns)
    with pytest.raises(UnsupportedFeatureError, match="no Metal equivalent") as e:
        metal.compile_msl(ns["k"], (types.int32[::1],))
    assert advice in str(e.value)
