"""numba.cuda's float64 idioms, written as numba.cuda users write them, on float64 NumPy data: a
shared-memory dot product, a 5-point stencil, a grid-stride sum and a Monte Carlo integral with float64
random numbers. Each is compared exactly with NumPy computing the same operations in the same order
(emulated float64 is bit-identical to NumPy's for + - * /)."""

from __future__ import annotations

import numpy as np

from numba_metal import metal
from numba_metal.random import create_xoroshiro128p_states, xoroshiro128p_uniform_float64

TPB = 128


@metal.jit
def dot_partials(a, b, partial):
    cache = metal.shared.array(TPB, np.float64)
    t = metal.threadIdx.x
    i = metal.grid(1)
    acc = 0.0
    while i < a.size:
        acc += a[i] * b[i]
        i += metal.gridsize(1)
    cache[t] = acc
    metal.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
        metal.syncthreads()
        step //= 2
    if t == 0:
        partial[metal.blockIdx.x] = cache[0]


def test_shared_memory_dot_product_is_numpys_in_the_same_order():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(10_000), rng.standard_normal(10_000)
    blocks = 8
    partial = np.zeros(blocks)
    dot_partials[blocks, TPB](a, b, partial)
    metal.synchronize()
    stride = blocks * TPB
    threads = np.zeros(stride)
    for start in range(0, a.size, stride):      # each thread's grid-stride accumulation, in order
        n = min(stride, a.size - start)
        threads[:n] = threads[:n] + a[start:start + n] * b[start:start + n]
    cache = threads.reshape(blocks, TPB).copy()
    step = TPB // 2
    while step > 0:                              # the tree, as the kernel combines it
        cache[:, :step] = cache[:, :step] + cache[:, step:2 * step]
        step //= 2
    np.testing.assert_array_equal(partial.view(np.uint64), cache[:, 0].view(np.uint64))
    assert abs(partial.sum() - a @ b) < 1e-9 * np.abs(a * b).sum()


@metal.jit
def jacobi(u, out):
    i, j = metal.grid(2)
    if 0 < i < u.shape[0] - 1 and 0 < j < u.shape[1] - 1:
        out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


def test_five_point_stencil_is_numpys_bit_for_bit():
    u = np.random.default_rng(2).standard_normal((70, 90))
    out = np.zeros_like(u)
    jacobi[(9, 12), (8, 8)](u, out)
    metal.synchronize()
    want = np.zeros_like(u)
    want[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    np.testing.assert_array_equal(out.view(np.uint64), want.view(np.uint64))


@metal.jit
def integrate(states, samples, out):
    i = metal.grid(1)
    if i < out.size:
        acc = 0.0
        for _ in range(samples):
            x = xoroshiro128p_uniform_float64(states, i)
            acc += x * x
        out[i] = acc / samples


def test_monte_carlo_with_float64_random_numbers():
    n, samples = 256, 200
    states = create_xoroshiro128p_states(n, seed=5)
    start = states.copy_to_host()
    out = np.zeros(n)
    integrate[2, TPB](states, samples, out)
    metal.synchronize()
    # The same xoroshiro128+ streams in NumPy: the uniforms are the top 53 bits times 2**-53.
    s0, s1 = start["s0"].copy(), start["s1"].copy()
    acc = np.zeros(n)
    with np.errstate(over="ignore"):
        for _ in range(samples):
            x = (((s0 + s1) >> np.uint64(11)).astype(np.float64)) * 2.0 ** -53
            acc = acc + x * x
            s1 ^= s0
            s0 = ((s0 << np.uint64(55)) | (s0 >> np.uint64(9))) ^ s1 ^ (s1 << np.uint64(14))
            s1 = (s1 << np.uint64(36)) | (s1 >> np.uint64(28))
    np.testing.assert_array_equal(out.view(np.uint64), (acc / samples).view(np.uint64))
    assert abs(out.mean() - 1 / 3) < 0.01


def test_grid_stride_sum_with_reduce_sum_matches_a_float64_tree_not_float32():
    x = np.full(1_000_003, 0.1)
    total = metal.reduce_sum(x)
    assert isinstance(total, np.float64)
    assert abs(total - 100000.3) < 1e-6     # float32 accumulation would be off by about 1
