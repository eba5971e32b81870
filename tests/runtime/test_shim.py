"""The Metal shim's library surface: a broad kernel compiles and computes what MSL defines."""

from __future__ import annotations

import math

import numpy as np

from runtime_helpers import from_buffer, launch, to_buffer

# MSL's library on the CPU device's shim, and on Apple's GPU where there is one (the simulated Metal
# device runs the very shim the CPU device does: nothing to learn there).
DEVICES = ("cpu", "metal")

SHIM_KERNEL = r"""
#include <metal_stdlib>
#include <simd/simd.h>
using namespace metal;

template <typename T> T twice(T x) { return x + x; }   // templates are fine
constant float kTable[3] = {1.0f, 2.0f, 4.0f};          // program-scope constant data

kernel void surface(device float* f [[buffer(0)]], device int* i [[buffer(1)]],
                    device atomic_int* counter [[buffer(2)]],
                    uint gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]],
                    uint tid [[thread_index_in_threadgroup]]) {
    threadgroup atomic_int local_count;
    threadgroup float2 pairs[64];
    if (tid == 0) atomic_store_explicit(&local_count, 0, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&local_count, 1, memory_order_relaxed);
    pairs[tid] = float2(float(tid), 1.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
    if (gid != 0) return;

    float4 v = float4(float2(1.0f, 4.0f), 9.0f, 16.0f);
    float4 r = sqrt(v);                                  // element-wise
    f[0] = r.x + r.y + r.z + r.w;                        // 10
    f[1] = dot(v.xy, float2(1.0f));                      // 5
    f[2] = clamp(7.5f, 0.0f, 2.0f) + min(3.0f, 1.0f) + max(2.0f, -1.0f);  // 5
    f[3] = fma(2.0f, 3.0f, 1.0f) + fract(2.25f) + trunc(-1.5f) + rint(2.5f); // 7 + 0.25 - 1 + 2
    float c;
    float s = sincos(0.0f, c);
    f[4] = s + c + exp2(3.0f) + log2(8.0f) + powr(2.0f, 3.0f);  // 0 + 1 + 8 + 3 + 8
    f[5] = select(1.0f, 2.0f, true) + copysign(3.0f, -1.0f) + fmod(7.0f, 4.0f);  // 2 - 3 + 3
    f[6] = as_type<float>(0x3f800000u) + kTable[2] + twice(0.5f);   // 1 + 4 + 1
    f[7] = isnan(NAN) && isinf(INFINITY) && !isfinite(INFINITY) && signbit(-0.0f) ? 1.0f : 0.0f;
    f[8] = precise::sqrt(16.0f) + fast::exp(0.0f) + metal::abs(-2.0f);  // 4 + 1 + 2
    int e;
    f[9] = frexp(8.0f, e) * float(e) + ldexp(1.0f, 3);  // 0.5*4 + 8
    half h = half(1.5f) * half(2.0f);
    f[10] = float(h) + float(half4(h).w);                  // 6
    f[11] = pairs[5].x + pairs[63].y;                      // 5 + 1
    f[12] = all(v > 0.0f) && any(v > 10.0f) ? 1.0f : 0.0f;
    f[13] = mix(0.0f, 10.0f, 0.25f) + saturate(3.0f) + step(1.0f, 2.0f);  // 2.5 + 1 + 1
    uint3 u3 = uint3(1u, 2u, 3u);
    i[0] = popcount(0xF0u) + clz(1u) + ctz(8u);            // 4 + 31 + 3
    i[1] = abs(-5) + absdiff(3, 10) + max(4, 9) + min(4, 9);  // 5 + 7 + 9 + 4
    i[2] = int(mulhi(0x80000000u, 4u)) + int(rotate(1u, 33u)) + int(u3.z);  // 2 + 2 + 3
    i[3] = extract_bits(0xABCDu, 4u, 8u) + int(reverse_bits(1u) >> 31);   // 0xBC + 1
    i[4] = atomic_load_explicit(&local_count, memory_order_relaxed);       // 64
    i[5] = int(addsat(2147483647, 5) == 2147483647) + int(subsat(0u, 1u) == 0u);  // 2
    int expected = 0;
    atomic_compare_exchange_weak_explicit(counter, &expected, 42, memory_order_relaxed, memory_order_relaxed);
    i[6] = atomic_exchange_explicit(counter, 7, memory_order_relaxed);  // 42
    i[7] = atomic_fetch_max_explicit(counter, 100, memory_order_relaxed) + atomic_load_explicit(counter, memory_order_relaxed); // 107
}

kernel void simd_more(device float* out [[buffer(0)]], uint lane [[thread_index_in_simdgroup]], uint gid [[thread_position_in_grid]]) {
    float x = float(lane);
    out[gid * 8 + 0] = simd_prefix_inclusive_sum(1.0f);
    out[gid * 8 + 1] = simd_max(x);
    out[gid * 8 + 2] = simd_broadcast(x, 5);
    out[gid * 8 + 3] = simd_shuffle_up(x, 1);
    out[gid * 8 + 4] = simd_shuffle_rotate_down(x, 1);
    out[gid * 8 + 5] = simd_is_first() ? 1.0f : 0.0f;
    out[gid * 8 + 6] = simd_all(lane < 40) ? 1.0f : 0.0f;
    float4 v = float4(x);
    out[gid * 8 + 7] = simd_sum(v).y;
}
"""


def test_shim_library_surface(device, queue):
    pipe = device.compile(SHIM_KERNEL, "surface")
    f, i, counter = device.new_buffer(4 * 16), device.new_buffer(4 * 8), device.new_buffer(4)
    launch(queue, pipe, [f, i, counter], (1, 1, 1), (64, 1, 1))
    queue.wait()
    got = from_buffer(f, np.float32, 14)
    expected = [10, 5, 5, 8.25, 20, 2, 6, 1, 7, 10, 6, 6, 1, 4.5]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert list(from_buffer(i, np.int32, 8)) == [38, 25, 7, 0xBC + 1, 64, 2, 42, 107]


def test_more_simd_functions(device, queue):
    out = device.new_buffer(4 * 8 * 32)
    launch(queue, device.compile(SHIM_KERNEL, "simd_more"), [out], (1, 1, 1), (32, 1, 1))
    queue.wait()
    r = from_buffer(out, np.float32, 8 * 32).reshape(32, 8)
    lane = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(r[:, 0], lane + 1)
    assert (r[:, 1] == 31).all() and (r[:, 2] == 5).all()
    np.testing.assert_array_equal(r[:, 3], np.concatenate([[0], lane[:-1]]))
    np.testing.assert_array_equal(r[:, 4], np.roll(lane, -1))
    assert r[0, 5] == 1 and r[1:, 5].sum() == 0
    assert (r[:, 6] == 1).all()
    assert (r[:, 7] == lane.sum()).all()
