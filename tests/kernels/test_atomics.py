"""Atomics on device and threadgroup arrays, in numba.cuda's spelling (metal.atomic.*) and the earlier
numba-metal's (metal.atomic_add...), with many threadgroups so that updates really race on the CPU
device's worker pool. Each returns the old value: where the final value alone could hide a lost
update, the multiset of returned old values is checked too."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError

GROUPS, THREADS = 32, 64
N = GROUPS * THREADS


@metal.jit
def int_ops(acc, olds):
    """acc: int32[8]; olds: int32[N, 4] (returned old values)."""
    i = metal.grid(1)
    olds[i, 0] = metal.atomic.add(acc, 0, 1)
    olds[i, 1] = metal.atomic.sub(acc, 1, 1)
    olds[i, 2] = metal.atomic.exch(acc, 2, i)
    metal.atomic.max(acc, 3, i * 7 % N)
    metal.atomic.min(acc, 4, -(i * 5 % N))
    metal.atomic.and_(acc, 5, ~(1 << (i % 31)))
    metal.atomic.or_(acc, 6, 1 << (i % 31))
    olds[i, 3] = metal.atomic.xor(acc, 7, 1 << (i % 4))


def test_int32_device_atomics_return_old_values():
    acc = np.array([0, 0, -1, -N, N, -1, 0, 0], np.int32)
    olds = np.zeros((N, 4), np.int32)
    int_ops[GROUPS, THREADS](acc, olds)
    assert acc[0] == N and acc[1] == -N
    np.testing.assert_array_equal(np.sort(olds[:, 0]), np.arange(N))          # every old value once
    np.testing.assert_array_equal(np.sort(olds[:, 1]), -np.arange(N)[::-1])
    # exch: the old values and the final value are the initial -1 and every thread's i, once each.
    np.testing.assert_array_equal(np.sort(np.append(olds[:, 2], acc[2])), np.append(-1, np.arange(N)))
    assert acc[3] == (np.arange(N) * 7 % N).max()
    assert acc[4] == -(np.arange(N) * 5 % N).max()
    assert acc[5] == np.int32(-1) & ~np.int32(0x7FFFFFFF)  # every low 31 bits cleared
    assert acc[6] == 0x7FFFFFFF
    assert acc[7] == 0  # each bit flipped N/4 times, an even number
    # xor's old values: a valid serialisation exists only if each old value has even parity history;
    # at least check they are values the word could hold (4 low bits only).
    assert ((olds[:, 3] & ~0xF) == 0).all()


@metal.jit
def uint_ops(acc, olds):
    """acc: uint32[6]. inc/dec wrap as numba.cuda's (CUDA's atomicInc/atomicDec)."""
    i = metal.grid(1)
    olds[i, 0] = metal.atomic.inc(acc, 0, np.uint32(9))
    olds[i, 1] = metal.atomic.dec(acc, 1, np.uint32(9))
    metal.atomic.add(acc, 2, np.uint32(3))
    metal.atomic.sub(acc, 3, np.uint32(1))
    metal.atomic.max(acc, 4, np.uint32(i))
    metal.atomic.min(acc, 5, np.uint32(i + 5))


def _inc_model(n, start, v):
    olds, x = [], start
    for _ in range(n):
        olds.append(x)
        x = 0 if x >= v else x + 1
    return x, sorted(olds)


def _dec_model(n, start, v):
    olds, x = [], start
    for _ in range(n):
        olds.append(x)
        x = v if (x == 0 or x > v) else x - 1
    return x, sorted(olds)


def test_uint32_atomics_inc_dec_wraparound():
    acc = np.array([0, 0, 0, 0, 0, 0xFFFFFFFF], np.uint32)
    olds = np.zeros((N, 2), np.uint32)
    uint_ops[GROUPS, THREADS](acc, olds)
    final, expected_olds = _inc_model(N, 0, 9)
    assert acc[0] == final
    np.testing.assert_array_equal(np.sort(olds[:, 0]), expected_olds)
    final, expected_olds = _dec_model(N, 0, 9)
    assert acc[1] == final
    np.testing.assert_array_equal(np.sort(olds[:, 1]), expected_olds)
    assert acc[2] == 3 * N
    assert acc[3] == (-N) % 2**32  # unsigned wraparound
    assert acc[4] == N - 1 and acc[5] == 5


@metal.jit
def float_ops(acc, olds, values):
    i = metal.grid(1)
    v = values[i]
    olds[i] = metal.atomic.add(acc, 0, 0.5)  # native atomic_float on device memory
    metal.atomic.sub(acc, 1, 0.25)
    metal.atomic.max(acc, 2, v)
    metal.atomic.min(acc, 3, v)
    metal.atomic.nanmax(acc, 4, v)
    metal.atomic.nanmin(acc, 5, v)
    metal.atomic.max(acc, 6, v)      # acc[6] starts as NaN: max keeps it (numba.cuda)
    metal.atomic.nanmax(acc, 7, v)   # acc[7] starts as NaN: nanmax replaces it
    metal.atomic.exch(acc, 8, v)


def test_float32_atomics_and_nan_rules():
    rng = np.random.default_rng(1)
    values = rng.standard_normal(N).astype(np.float32)
    values[[5, 700]] = np.nan  # NaN values are ignored by max/min and nanmax/nanmin alike
    acc = np.array([0, 0, -np.inf, np.inf, -np.inf, np.inf, np.nan, np.nan, 0], np.float32)
    olds = np.zeros(N, np.float32)
    float_ops[GROUPS, THREADS](acc, olds, values)
    assert acc[0] == 0.5 * N and acc[1] == -0.25 * N  # exact: multiples of 2**-2
    np.testing.assert_array_equal(np.sort(olds), np.arange(N) * 0.5)
    assert acc[2] == np.nanmax(values) and acc[3] == np.nanmin(values)
    assert acc[4] == np.nanmax(values) and acc[5] == np.nanmin(values)
    assert np.isnan(acc[6])
    assert acc[7] == np.nanmax(values)
    assert acc[8] in values or np.isnan(acc[8])


@metal.jit
def shared_ops(out_i, out_u, out_f):
    """Per-threadgroup accumulators in threadgroup memory (2-d, tuple indices), then one device write."""
    si = metal.shared.array((2, 2), np.int32)
    su = metal.shared.array(2, np.uint32)
    sf = metal.shared.array((2, 2), np.float32)
    t = metal.threadIdx.x
    g = metal.blockIdx.x
    if t == 0:
        si[0, 0] = 0
        si[0, 1] = 0
        si[1, 0] = 0
        si[1, 1] = 1 << 30
        su[0] = 0
        su[1] = 0
        sf[0, 0] = 0.0
        sf[0, 1] = -1e30
        sf[1, 0] = 1e30
        sf[1, 1] = 0.0
    metal.syncthreads()
    metal.atomic.add(si, (0, 0), 1)
    metal.atomic.max(si, (0, 1), t)
    metal.atomic.or_(si, (1, 0), 1 << (t % 8))
    metal.atomic.min(si, (1, 1), t + 3)
    metal.atomic.inc(su, 0, np.uint32(6))
    metal.atomic.xor(su, 1, np.uint32(t))
    metal.atomic.add(sf, (0, 0), 0.25)   # float on threadgroup memory: a compare-and-swap loop
    metal.atomic.max(sf, (0, 1), np.float32(t))
    metal.atomic.min(sf, (1, 0), np.float32(t))
    metal.atomic.sub(sf, (1, 1), 1.0)
    metal.syncthreads()
    if t == 0:
        out_i[g, 0] = si[0, 0]
        out_i[g, 1] = si[0, 1]
        out_i[g, 2] = si[1, 0]
        out_i[g, 3] = si[1, 1]
        out_u[g, 0] = su[0]
        out_u[g, 1] = su[1]
        out_f[g, 0] = sf[0, 0]
        out_f[g, 1] = sf[0, 1]
        out_f[g, 2] = sf[1, 0]
        out_f[g, 3] = sf[1, 1]


def test_threadgroup_memory_atomics_with_tuple_indices():
    out_i = np.zeros((GROUPS, 4), np.int32)
    out_u = np.zeros((GROUPS, 2), np.uint32)
    out_f = np.zeros((GROUPS, 4), np.float32)
    shared_ops[GROUPS, THREADS](out_i, out_u, out_f)
    assert (out_i == [THREADS, THREADS - 1, 0xFF, 3]).all()
    assert (out_u[:, 0] == _inc_model(THREADS, 0, 6)[0]).all()
    assert (out_u[:, 1] == np.bitwise_xor.reduce(np.arange(THREADS, dtype=np.uint32))).all()
    assert (out_f == [0.25 * THREADS, THREADS - 1, 0, -THREADS]).all()


@metal.jit
def nd_device(grid3, counts):
    i = metal.grid(1)
    metal.atomic.add(grid3, (i % 2, i % 3, i % 5), 1)
    metal.atomic_add(counts, (i % 4, i % 2), 1.0)


def test_nd_device_arrays_with_tuple_indices():
    grid3 = np.zeros((2, 3, 5), np.int32)
    counts = np.zeros((4, 2), np.float32)
    nd_device[GROUPS, THREADS](grid3, counts)
    i = np.arange(N)
    np.testing.assert_array_equal(grid3, np.histogramdd(np.stack([i % 2, i % 3, i % 5], 1),
                                                        bins=(2, 3, 5), range=((0, 2), (0, 3), (0, 5)))[0])
    np.testing.assert_array_equal(counts, np.histogram2d(i % 4, i % 2, bins=(4, 2),
                                                         range=((0, 4), (0, 2)))[0])


@metal.jit
def float_index_components(grid2, flat, shared_out):
    """numba.cuda converts each index component to intp (truncating a float, like int(x)): Numba merges
    int64 and uint64 into float64, so (tx, uint64(ty)) unified with an int64 tuple is Tuple(int64, float64)."""
    tx = metal.threadIdx.x
    ty = metal.threadIdx.y
    sm = metal.shared.array((4, 8), np.uint32)
    sm[tx, ty] = 0
    metal.syncthreads()
    idx = (tx, np.uint64(ty))
    if tx > 100:   # never: only there to merge the tuple's types, as numba-cuda's test_atomic_add3 does
        idx = (tx % 4, ty % 8)
    metal.atomic.add(sm, idx, np.uint32(1))
    metal.atomic.add(grid2, idx, 1)
    metal.atomic.inc(flat, ty + 0.75, np.uint32(100))   # a scalar float index of a 1-d array: ty
    metal.syncthreads()
    shared_out[tx, ty] = sm[tx, ty]


def test_float_index_components_are_converted_to_integers_as_numba_cuda_does():
    grid2 = np.zeros((4, 8), np.int32)
    flat = np.zeros(8, np.uint32)
    shared_out = np.zeros((4, 8), np.uint32)
    float_index_components[1, (4, 8)](grid2, flat, shared_out)
    assert (grid2 == 1).all() and (shared_out == 1).all()
    np.testing.assert_array_equal(flat, np.full(8, 4, np.uint32))


@metal.jit
def elections(lock, winners, cas_olds, ce, flags, fl):
    """Exactly one thread wins each election."""
    i = metal.grid(1)
    old = metal.atomic.cas(lock, (0, 1), 0, i + 1)       # N-d cas with a tuple index
    cas_olds[i] = old
    if old == 0:
        metal.atomic.add(winners, 0, 1)
    if metal.atomic.compare_and_swap(flags, 0, i + 1) == 0:
        metal.atomic.add(winners, 1, 1)
    o, ok = metal.atomic_compare_exchange(ce, 0, 0, i + 1)
    if ok:
        metal.atomic.add(winners, 2, 1)
        winners[3] = o
    fo, fok = metal.atomic_compare_exchange(fl, 0, np.float32(0.0), np.float32(i + 1))
    if fok:
        metal.atomic.add(winners, 4, 1)


def test_cas_compare_and_swap_and_compare_exchange_elect_one_thread():
    lock = np.zeros((2, 2), np.int32)
    winners = np.zeros(5, np.int32)
    cas_olds = np.zeros(N, np.int32)
    ce = np.zeros(1, np.uint32)
    flags = np.zeros(3, np.int32)
    fl = np.zeros(1, np.float32)
    elections[GROUPS, THREADS](lock, winners, cas_olds, ce, flags, fl)
    np.testing.assert_array_equal(winners, [1, 1, 1, 0, 1])
    assert 1 <= lock[0, 1] <= N and (cas_olds == 0).sum() == 1
    assert (cas_olds[cas_olds != 0] == lock[0, 1]).all()  # losers saw the winner's value
    assert 1 <= ce[0] <= N and 1 <= flags[0] <= N and 1 <= fl[0] <= N


@metal.jit
def seed_spellings(acc, olds, f):
    i = metal.grid(1)
    olds[i] = metal.atomic_add(acc, 0, 2)
    metal.atomic_sub(acc, 1, 3)
    metal.atomic_max(acc, 2, i)
    metal.atomic_min(acc, 3, i - 7)
    metal.atomic_exchange(acc, 4, 42)
    metal.atomic_max(f, 0, np.float32(i) * 0.5)
    metal.atomic_min(f, 1, np.float32(i) * 0.5)


def test_earlier_numba_metal_spellings():
    acc = np.zeros(5, np.int32)
    olds = np.zeros(N, np.int32)
    f = np.zeros(2, np.float32)
    seed_spellings[GROUPS, THREADS](acc, olds, f)
    np.testing.assert_array_equal(acc, [2 * N, -3 * N, N - 1, -7, 42])
    np.testing.assert_array_equal(np.sort(olds), 2 * np.arange(N))
    np.testing.assert_array_equal(f, [(N - 1) * 0.5, 0.0])


# -- what Metal cannot do: clear compile errors -------------------------------------------------


def _compile(body, argtypes):
    ns = {"metal": metal, "np": np}
    exec("def k(a, b):\n" + "".join(f"    {line}\n" for line in body.splitlines()), ns)
    return metal.compile_msl(ns["k"], argtypes)


_CALLS_64 = ["metal.atomic.add(a, 0, 1)", "metal.atomic.max(a, 0, 1)", "metal.atomic.cas(a, 0, 0, 1)",
             "metal.atomic_add(a, 0, 1)", "metal.atomic_compare_exchange(a, 0, 0, 1)",
             "b[0] = metal.atomic.min(a, 0, 1)", "s = metal.shared.array(4, np.uint64)\nmetal.atomic.max(s, 0, a[0])"]


# uint64 max as a statement is what Metal has (test_uint64_max_and_min_with_the_result_unused_run)
@pytest.mark.parametrize("dtype, call", [(d, c) for d in (types.int64, types.uint64, types.float64)
                                         for c in _CALLS_64 if (d, c) != (types.uint64, _CALLS_64[1])])
def test_64_bit_atomics_metal_lacks_are_refused_saying_what_exists(dtype, call):
    with pytest.raises(UnsupportedFeatureError, match="64-bit") as e:
        _compile(call, (dtype[::1], types.uint64[::1]))
    # what Metal does have, said exactly (issue 27 item 9)
    assert ("Metal's only 64-bit atomics are max and min of uint64 in device memory, which return no old value "
            "(MSL 3.1 atomic_ulong, on Apple9 GPUs and M2-class GPUs)") in str(e.value)


@metal.jit
def u64_max_min(res, a):
    i = metal.grid(1)
    if i < a.size:
        metal.atomic.max(res, 0, a[i])       # statements: the old value is unused
        metal.atomic.min(res, 1, a[i])
        metal.atomic.nanmax(res, 2, a[i])
        metal.atomic.nanmin(res, 3, a[i])


def test_uint64_max_and_min_with_the_result_unused_run():
    # MSL 3.1 §6.15.4: atomic_max_explicit/atomic_min_explicit on device atomic_ulong, returning void (CPU
    # device: the shim's; the simulated Metal device: its Apple9 profile)
    rng = np.random.default_rng(7)
    a = rng.integers(0, 2**64 - 1, size=1000, dtype=np.uint64, endpoint=True)
    a[17] = 2**64 - 1
    a[400] = 2**63 + 5                   # above int64's range: compared as unsigned
    res = np.array([0, 2**64 - 1, 0, 2**64 - 1], np.uint64)
    u64_max_min[8, 128](res, a)
    np.testing.assert_array_equal(res, [a.max(), a.min(), a.max(), a.min()])
    msl = next(iter(u64_max_min.inspect_msl().values()))
    assert "atomic_max_explicit(((device atomic_ulong*)" in msl and "atomic_min_explicit(((device atomic_ulong*)" in msl


def test_a_gpu_without_64_bit_atomics_refuses_the_kernel_by_name():
    code = """
import numpy as np
from numba_metal import metal

@metal.jit
def k(res, a):
    metal.atomic.max(res, 0, a[metal.grid(1)])

res = np.zeros(1, np.uint64)
try:
    k[1, 4](res, np.arange(4, dtype=np.uint64))
    print("RAN", res[0])
except metal.NumbaMetalError as e:
    print("REFUSED", e)
"""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = {}
    for gpu in ("apple8", "apple9"):
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   NUMBA_METAL_DEVICE="metal-sim", NUMBA_METAL_SIM_GPU=gpu)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                           cwd=root)
        assert r.returncode == 0, r.stderr
        out[gpu] = r.stdout
    assert "RAN 3" in out["apple9"]
    assert "REFUSED" in out["apple8"] and "uses 64-bit atomics (atomic max/min of uint64)" in out["apple8"]
    assert "Simulated Apple GPU (family Apple8)" in out["apple8"]


@pytest.mark.parametrize("call, message", [
    ("metal.atomic.and_(b, 0, 1.0)", "int32 or uint32"),
    ("metal.atomic.inc(a, 0, 1)", "uint32"),
    ("metal.atomic.cas(b, 0, 0.0, 1.0)", "int32 or uint32"),
    ("metal.atomic.add(a, (0, 1), 1)", "index"),
    ("metal.atomic.add(a, 1j, 1)", "index must be 1 integer"),
    ("metal.atomic.add(a, (0, 1j), 1)", "index must be 1 integer"),
    ("x = metal.local.array(4, np.int32)\nmetal.atomic.add(x, 0, 1)", "device and shared"),
])
def test_other_unsupported_atomics_are_refused_clearly(call, message):
    with pytest.raises(UnsupportedFeatureError, match=message):
        _compile(call, (types.int32[::1], types.float32[::1]))
