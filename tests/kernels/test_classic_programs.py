"""Classic GPU programs, written as one would for numba.cuda (with ``cuda.`` spelt ``metal.``), checked
against NumPy: tiled matrix multiply, block and warp reductions, a histogram with atomics, a prefix
scan, a bitonic sort in threadgroup memory, N-body with shared tiles, and a Monte Carlo estimate with
the device RNG checked against numba.cuda.random's own sequence."""

import math
import types as pytypes
import warnings

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float32

# -- tiled matrix multiply ------------------------------------------------------------------------

TILE = 16


@metal.jit
def matmul_tiled(A, B, C):
    sA = metal.shared.array((TILE, TILE), np.float32)
    sB = metal.shared.array((TILE, TILE), np.float32)
    x, y = metal.grid(2)
    tx, ty = metal.threadIdx.x, metal.threadIdx.y
    acc = np.float32(0.0)
    for t in range((A.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sA[ty, tx] = A[y, k + tx] if y < A.shape[0] and k + tx < A.shape[1] else 0.0
        sB[ty, tx] = B[k + ty, x] if k + ty < B.shape[0] and x < B.shape[1] else 0.0
        metal.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        metal.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = acc


def test_tiled_matrix_multiply_with_shared_memory():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((70, 45)).astype(np.float32)   # not multiples of the tile
    B = rng.standard_normal((45, 38)).astype(np.float32)
    C = np.zeros((70, 38), np.float32)
    grid = ((38 + TILE - 1) // TILE, (70 + TILE - 1) // TILE)
    matmul_tiled[grid, (TILE, TILE)](metal.to_device(A), metal.to_device(B), C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


# -- block and warp reductions ----------------------------------------------------------------------

BLOCK = 256


@metal.jit
def block_sum(x, partials):
    """Shared-memory tree reduction; one partial sum per threadgroup."""
    s = metal.shared.array(BLOCK, np.int32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    s[t] = x[i] if i < x.size else 0
    metal.syncthreads()
    width = BLOCK // 2
    while width > 0:
        if t < width:
            s[t] += s[t + width]
        metal.syncthreads()
        width //= 2
    if t == 0:
        partials[metal.blockIdx.x] = s[0]


@metal.jit
def warp_sum(x, total):
    """Warp-shuffle reduction, then one atomic per warp."""
    i = metal.grid(1)
    v = x[i] if i < x.size else 0
    offset = 16
    while offset > 0:
        v += metal.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if metal.laneid == 0:
        metal.atomic.add(total, 0, v)


def test_block_and_warp_reductions():
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, 100_000).astype(np.int32)
    blocks = (x.size + BLOCK - 1) // BLOCK
    partials = np.zeros(blocks, np.int32)
    block_sum[blocks, BLOCK](x, partials)
    np.testing.assert_array_equal(partials, np.add.reduceat(x, np.arange(0, x.size, BLOCK)))
    total = np.zeros(1, np.int32)
    warp_sum[blocks, BLOCK](x, total)
    assert total[0] == x.sum()


# -- histogram with atomics ---------------------------------------------------------------------------

BINS = 64


@metal.jit
def histogram(values, lo, hi, hist):
    """Per-threadgroup histogram in shared memory, merged into the global one with atomics."""
    local = metal.shared.array(BINS, np.uint32)
    t = metal.threadIdx.x
    for b in range(t, BINS, metal.blockDim.x):
        local[b] = 0
    metal.syncthreads()
    start, stride = metal.grid(1), metal.gridsize(1)
    for i in range(start, values.size, stride):
        b = int((values[i] - lo) / (hi - lo) * BINS)
        if 0 <= b < BINS:
            metal.atomic.add(local, b, np.uint32(1))
    metal.syncthreads()
    for b in range(t, BINS, metal.blockDim.x):
        metal.atomic.add(hist, b, local[b])


def test_histogram_with_shared_and_global_atomics():
    rng = np.random.default_rng(2)
    values = rng.standard_normal(200_000).astype(np.float32)
    hist = np.zeros(BINS, np.uint32)
    histogram[48, 128](values, np.float32(-4), np.float32(4), hist)   # many threadgroups racing
    b = ((values - np.float32(-4)) / np.float32(8) * BINS).astype(np.int64)
    expected = np.bincount(b[(b >= 0) & (b < BINS)], minlength=BINS)
    np.testing.assert_array_equal(hist, expected)


# -- prefix scan ---------------------------------------------------------------------------------------

SCAN_BLOCK = 256
SCAN_WARPS = SCAN_BLOCK // 32


@metal.jit
def scan_blocks(x, out, block_totals):
    """Inclusive scan of each threadgroup's elements: SIMD-group scans, then a scan of the SIMD-group
    totals in shared memory (Hillis-Steele)."""
    warp_totals = metal.shared.array(SCAN_WARPS, np.int32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    v = x[i] if i < x.size else np.int32(0)  # int32: Metal's SIMD scans have no 64-bit integers
    incl = metal.simd_prefix_inclusive_sum(v)
    lane, warp = metal.laneid, metal.simd_group_id()
    if lane == 31:
        warp_totals[warp] = incl
    metal.syncthreads()
    offset = 1
    while offset < SCAN_WARPS:
        add = 0
        if t < SCAN_WARPS and t >= offset:
            add = warp_totals[t - offset]
        metal.syncthreads()
        if t < SCAN_WARPS:
            warp_totals[t] += add
        metal.syncthreads()
        offset *= 2
    if warp > 0:
        incl += warp_totals[warp - 1]
    if i < x.size:
        out[i] = incl
    if t == SCAN_BLOCK - 1:
        block_totals[metal.blockIdx.x] = incl


@metal.jit
def add_block_offsets(out, scanned_totals):
    i = metal.grid(1)
    b = metal.blockIdx.x
    if b > 0 and i < out.size:
        out[i] += scanned_totals[b - 1]


def inclusive_scan(x):
    """Scan of any length: scan blocks, scan the block totals (recursively), add the offsets."""
    n = x.size
    blocks = (n + SCAN_BLOCK - 1) // SCAN_BLOCK
    out = metal.device_array(n, np.int32)
    totals = metal.device_array(blocks, np.int32)
    scan_blocks[blocks, SCAN_BLOCK](x, out, totals)
    if blocks > 1:
        add_block_offsets[blocks, SCAN_BLOCK](out, inclusive_scan(totals))
    return out


def test_prefix_scan():
    rng = np.random.default_rng(3)
    x = rng.integers(-50, 50, 100_003).astype(np.int32)   # three levels of blocks
    np.testing.assert_array_equal(inclusive_scan(metal.to_device(x)).copy_to_host(), np.cumsum(x))


# -- bitonic sort in threadgroup memory -------------------------------------------------------------

SORT = 512  # elements per threadgroup, two per thread


@metal.jit
def bitonic_sort_segments(keys):
    """Sorts each SORT-element segment of keys in threadgroup memory."""
    s = metal.shared.array(SORT, np.float32)
    t = metal.threadIdx.x
    base = metal.blockIdx.x * SORT
    s[t] = keys[base + t]
    s[t + SORT // 2] = keys[base + t + SORT // 2]
    size = 2
    while size <= SORT:
        stride = size // 2
        while stride > 0:
            metal.syncthreads()
            # Thread t compares the pair (lo, lo + stride) of its sub-block.
            lo = 2 * t - (t & (stride - 1))
            hi = lo + stride
            ascending = (lo & size) == 0
            a, b = s[lo], s[hi]
            if (a > b) == ascending:
                s[lo], s[hi] = b, a
            stride //= 2
        size *= 2
    metal.syncthreads()
    keys[base + t] = s[t]
    keys[base + t + SORT // 2] = s[t + SORT // 2]


def test_bitonic_sort_in_threadgroup_memory():
    rng = np.random.default_rng(4)
    keys = rng.standard_normal(SORT * 6).astype(np.float32)
    keys[:10] = keys[10]  # duplicates
    d = metal.to_device(keys)
    bitonic_sort_segments[6, SORT // 2](d)
    np.testing.assert_array_equal(d.copy_to_host(), np.sort(keys.reshape(6, SORT), axis=1).ravel())


# -- N-body with shared tiles ---------------------------------------------------------------------

NB_TILE = 64
SOFTENING = np.float32(1e-2)


@metal.jit
def nbody_accelerations(pos, mass, acc):
    tile = metal.shared.array((NB_TILE, 4), np.float32)
    i = metal.grid(1)
    t = metal.threadIdx.x
    n = pos.shape[0]
    xi = pos[i, 0] if i < n else 0.0
    yi = pos[i, 1] if i < n else 0.0
    zi = pos[i, 2] if i < n else 0.0
    ax = np.float32(0.0)
    ay = np.float32(0.0)
    az = np.float32(0.0)
    for start in range(0, n, NB_TILE):
        j = start + t
        if j < n:
            tile[t, 0] = pos[j, 0]
            tile[t, 1] = pos[j, 1]
            tile[t, 2] = pos[j, 2]
            tile[t, 3] = mass[j]
        else:
            tile[t, 3] = 0.0
            tile[t, 0] = 0.0
            tile[t, 1] = 0.0
            tile[t, 2] = 0.0
        metal.syncthreads()
        for k in range(NB_TILE):
            dx = tile[k, 0] - xi
            dy = tile[k, 1] - yi
            dz = tile[k, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + SOFTENING * SOFTENING
            inv = tile[k, 3] / (r2 * math.sqrt(r2))
            ax += dx * inv
            ay += dy * inv
            az += dz * inv
        metal.syncthreads()
    if i < n:
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


def test_nbody_with_shared_tiles():
    rng = np.random.default_rng(5)
    n = 300
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 1.5, n).astype(np.float32)
    acc = np.zeros((n, 3), np.float32)
    nbody_accelerations[(n + NB_TILE - 1) // NB_TILE, NB_TILE](pos, mass, acc)
    p = pos.astype(np.float64)
    d = p[None, :, :] - p[:, None, :]
    r2 = (d ** 2).sum(-1) + float(SOFTENING) ** 2
    expected = (d * (mass[None, :, None] / r2[..., None] ** 1.5)).sum(axis=1)
    np.testing.assert_allclose(acc, expected, rtol=2e-4, atol=2e-4 * np.abs(expected).max())


# -- Monte Carlo with the device RNG ----------------------------------------------------------------

MC_THREADS, MC_DRAWS = 64, 48


@metal.jit
def monte_carlo_pi(states, hits):
    i = metal.grid(1)
    if i < hits.size:
        count = 0
        for _ in range(MC_DRAWS):
            x = xoroshiro128p_uniform_float32(states, i)
            y = xoroshiro128p_uniform_float32(states, i)
            if x * x + y * y <= 1.0:
                count += 1
        hits[i] = count


def test_monte_carlo_pi_matches_numba_cuda_random_sequence():
    cuda_random = pytest.importorskip("numba.cuda.random")
    seed = 1234
    states = create_xoroshiro128p_states(MC_THREADS, seed)
    hits = np.zeros(MC_THREADS, np.int32)
    monte_carlo_pi[2, 32](states, hits)
    estimate = 4.0 * hits.sum() / (MC_THREADS * MC_DRAWS)
    assert abs(estimate - math.pi) < 0.1

    # The same computation on numba.cuda.random's own generator (its Python functions).
    ns = dict(vars(cuda_random))
    for name, obj in vars(cuda_random).items():
        f = getattr(obj, "py_func", None)
        if f is not None:
            ns[name] = pytypes.FunctionType(f.__code__, ns, name, f.__defaults__, f.__closure__)
    ref = pytypes.SimpleNamespace(**ns)
    rs = np.zeros(MC_THREADS, dtype=cuda_random.xoroshiro128p_dtype)
    expected = np.zeros(MC_THREADS, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref.init_xoroshiro128p_states_cpu(rs, seed, 0)
        for i in range(MC_THREADS):
            for _ in range(MC_DRAWS):
                x = ref.xoroshiro128p_uniform_float32(rs, i)
                y = ref.xoroshiro128p_uniform_float32(rs, i)
                expected[i] += (x * x + y * y) <= np.float32(1.0)
    np.testing.assert_array_equal(hits, expected)
