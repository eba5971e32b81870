"""Hand-written MSL through the binding on the CPU device: indexing, barriers, atomics, SIMD groups, numerics."""

from __future__ import annotations

import numpy as np
import pytest

from runtime_helpers import from_buffer, launch, pack, to_buffer

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def test_vector_add_matches_numpy(device, queue):
    src = HEADER + """
    // comments, [[attributes]] on their own lines and qualifiers are tolerated
    kernel void vadd(device const float* __restrict a [[buffer(0)]], /* b: */ device const float* b
                     [[buffer(1)]],
                     device float* c [[buffer(2)]], constant uint& n [[buffer(3)]],
                     uint gid [[thread_position_in_grid]]) {
        if (gid < n) c[gid] = a[gid] + b[gid];
    }"""
    n = 10_000
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    b = np.random.default_rng(1).random(n, dtype=np.float32)
    bufs = [to_buffer(device, a), to_buffer(device, b), device.new_buffer(4 * n)]
    launch(queue, device.compile(src, "vadd"), bufs, ((n + 255) // 256, 1, 1), (256, 1, 1), pack("I", n))
    queue.wait()
    np.testing.assert_array_equal(from_buffer(bufs[2], np.float32, n), a + b)


def test_2d_kernel_with_uint2_position(device, queue):
    src = HEADER + """
    struct Shape { uint w; uint h; };
    kernel void fill2d(device uint* out [[buffer(0)]], constant Shape& s [[buffer(1)]],
                       uint2 pos [[thread_position_in_grid]], uint2 grid [[threads_per_grid]]) {
        if (pos.x < s.w && pos.y < s.h) out[pos.y * s.w + pos.x] = pos.y * 1000 + pos.x + grid.x * 0;
    }"""
    w, h = 37, 19
    out = device.new_buffer(4 * w * h)
    launch(queue, device.compile(src, "fill2d"), [out], ((w + 7) // 8, (h + 3) // 4, 1), (8, 4, 1), pack("II", w, h))
    queue.wait()
    got = from_buffer(out, np.uint32, w * h).reshape(h, w)
    yy, xx = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(got, (yy * 1000 + xx).astype(np.uint32))


REDUCE = HEADER + """
kernel void reduce(device const float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                   uint tid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                   uint group [[threadgroup_position_in_grid]], uint size [[threads_per_threadgroup]]) {
    threadgroup float tile[1024];
    tile[tid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = size / 2; s > 0; s >>= 1) {
        if (tid < s) tile[tid] += tile[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (tid == 0) partial[group] = tile[0];
}"""


@pytest.mark.parametrize("threads", [256, 1024])
def test_threadgroup_reduction_with_barriers(device, queue, threads):
    groups = 8
    x = np.arange(groups * threads, dtype=np.float32) % 97
    xb, pb = to_buffer(device, x), device.new_buffer(4 * groups)
    pipe = device.compile(REDUCE, "reduce")
    assert pipe.static_threadgroup_memory == 4096
    launch(queue, pipe, [xb, pb], (groups, 1, 1), (threads, 1, 1))
    queue.wait()
    np.testing.assert_array_equal(from_buffer(pb, np.float32, groups), x.reshape(groups, threads).sum(axis=1))


def test_dynamic_threadgroup_memory(device, queue):
    src = HEADER + """
    kernel void rev(device int* x [[buffer(0)]], threadgroup int* tile [[threadgroup(0)]],
                    uint tid [[thread_index_in_threadgroup]], uint n [[threads_per_threadgroup]],
                    uint gid [[thread_position_in_grid]]) {
        tile[tid] = x[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        x[gid] = tile[n - 1 - tid];
    }"""
    x = np.arange(4 * 64, dtype=np.int32)
    xb = to_buffer(device, x)
    launch(queue, device.compile(src, "rev"), [xb], (4, 1, 1), (64, 1, 1), threadgroup_memory=[64 * 4])
    queue.wait()
    np.testing.assert_array_equal(from_buffer(xb, np.int32, x.size), x.reshape(4, 64)[:, ::-1].ravel())


def test_atomic_histogram_across_workers(device, queue):
    src = HEADER + """
    kernel void hist(device const uint* x [[buffer(0)]], device atomic_uint* bins [[buffer(1)]],
                     device atomic_int* total [[buffer(2)]], device atomic_float* fsum [[buffer(3)]],
                     uint gid [[thread_position_in_grid]]) {
        atomic_fetch_add_explicit(&bins[x[gid] % 16], 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(total, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(fsum, 1.0f, memory_order_relaxed);
    }"""
    n = 1 << 18
    x = np.random.default_rng(2).integers(0, 1 << 20, n, dtype=np.uint32)
    bufs = [to_buffer(device, x), device.new_buffer(64), device.new_buffer(4), device.new_buffer(4)]
    launch(queue, device.compile(src, "hist"), bufs, (n // 64, 1, 1), (64, 1, 1))
    queue.wait()
    np.testing.assert_array_equal(from_buffer(bufs[1], np.uint32, 16), np.bincount(x % 16, minlength=16))
    assert from_buffer(bufs[2], np.int32, 1)[0] == n
    assert from_buffer(bufs[3], np.float32, 1)[0] == n  # exact below 2^24


def test_simd_sum_and_shuffle_down_no_wrap(device, queue):
    src = HEADER + """
    kernel void simd_ops(device const int* x [[buffer(0)]], device int* sums [[buffer(1)]],
                     device int* down [[buffer(2)]], device int* xr [[buffer(3)]], device uint* ballot [[buffer(4)]],
                     uint gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
        int v = x[gid];
        sums[gid] = simd_sum(v);
        down[gid] = simd_shuffle_down(v, 4);
        xr[gid] = simd_shuffle_xor(v, 1) + simd_prefix_exclusive_sum(1) * 1000;
        ballot[gid] = (uint)(ulong)simd_ballot((v & 1) != 0);
    }"""
    n = 128
    x = np.arange(n, dtype=np.int32) * 3 + 1
    bufs = [to_buffer(device, x)] + [device.new_buffer(4 * n) for _ in range(4)]
    launch(queue, device.compile(src, "simd_ops"), bufs, (2, 1, 1), (64, 1, 1))
    queue.wait()
    groups = x.reshape(-1, 32)
    np.testing.assert_array_equal(from_buffer(bufs[1], np.int32, n), np.repeat(groups.sum(axis=1), 32))
    expected_down = groups.copy()
    expected_down[:, :28] = groups[:, 4:]  # lanes 28..31 keep their own value: no wrap
    np.testing.assert_array_equal(from_buffer(bufs[2], np.int32, n), expected_down.ravel())
    lane = np.arange(n) % 32
    np.testing.assert_array_equal(from_buffer(bufs[3], np.int32, n), x[np.arange(n) ^ 1] + lane * 1000)
    bits = [sum(1 << i for i in range(32) if g[i] & 1) for g in groups]
    np.testing.assert_array_equal(from_buffer(bufs[4], np.uint32, n), np.repeat(np.array(bits, dtype=np.uint32), 32))


def test_partial_simd_group_and_early_exit(device, queue):
    # 48 threads: SIMD group 1 has 16 lanes; exited work-items leave SIMD groups (SIMD-group functions act
    # on the active lanes). A barrier after the early exit would be undefined behaviour (every thread of the
    # threadgroup must reach it): test_errors.py checks the CPU device reports it.
    src = HEADER + """
    kernel void k(device int* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
        if (tid % 2 == 1 && tid >= 32) return;
        out[tid] = simd_sum(1);
    }"""
    out = device.new_buffer(4 * 48)
    launch(queue, device.compile(src, "k"), [out], (1, 1, 1), (48, 1, 1))
    queue.wait()
    got = from_buffer(out, np.int32, 48)
    assert (got[:32] == 32).all()
    assert (got[32::2] == 8).all() and (got[33::2] == 0).all()


def test_half_arithmetic_rounds_per_operation(device, queue):
    src = HEADER + """
    kernel void h(device const half* a [[buffer(0)]], device half* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
        half x = a[0], y = a[1], z = a[2];
        out[0] = x * y + z;
        out[1] = half4(x, y, z, x).y + half(0.5f);
        out[2] = sqrt(a[3]);
    }"""
    a = np.array([1 + 1 / 1024, 1 + 2 / 1024, -1, 2.0], dtype=np.float16)
    bufs = [to_buffer(device, a), device.new_buffer(8)]
    launch(queue, device.compile(src, "h"), bufs, (1, 1, 1), (1, 1, 1))
    queue.wait()
    got = from_buffer(bufs[1], np.float16, 3)
    assert got[0] == (a[0] * a[1]) + a[2]  # rounded product then sum, as NumPy float16 does
    assert got[1] == np.float16(a[1] + np.float16(0.5))
    assert got[2] == np.sqrt(np.float16(2.0))


def test_nan_to_int_is_zero_and_denormals_flush(device, queue):
    src = HEADER + """
    kernel void num(device const float* x [[buffer(0)]], device int* i [[buffer(1)]], device float* f [[buffer(2)]],
                    device half* h [[buffer(3)]], uint t [[thread_position_in_grid]]) {
        i[0] = (int)x[0];              // NaN -> 0
        i[1] = (int)(uint)x[0];
        f[0] = x[1] * 2.0f;            // subnormal input flushed
        f[1] = x[2] * 0.5f;            // subnormal result flushed
        h[0] = (half)(x[3]) * (half)2.0f;  // half subnormals are kept
        f[2] = 1.0 / x[4];             // unsuffixed literal is float
    }"""
    x = np.array([np.nan, np.frombuffer(np.uint32(0x00400000).tobytes(), np.float32)[0],
                  np.frombuffer(np.uint32(0x00800000).tobytes(), np.float32)[0], 2.0 ** -24, 3.0], dtype=np.float32)
    bufs = [to_buffer(device, x), device.new_buffer(8), device.new_buffer(12), device.new_buffer(2)]
    launch(queue, device.compile(src, "num"), bufs, (1, 1, 1), (1, 1, 1))
    queue.wait()
    assert list(from_buffer(bufs[1], np.int32, 2)) == [0, 0]
    f = from_buffer(bufs[2], np.float32, 3)
    assert f[0] == 0.0 and f[1] == 0.0
    assert f[2] == np.float32(1) / np.float32(3)
    assert from_buffer(bufs[3], np.float16, 1)[0] == np.float16(2.0 ** -23)


def test_fast_path_and_fiber_path_agree_on_builtins(device, queue):
    body = """
    kernel void ids(device uint4* out [[buffer(0)]], uint3 gid [[thread_position_in_grid]], uint3 tg [[threadgroup_position_in_grid]],
                    uint3 lid [[thread_position_in_threadgroup]], uint li [[thread_index_in_threadgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
        uint flat = (gid.z * 6 + gid.y) * 20 + gid.x;
        SYNC
        out[flat] = uint4(tg.x + 10 * tg.y + 100 * tg.z, lid.x + 10 * lid.y + 100 * lid.z, li, sg + 1000 * ntg.x);
    }"""
    results = []
    for sync in ("", "threadgroup_barrier(mem_flags::mem_none);"):
        src = HEADER + body.replace("SYNC", sync)
        out = device.new_buffer(16 * 20 * 6 * 2)
        launch(queue, device.compile(src, "ids"), [out], (2, 2, 2), (10, 3, 1))
        queue.wait()
        results.append(from_buffer(out, np.uint32, 4 * 240).reshape(-1, 4))
    np.testing.assert_array_equal(results[0], results[1])
    r = results[0].reshape(2, 6, 20, 4)
    assert r[1, 5, 19, 0] == 1 + 10 + 100 and r[1, 5, 19, 1] == 9 + 20 and r[1, 5, 19, 2] == 29 and r[1, 5, 19, 3] == 2000


def test_fast_math_compiles_separately_and_runs(device, queue):
    src = HEADER + """
    kernel void fm(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] / 3.0f + exp(0.0f); }"""
    safe = device.compile(src, "fm")
    fast = device.compile(src, "fm", fast_math=True)
    assert fast.handle != safe.handle
    buf = to_buffer(device, np.full(64, 3.0, dtype=np.float32))
    launch(queue, fast, [buf], (1, 1, 1), (64, 1, 1))
    queue.wait()
    np.testing.assert_allclose(from_buffer(buf, np.float32, 64), 2.0, rtol=1e-6)


def test_two_level_reduction_with_simd_sum_and_barrier(device, queue):
    src = HEADER + """
    kernel void red2(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
        threadgroup float partial[32];
        float s = simd_sum(x[gid]);
        if (lane == 0) partial[sg] = s;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (sg != 0) return;
        float v = lane < nsg ? partial[lane] : 0.0f;
        float total = simd_sum(v);
        if (tid == 0) out[group] = total;
    }"""
    groups, threads = 6, 1024
    x = (np.arange(groups * threads) % 13).astype(np.float32)
    xb, ob = to_buffer(device, x), device.new_buffer(4 * groups)
    launch(queue, device.compile(src, "red2"), [xb, ob], (groups, 1, 1), (threads, 1, 1))
    queue.wait()
    np.testing.assert_array_equal(from_buffer(ob, np.float32, groups), x.reshape(groups, threads).sum(axis=1))
