"""numba.cuda's documented example kernels, ported by writing `metal.` for `cuda.` and nothing else.

Each kernel is written here from what numba.cuda's documentation shows and says it computes (the
kernels of its "Writing CUDA kernels", "Memory management", "Supported atomic operations", "Random
number generation", "Cooperative groups"-free examples, fp16 and vector-type pages), not copied; the
oracle is NumPy computing the documented result.
"""

import math

import numpy as np

from numba_metal import metal
from numba_metal.metal import float32, int32, void
from numba_metal.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32


# -- "Writing CUDA kernels": one thread per element, explicit positions -------------------------------


@metal.jit
def increment_by_one(an_array):
    tx = metal.threadIdx.x
    ty = metal.blockIdx.x
    bw = metal.blockDim.x
    pos = tx + ty * bw
    if pos < an_array.size:
        an_array[pos] += 1


@metal.jit
def increment_by_one_grid(an_array):
    pos = metal.grid(1)
    if pos < an_array.size:
        an_array[pos] += 1


def test_increment_by_one_both_ways():
    a = np.arange(1000, dtype=np.float32)
    threadsperblock = 32
    blockspergrid = (a.size + (threadsperblock - 1)) // threadsperblock
    increment_by_one[blockspergrid, threadsperblock](a)
    increment_by_one_grid[blockspergrid, threadsperblock](a)
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float32) + 2)


# -- "Writing CUDA kernels": 2-D grid, matrix multiplication with and without shared memory ------------


@metal.jit
def matmul(A, B, C):
    i, j = metal.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        tmp = 0.
        for k in range(A.shape[1]):
            tmp += A[i, k] * B[k, j]
        C[i, j] = tmp


TPB = 16


@metal.jit
def fast_matmul(A, B, C):
    sA = metal.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = metal.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = metal.grid(2)
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    bpg = metal.gridDim.x
    tmp = float32(0.)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        metal.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        metal.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp


def test_matmul_naive_and_with_shared_memory():
    rng = np.random.default_rng(1)
    n = 48
    A = rng.integers(-4, 4, (n, n)).astype(np.float32)
    B = rng.integers(-4, 4, (n, n)).astype(np.float32)
    C = np.zeros((n, n), np.float32)
    blocks = (math.ceil(n / TPB), math.ceil(n / TPB))
    matmul[blocks, (TPB, TPB)](A, B, C)
    np.testing.assert_array_equal(C, A @ B)  # small integers: exact in float32
    C2 = np.zeros((n, n), np.float32)
    fast_matmul[blocks, (TPB, TPB)](A, B, C2)
    np.testing.assert_array_equal(C2, A @ B)


# -- "Device functions" and eager compilation with a signature ---------------------------------------


@metal.jit(device=True)
def a_device_function(a, b):
    return a + b


@metal.jit(void(float32[::1], float32[::1], float32[::1]))
def add_arrays(x, y, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a_device_function(x[i], y[i])


def test_device_function_and_explicit_signature():
    x = np.arange(100, dtype=np.float32)
    y = 2 * x
    out = np.zeros_like(x)
    add_arrays[4, 32](x, y, out)
    np.testing.assert_array_equal(out, 3 * x)


# -- "Supported atomic operations": maximum of an array and a shared-memory histogram ----------------


@metal.jit
def max_example(result, values):
    tid = metal.threadIdx.x
    bid = metal.blockIdx.x
    bdim = metal.blockDim.x
    i = (bid * bdim) + tid
    if i < values.size:
        metal.atomic.max(result, 0, values[i])


@metal.jit
def histogram(x, xmin, xmax, histogram_out):
    nbins = histogram_out.shape[0]
    bin_width = (xmax - xmin) / nbins
    start = metal.grid(1)
    stride = metal.gridsize(1)
    for i in range(start, x.shape[0], stride):
        bin_number = np.int32((x[i] - xmin) / bin_width)
        if bin_number >= 0 and bin_number < histogram_out.shape[0]:
            metal.atomic.add(histogram_out, bin_number, 1)


def test_atomic_max_and_histogram():
    rng = np.random.default_rng(2)
    values = rng.random(3000).astype(np.float32)
    result = np.zeros(1, np.float32)
    max_example[(values.size + 255) // 256, 256](result, values)
    assert result[0] == values.max()
    x = rng.random(10000).astype(np.float32)
    hist = np.zeros(10, np.int32)
    histogram[8, 64](x, np.float32(0.0), np.float32(1.0), hist)
    expected = np.zeros(10, np.int32)
    for v in x:  # the kernel's own binning, in float32 as it computes
        b = int(np.float32(v - np.float32(0.0)) / np.float32(0.1))
        if 0 <= b < 10:
            expected[b] += 1
    assert hist.sum() == expected.sum() == x.size
    assert np.abs(hist - np.histogram(x, 10, (0, 1))[0]).max() <= 2  # bin edges rounded in float32


# -- "Shared memory reduction" with syncthreads and atomics ---------------------------------------------


@metal.jit
def sum_reduce(a, total):
    partial = metal.shared.array(128, int32)
    tid = metal.threadIdx.x
    i = metal.grid(1)
    partial[tid] = a[i] if i < a.size else 0
    metal.syncthreads()
    s = 64
    while s > 0:
        if tid < s:
            partial[tid] += partial[tid + s]
        metal.syncthreads()
        s //= 2
    if tid == 0:
        metal.atomic.add(total, 0, partial[0])


def test_shared_memory_tree_reduction():
    a = np.arange(10000, dtype=np.int32)
    total = np.zeros(1, np.int32)
    sum_reduce[(a.size + 127) // 128, 128](a, total)
    assert total[0] == a.sum()


# -- warp-level reduction with shuffles, popc of a ballot ---------------------------------------------


@metal.jit
def warp_sums(x, out, counts):
    i = metal.grid(1)
    v = x[i]
    offset = 16
    while offset > 0:
        v += metal.shfl_down_sync(0xffffffff, v, offset)
        offset //= 2
    ballot = metal.ballot_sync(0xffffffff, x[i] > 50)  # every lane takes part, as the mask says
    if metal.laneid == 0:
        out[i // 32] = v
        counts[i // 32] = metal.popc(ballot)


def test_warp_shuffle_reduction_and_ballot_count():
    x = np.arange(128, dtype=np.int32)
    out = np.zeros(4, np.int32)
    counts = np.zeros(4, np.uint32)
    warp_sums[1, 128](x, out, counts)
    np.testing.assert_array_equal(out, x.reshape(4, 32).sum(axis=1))
    np.testing.assert_array_equal(counts, (x.reshape(4, 32) > 50).sum(axis=1))


# -- "Random number generation": Monte Carlo estimate of pi --------------------------------------------


@metal.jit
def compute_pi(rng_states, iterations, out):
    thread_id = metal.grid(1)
    inside = 0
    for i in range(iterations):
        x = xoroshiro128p_uniform_float32(rng_states, thread_id)
        y = xoroshiro128p_uniform_float32(rng_states, thread_id)
        if x ** 2 + y ** 2 <= 1.0:
            inside += 1
    out[thread_id] = 4.0 * inside / iterations


def test_monte_carlo_pi():
    threads_per_block, blocks = 64, 16
    rng_states = create_xoroshiro128p_states(threads_per_block * blocks, seed=1)
    out = np.zeros(threads_per_block * blocks, np.float32)
    compute_pi[blocks, threads_per_block](rng_states, 1000, out)
    assert abs(out.mean() - math.pi) < 0.01


# -- fp16 and vector types ----------------------------------------------------------------------------


@metal.jit
def half_fma(r, x, y, z):
    i = metal.grid(1)
    if i < r.size:
        r[i] = metal.fp16.hfma(x[i], y[i], z[i])


def test_fp16_fused_multiply_add():
    x = np.array([1.5, -2.0, 0.25], np.float16)
    y = np.array([2.0, 3.0, 4.0], np.float16)
    z = np.array([0.5, 1.0, -1.0], np.float16)
    r = np.zeros(3, np.float16)
    half_fma[1, 3](r, x, y, z)
    np.testing.assert_array_equal(r, x * y + z)  # exact products and sums here


@metal.jit
def vector_lengths(xs, ys, zs, out):
    i = metal.grid(1)
    if i < out.size:
        v = metal.float32x3(xs[i], ys[i], zs[i])
        out[i] = math.sqrt(v.x * v.x + v.y * v.y + v.z * v.z)


def test_vector_type_members():
    xs = np.array([3, 0, 1], np.float32)
    ys = np.array([4, 0, 2], np.float32)
    zs = np.array([0, 5, 2], np.float32)
    out = np.zeros(3, np.float32)
    vector_lengths[1, 3](xs, ys, zs, out)
    np.testing.assert_array_equal(out, [5, 5, 3])


# -- "Cooperative groups": the 1-d heat equation (laplace) example without its grid.sync() --------------
# numba.cuda's example runs every timestep in one launch, separated by a grid-wide barrier, which Metal
# does not have; here each timestep is one launch (the launch boundary is the grid-wide barrier), through
# numba.cuda's forall, with the example's kernel body unchanged.


@metal.jit
def heat_step(data, next_data, k):
    i = metal.grid(1)
    if i >= len(data):
        return
    curr_temp = data[i]
    if i == 0:
        next_temp = curr_temp + k * (data[i + 1] - (2 * curr_temp))
    elif i == len(data) - 1:
        next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp))
    else:
        next_temp = curr_temp + k * (data[i - 1] - (2 * curr_temp) + data[i + 1])
    next_data[i] = next_temp


def test_laplace_heat_equation_without_grid_sync_is_numpys_bit_for_bit():
    size, niter, k = 1001, 64, 0.25
    data = np.zeros(size)                      # float64, as the example
    data[500] = 10000
    buf = [metal.to_device(data), metal.device_array_like(data)]
    for step in range(niter):
        heat_step.forall(size)(buf[step % 2], buf[(step + 1) % 2], k)
    expect = data.copy()
    for _ in range(niter):
        nxt = np.empty_like(expect)
        nxt[0] = expect[0] + k * (expect[1] - (2 * expect[0]))
        nxt[-1] = expect[-1] + k * (expect[-2] - (2 * expect[-1]))
        nxt[1:-1] = expect[1:-1] + k * (expect[:-2] - (2 * expect[1:-1]) + expect[2:])
        expect = nxt
    got = buf[niter % 2].copy_to_host()
    assert got.dtype == np.float64 and np.array_equal(got, expect)
    assert got.sum() > 9999 and got[500] < 10000   # heat spread and (nearly) conserved


# -- "Cooperative groups": sessionization, its grid.sync() as a launch boundary -----------------------------
# numba.cuda's example marks session starts, synchronises the grid, then lets each start thread label its
# session; here the two halves are two launches (Metal has no grid-wide barrier), with the example's logic
# (non-starts marked -1 rather than left 0, so that the first session's label 0 is not mistaken for "unset",
# and the look-ahead bounded by the array's end), over data of our own.

SESSION_TIMEOUT = 3600 * 10**9          # one hour in nanoseconds, a module constant as in the example


@metal.jit
def mark_session_starts(user_id, timestamp, results):
    gid = metal.grid(1)
    size = len(user_id)
    if gid >= size:
        return
    is_first_datapoint = gid == 0
    if not is_first_datapoint:
        new_user = user_id[gid] != user_id[gid - 1]
        timed_out = timestamp[gid] - timestamp[gid - 1] > SESSION_TIMEOUT
        is_sess_boundary = new_user or timed_out
    else:
        is_sess_boundary = True
    if is_sess_boundary:
        results[gid] = gid
    else:
        results[gid] = -1


@metal.jit
def label_sessions(results):
    gid = metal.grid(1)
    size = len(results)
    if gid >= size or results[gid] != gid:
        return
    look_ahead = 1
    while gid + look_ahead < size and results[gid + look_ahead] == -1:
        results[gid + look_ahead] = gid
        look_ahead += 1


def test_sessionize_with_its_grid_barrier_as_a_launch_boundary():
    rng = np.random.default_rng(7)
    n = 300
    ids = np.sort(rng.integers(0, 12, n)).astype(np.int64)
    gaps = rng.choice([60, 600, 7200], size=n, p=[0.6, 0.3, 0.1]) * 10**9
    ts = np.cumsum(gaps).astype(np.int64)
    results = metal.device_array(n, np.int64)
    mark_session_starts.forall(n)(metal.to_device(ids), metal.to_device(ts), results)
    label_sessions.forall(n)(results)
    expect = np.empty(n, np.int64)
    for i in range(n):
        start = i == 0 or ids[i] != ids[i - 1] or ts[i] - ts[i - 1] > SESSION_TIMEOUT
        expect[i] = i if start else expect[i - 1]
    got = results.copy_to_host()
    np.testing.assert_array_equal(got, expect)
    assert len(np.unique(got)) > 12            # sessions split by users and by timeouts
