"""Correct kernels the sanitizer must not report (with every check on)."""

import numpy as np

from numba_metal import metal


def tree_reduction(a, out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = a[metal.grid(1)]
    metal.syncthreads()
    k = 32
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        metal.syncthreads()
        k //= 2
    if t == 0:
        out[metal.blockIdx.x] = s[0]


TILE = 4


def tiled_matmul(a, b, c):
    sa = metal.shared.array((TILE, TILE), np.float32)
    sb = metal.shared.array((TILE, TILE), np.float32)
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    row = metal.blockIdx.y * TILE + ty
    col = metal.blockIdx.x * TILE + tx
    acc = np.float32(0.0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]
        sb[ty, tx] = b[k0 + ty, col]
        metal.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        metal.syncthreads()
    c[row, col] = acc


def shared_atomics(out):
    s = metal.shared.array(1, np.int32)
    if metal.threadIdx.x == 0:
        s[0] = 0
    metal.syncthreads()
    metal.atomic.add(s, 0, 1)
    metal.syncthreads()
    out[metal.threadIdx.x] = s[0]


def syncthreads_count_kernel(out):
    s = metal.shared.array(32, np.int32)
    t = metal.threadIdx.x
    s[t] = t
    n = metal.syncthreads_count(t % 2 == 0)
    out[t] = s[31 - t] + n


def stencil(a, out):
    i = metal.grid(1)
    if 0 < i < a.size - 1:
        out[i] = a[i - 1] + a[i] + a[i + 1]


def same_thread_rewrites(out):
    s = metal.shared.array(32, np.float32)
    t = metal.threadIdx.x
    s[t] = 1.0
    s[t] = s[t] + 1.0
    out[t] = s[t]


def each_thread_its_element(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = i


def cross_threadgroup_atomics(out):
    metal.atomic.add(out, metal.threadIdx.x, 1)


def simd_exchange(out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    s[t] = t
    metal.simdgroup_barrier()
    out[t] = s[t ^ 1]
    metal.syncwarp()
    s[t] = out[t] + 1
    metal.syncwarp()
    out[t] = s[t ^ 1]


def fencing_kernel(data, flag):
    i = metal.grid(1)
    data[i] = i
    metal.threadfence()
    if i == 0:
        flag[0] = 1


def many_writes_per_thread(out):
    g = metal.blockIdx.x
    for k in range(32):
        out[g * 32 + k] = k


# -- the correct twins of buggy_kernels.py's further shapes -------------------------------------------------

def transpose(a, out):
    s = metal.shared.array((8, 8), np.float32)
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    s[ty, tx] = a[ty, tx]
    metal.syncthreads()
    out[ty, tx] = s[tx, ty]


def barrier_outside_the_branch(out):
    s = metal.shared.array(32, np.int32)
    t = metal.threadIdx.x
    if t < 16:
        s[t] = t
    else:
        s[t] = t
    metal.syncthreads()
    out[t] = s[31 - t]


def guarded_work_around_the_barrier(a, out):
    s = metal.shared.array(32, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    if i < a.size:
        s[t] = a[i]
    metal.syncthreads()
    if i < a.size:
        out[i] = s[t] * 2


def shared_halo_loaded(a, out):
    s = metal.shared.array(34, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    s[t + 1] = a[i]
    if t == 0:
        s[0] = a[i - 1] if i > 0 else np.float32(0.0)
    if t == 31:
        s[33] = a[i + 1] if i + 1 < a.size else np.float32(0.0)
    metal.syncthreads()
    out[i] = s[t] + s[t + 1] + s[t + 2]


def local_array_full_init(out):
    acc = metal.local.array(4, np.float32)
    t = metal.threadIdx.x
    for k in range(4):
        acc[k] = k if k < t % 4 else 0
    total = np.float32(0.0)
    for k in range(4):
        total += acc[k]
    out[t] = total


def device_array_fill(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = i


def device_array_read_all(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + 1


def device_counter(counter):
    metal.atomic.add(counter, 0, 1)


def stencil_2d(a, out):
    i, j = metal.grid(2)
    if i < a.shape[0] and j + 1 < a.shape[1]:
        out[i, j] = a[i, j] + a[i, j + 1]


def shared_index_in_bounds(out):
    s = metal.shared.array(33, np.int32)
    t = metal.threadIdx.x
    s[t + 1] = t
    metal.syncthreads()
    out[t] = s[t + 1]


def record_fill(out):
    i = metal.grid(1)
    if i < out.size:
        out[i].x = i
        out[i].y = 2 * i


def record_read(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i].x + a[i].y


def slice_fill(out):
    if metal.grid(1) == 0:
        out[:] = 7


def compare_and_swap_after_fill(flag):
    if metal.grid(1) == 0:
        flag[0] = 0
    metal.syncthreads()
    metal.atomic.compare_and_swap(flag, 0, 1)
def slice_filled_shared(out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    if t == 0:
        s[:] = 1.0            # a slice assignment writes every element
        s[1::2] = 2.0
    metal.syncthreads()
    out[t] = s[t]


PAIR = np.dtype([("a", np.int32), ("v", np.float32, (2,))], align=True)


def shared_records(src, out):
    s = metal.shared.array(32, PAIR)
    t = metal.threadIdx.x
    s[t] = src[t]             # a whole record written
    metal.syncthreads()
    out[t] = s[31 - t].v[1] + s[31 - t]["v"][0]   # its field's elements read, at their own addresses


def syncwarp_every_lane(out):
    s = metal.shared.array(48, np.int32)
    t = metal.threadIdx.x
    s[t] = t
    metal.syncwarp()
    out[t] = s[t ^ 1] if (t ^ 1) < 48 else t
