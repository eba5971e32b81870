"""The sanitizer's corpus of buggy kernels: each with the check that must find it and the lines of both
accesses (marked ``# A`` and ``# B`` in the source; see ``line_of``)."""

import inspect

import numpy as np

from numba_metal import metal


def line_of(fn, mark: str) -> int:
    """The file line of the source line of ``fn`` ending with ``# <mark>``."""
    lines, start = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if text.rstrip().endswith("# " + mark):
            return start + k
    raise LookupError(mark)


def tree_reduction_missing_barrier(a, out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = a[metal.grid(1)]
    metal.syncthreads()
    k = 32
    while k > 0:
        if t < k:
            s[t] += s[t + k]  # A
        k //= 2              # (the syncthreads() that belongs here is missing)
    if t == 0:
        out[metal.blockIdx.x] = s[0]


TILE = 4


def matmul_missing_second_barrier(a, b, c):
    sa = metal.shared.array((TILE, TILE), np.float32)
    sb = metal.shared.array((TILE, TILE), np.float32)
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    row = metal.blockIdx.y * TILE + ty
    col = metal.blockIdx.x * TILE + tx
    acc = np.float32(0.0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]  # B
        sb[ty, tx] = b[k0 + ty, col]
        metal.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]  # A
        # the second syncthreads() is missing: the next tile overwrites sa while others still read it
    c[row, col] = acc


def barrier_under_if(out):
    s = metal.shared.array(32, np.int32)
    t = metal.threadIdx.x
    s[t] = t
    if t < 16:
        metal.syncthreads()  # A
    out[t] = s[31 - t]


def loop_trip_count_differs(out):
    s = metal.shared.array(32, np.int32)
    t = metal.threadIdx.x
    s[t] = 0
    for i in range(t % 3):
        metal.syncthreads()  # A
        s[t] += i
    out[t] = s[t]


def partial_shared_init(out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    if t < 32:
        s[t] = 1.0
    metal.syncthreads()
    out[t] = s[63 - t]  # A


def stencil_off_by_one(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = a[i - 1] + a[i] + a[i + 1]  # A


def write_write_same_element(out):
    s = metal.shared.array(1, np.int32)
    s[0] = metal.threadIdx.x  # A
    metal.syncthreads()
    if metal.threadIdx.x == 0:
        out[0] = s[0]


def atomic_then_plain_read(out):
    s = metal.shared.array(1, np.int32)
    t = metal.threadIdx.x
    if t == 0:
        s[0] = 0
    metal.syncthreads()
    metal.atomic.add(s, 0, 1)  # B
    out[t] = s[0]  # A


def cross_threadgroup_write(out):
    out[metal.threadIdx.x] = metal.blockIdx.x  # A


def simd_exchange_without_barrier(out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = t  # B
    out[t] = s[t ^ 1]  # A


def simd_exchange_across_simd_groups(out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = t  # B
    metal.syncwarp()   # orders one SIMD group's lanes, not two SIMD groups
    out[t] = s[63 - t]  # A


# -- more shapes of each class (tests/sanitizer/test_sanitizer_corpus.py; correct twins in correct_kernels.py) --

def transpose_missing_barrier(a, out):
    s = metal.shared.array((8, 8), np.float32)
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    s[ty, tx] = a[ty, tx]  # B
    # the syncthreads() that belongs here is missing: other threads' elements are read before they are written
    out[ty, tx] = s[tx, ty]  # A


def barrier_in_both_branches(out):
    s = metal.shared.array(32, np.int32)
    t = metal.threadIdx.x
    s[t] = t
    if t < 16:
        metal.syncthreads()  # A
    else:
        metal.syncthreads()  # B
    out[t] = s[31 - t]


def early_return_before_barrier(a, out):
    s = metal.shared.array(32, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    if i >= a.size:
        return                # the last threadgroup's spare threads leave before the barrier
    s[t] = a[i]
    metal.syncthreads()  # A
    out[i] = s[31 - t]


def shared_halo_not_loaded(a, out):
    s = metal.shared.array(34, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    s[t + 1] = a[i]          # the interior only: s[0] and s[33] (the halo) are never loaded
    metal.syncthreads()
    out[i] = s[t] + s[t + 1] + s[t + 2]  # A


def local_array_partial_init(out):
    acc = metal.local.array(4, np.float32)
    t = metal.threadIdx.x
    for k in range(t % 4):
        acc[k] = k
    total = np.float32(0.0)
    for k in range(4):
        total += acc[k]  # A
    out[t] = total


def device_array_never_written(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] * 2  # A


def device_array_half_written_by_a_kernel(out):
    i = metal.grid(1)
    if i < out.size // 2:
        out[i] = i  # B


def device_array_read_all(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + 1  # A


def device_counter_never_zeroed(counter):
    metal.atomic.add(counter, 0, 1)  # A


def stencil_2d_off_by_one(a, out):
    i, j = metal.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = a[i, j] + a[i, j + 1]  # A


def shared_index_past_the_end(out):
    s = metal.shared.array(32, np.int32)
    t = metal.threadIdx.x
    s[t + 1] = t  # A
    metal.syncthreads()
    out[t] = s[t]


# -- SIMD-group barriers (syncwarp, simdgroup_barrier): every lane of the SIMD group must reach the same one --

def syncwarp_under_if(out):
    t = metal.threadIdx.x
    if t < 16:
        metal.syncwarp()  # A
    out[t] = t


def syncwarp_in_both_branches(out):
    t = metal.threadIdx.x
    if t % 2 == 0:
        metal.syncwarp()  # A
    else:
        metal.simdgroup_barrier()  # B
    out[t] = t


def syncwarp_after_early_return(out):
    t = metal.threadIdx.x
    if t >= 40:
        return
    metal.syncwarp()  # A
    out[t] = t
