"""The Metal shim's library surface: a broad kernel compiles and computes what MSL defines, and the shim
refuses what MSL does not have at the language version requested (the strict shim)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from numba_metal import runtime as rt
from numba_metal.errors import KernelCompilationError, MetalRuntimeError
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
    while (!atomic_compare_exchange_weak_explicit(counter, &expected, 42, memory_order_relaxed, memory_order_relaxed)
           && expected == 0) {}  // a weak compare-exchange may fail spuriously
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


# ---------------------------------------------------------------------------------------------------
# The strict shim: only what MSL has, at the language version requested
# ---------------------------------------------------------------------------------------------------
HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

#: metal:: functions of half and float scalars and vectors: MSL specification Tables 6.1 (common), 6.4
#: (math, with the versions that introduced fmax3, fmin3, fmedian3 and nextafter) and 6.8 (geometric).
MSL_FLOAT_FUNCTIONS = {
    1: ["acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "cospi", "exp", "exp2", "exp10",
        "fabs", "abs", "floor", "fract", "log", "log2", "log10", "rint", "round", "rsqrt", "sin", "sinh", "sinpi",
        "sqrt", "tan", "tanh", "tanpi", "trunc", "saturate", "sign"],
    2: ["atan2", "copysign", "divide", "fdim", "fmax", "max", "fmin", "min", "fmod", "pow", "powr", "step",
        "nextafter"],
    3: ["clamp", "fma", "fmax3", "fmin3", "fmedian3", "max3", "min3", "median3", "mix", "smoothstep"],
}
#: Names Python's math module has that MSL's metal:: does not (numba-metal's math library supplies them
#: as nm_*), and C names Metal has no library for.
NOT_IN_METAL = ["erf", "erfc", "expm1", "log1p", "lgamma", "tgamma", "cbrt", "hypot", "mad"]


def compiles(device, body: str, version: int = 0, name: str = "k"):
    return device.compile(HEADER + body, name, language_version=version)


def refuses(device, body: str, version: int = 0, match: str | None = None) -> str:
    with pytest.raises(KernelCompilationError) as e:
        compiles(device, body, version)
    if match:
        assert re.search(match, str(e.value)), str(e.value)
    return str(e.value)


def test_every_msl_float_function_exists_in_metal(device):
    calls = []
    for arity, names in MSL_FLOAT_FUNCTIONS.items():
        args = ", ".join(["0.5f"] * arity)
        calls += [f"s += float(metal::{n}({args}));" for n in names]
        calls += [f"s += float(metal::{n}(half({args.split(',')[0]}){', half(0.5f)' * (arity - 1)}));" for n in names]
        calls += [f"s += metal::{n}(float2({args.split(',')[0]}){', float2(0.5f)' * (arity - 1)}).x;" for n in names]
    body = "kernel void k(device float* out [[buffer(0)]]) {\n    float s = 0.0f;\n    " + "\n    ".join(calls) + \
        "\n    s += metal::precise::sqrt(4.0f) + metal::fast::exp(0.0f) + length(float2(3.0f, 4.0f));\n" \
        "    out[0] = s;\n}\n"
    compiles(device, body, version=310)   # a function missing from the shim fails to compile


@pytest.mark.parametrize("name", NOT_IN_METAL)
def test_names_metal_does_not_have_are_refused(device, name):
    args = "x[0], x[1], x[2]" if name == "mad" else "x[0], x[1]" if name == "hypot" else "x[0]"
    refuses(device, f"kernel void k(device float* x [[buffer(0)]]) {{ x[0] = metal::{name}({args}); }}\n",
            match=rf"kernel\.metal:3:.*(no member named '{name}' in namespace 'metal'|{name})")


@pytest.mark.parametrize("call", ["erff(x[0])", "expf(x[0])", "sqrtf(x[0])", "printf(\"%f\", x[0])"])
def test_the_c_library_is_not_visible(device, call):
    refuses(device, f"kernel void k(device float* x [[buffer(0)]]) {{ x[0] = {call}; }}\n", match=r"kernel\.metal:3:")


def test_version_gated_functions_appear_with_their_version(device):
    body = "kernel void k(device float* x [[buffer(0)]]) {{ x[0] = {}; }}\n"
    compiles(device, body.format("nextafter(x[0], 1.0f)"), version=310)
    refuses(device, body.format("nextafter(x[0], 1.0f)"), version=300, match="nextafter")
    compiles(device, body.format("fmax3(x[0], x[1], x[2]) + float(reverse_bits(1u) + mad24(1, 2, 3))"), version=210)
    refuses(device, body.format("fmax3(x[0], x[1], x[2])"), version=200, match="fmax3")
    refuses(device, body.format("float(mad24(1l, 2l, 3l))"), version=320, match="mad24")   # 32-bit types only


SIMD_OK = ["simd_sum(x)", "simd_sum(half(x))", "simd_max(short(l))", "simd_sum(float4(x))", "simd_shuffle(uchar(l), 1)",
           "simd_broadcast(char(l), 0)", "simd_shuffle_xor(x, 1)", "simd_prefix_exclusive_sum(int(l))",
           "simd_and(uint(l))", "simd_or(ushort2(l))"]
SIMD_REFUSED = ["simd_sum(long(l))", "simd_sum(ulong(l))", "simd_max(long2(l))", "simd_shuffle(bool(l), 1)",
                "simd_broadcast(true, 0)", "simd_shuffle_down(bool2(true), 1)", "simd_broadcast_first(ulong(l))",
                "simd_and(x)", "simd_xor(half(x))"]


def simd_kernel(expr: str) -> str:
    return ("kernel void k(device float* out [[buffer(0)]], uint l [[thread_index_in_simdgroup]]) {\n"
            f"    float x = float(l);\n    auto r = {expr};\n    out[l] = float(r == r);\n}}\n")


def test_simd_functions_take_msl_types(device):
    compiles(device, simd_kernel(" + ".join(f"float(any({e} == {e}))" if "4" in e or "2" in e else f"float({e})"
                                            for e in SIMD_OK)))


@pytest.mark.parametrize("expr", SIMD_REFUSED)
def test_simd_functions_refuse_bool_long_and_ulong(device, expr):
    refuses(device, simd_kernel(expr), match=r"section 6\.9\.2|no matching function")


def test_simd_functions_appear_with_their_version(device):
    compiles(device, simd_kernel("simd_shuffle_down(x, 1)"), version=200)
    refuses(device, simd_kernel("simd_sum(x)"), version=200, match="simd_sum")
    compiles(device, simd_kernel("simd_sum(x)"), version=210)


ATOMIC_KERNEL = """kernel void k(device {t}* d [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {{
    {decl}
    {body};
}}
"""


@pytest.mark.parametrize("t, decl, body, version", [
    ("atomic_float", "", "atomic_fetch_add_explicit(d, 1.0f, memory_order_relaxed)", 300),
    ("atomic_float", "", "atomic_fetch_sub_explicit(d, 1.0f, memory_order_relaxed) + atomic_load_explicit(d, memory_order_relaxed)", 300),
    ("atomic_bool", "", "atomic_store_explicit(d, true, memory_order_relaxed)", 240),
    ("atomic_int", "threadgroup atomic_uint c;", "atomic_fetch_max_explicit(&c, 1u, memory_order_relaxed)", 200),
    ("atomic_uint", "", "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)", 320),
])
def test_atomics_metal_has(device, t, decl, body, version):
    compiles(device, ATOMIC_KERNEL.format(t=t, decl=decl, body=body), version=version)


@pytest.mark.parametrize("t, decl, body, version, why", [
    ("atomic_uint", "threadgroup atomic_float c;", "atomic_store_explicit(&c, 1.0f, memory_order_relaxed)", 320,
     "threadgroup atomic_float"),
    ("atomic_uint", "threadgroup atomic_float c;", "atomic_fetch_add_explicit(&c, 1.0f, memory_order_relaxed)", 320,
     "threadgroup atomic_float add"),
    ("atomic_float", "", "atomic_fetch_max_explicit(d, 1.0f, memory_order_relaxed)", 320, "float max"),
    ("atomic_float", "", "atomic_fetch_add_explicit(d, 1.0f, memory_order_relaxed)", 240, "atomic_float before 3.0"),
    ("atomic_bool", "", "atomic_store_explicit(d, true, memory_order_relaxed)", 230, "atomic_bool before 2.4"),
    ("atomic_bool", "", "atomic_fetch_add_explicit(d, true, memory_order_relaxed)", 320, "bool add"),
    ("atomic_int", "", "atomic_fetch_add_explicit(d, 1, memory_order_seq_cst)", 320, "seq_cst on an operation"),
    ("atomic_uint", "", "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst)", 310, "fence before 3.2"),
    ("atomic_uint", "thread_scope s = thread_scope_device;", "(void)s", 310, "thread_scope before 3.2"),
])
def test_atomics_metal_does_not_have(device, t, decl, body, version, why):
    refuses(device, ATOMIC_KERNEL.format(t=t, decl=decl, body=body), version=version, match=r"kernel\.metal:")


COHERENT = """void publish(device coherent(device) float* p, uint i) { p[i] = 1.0f; }
kernel void k(coherent(device) device float* x [[buffer(0)]], device atomic_uint* n [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
    publish(x, i);
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
    atomic_fetch_add_explicit(n, 1u, memory_order_relaxed);
}
"""


def test_coherent_device_buffers_from_msl_3_2(device, queue):
    pipe = compiles(device, COHERENT, version=320)
    x, n = device.new_buffer(4 * 64), device.new_buffer(4)
    launch(queue, pipe, [x, n], (2, 1, 1), (32, 1, 1))
    queue.wait()
    assert (from_buffer(x, np.float32, 64) == 1).all() and from_buffer(n, np.uint32, 1)[0] == 64


def test_coherent_device_is_refused_before_msl_3_2_and_outside_device_memory(device):
    refuses(device, COHERENT, version=310, match=r"kernel\.metal:3:21: error: coherent\(device\) is supported from MSL 3\.2")
    refuses(device, COHERENT.replace("device coherent(device) float* p", "threadgroup coherent(device) float* p"),
            version=320, match=r"kernel\.metal:3:26: error: coherent\(device\) qualifies buffers in the device address space")
    refuses(device, COHERENT.replace("device coherent(device) float* p", "threadgroup coherent(threadgroup) float* p"),
            version=320, match=r"kernel\.metal:3:26: error: MSL has only the device scope of coherence")


def test_coherence_cannot_be_dropped_implicitly(device):
    # Passing a coherent(device) buffer where a plain device pointer is expected loses the coherence.
    refuses(device, COHERENT.replace("device coherent(device) float* p", "device float* p"), version=320,
            match=r"kernel\.metal:6:")


def test_language_versions(device):
    for version, cplusplus in [(200, 201402), (300, 201402), (320, 201402), (400, 201703)]:
        compiles(device, f"static_assert(__METAL_VERSION__ == {version}, \"version\");\n"
                         f"static_assert(__cplusplus == {cplusplus}L, \"C++ standard\");\n"
                         "kernel void k(device float* x [[buffer(0)]]) {}\n", version=version)
    compiles(device, "static_assert(__METAL_VERSION__ == 320, \"the default\");\nkernel void k(device float* x [[buffer(0)]]) {}\n")
    with pytest.raises(MetalRuntimeError, match="language_version 250 is not an MSL version"):
        compiles(device, "kernel void k(device float* x [[buffer(0)]]) {}\n", version=250)


def test_math_modes_of_the_c_abi(device, queue):
    # nm_compile_options.fast_math: 0 safe, 1 relaxed, 2 fast. Safe and relaxed both honour NaN and
    # infinity (MSL §1.6.3); fast may assume them away, so only that it compiles is asserted.
    from numba_metal.runtime._loader import load
    ffi, lib = load()
    src = (HEADER + "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           "    x[i] = float(isnan(x[i])) * 2.0f + float(isinf(x[i]));\n}\n").encode()
    results = {}
    for mode in (0, 1, 2, 3):
        opts = ffi.new("nm_compile_options *", {"fast_math": mode, "language_version": 0})
        out = ffi.new("nm_pipeline **")
        rc = lib.nm_pipeline_new(device.handle, src, b"k", opts, ffi.NULL, out)
        if mode == 3:
            assert rc != 0 and "not a math mode" in ffi.string(lib.nm_last_error()).decode()
            continue
        assert rc == 0, ffi.string(lib.nm_last_error()).decode()
        if mode == 2:
            lib.nm_pipeline_release(out[0])
            continue
        pipe = rt.Pipeline(device, out[0], "k")
        buf = device.new_buffer(12)
        buf.write(0, np.array([np.nan, 1.0, np.inf], np.float32).ctypes.data, 12)
        launch(queue, pipe, [buf], (1, 1, 1), (3, 1, 1))
        queue.wait()
        results[mode] = list(from_buffer(buf, np.float32, 3))
    assert results == {0: [2.0, 0.0, 1.0], 1: [2.0, 0.0, 1.0]}


def test_absdiff_returns_the_unsigned_type(device, queue):
    # Table 6.2: Tu absdiff(T x, T y), |x - y| without modulo overflow.
    pipe = compiles(device, "kernel void k(device float* x [[buffer(0)]]) {\n"
                            "    x[0] = float(absdiff(-2147483647 - 1, 2147483647));\n"
                            "    x[1] = float(absdiff(int2(-3, 5), int2(4, -5)).y);\n}\n")
    buf = device.new_buffer(8)
    launch(queue, pipe, [buf], (1, 1, 1), (1, 1, 1))
    queue.wait()
    assert list(from_buffer(buf, np.float32, 2)) == [np.float32(4294967295.0), 10.0]


SIMDGROUP_MATRIX_KERNEL = r"""
#include <metal_stdlib>
using namespace metal;

// MSL specification section 6.7's example, with Table 6.9's defaults (elements_per_row = 8, origin 0, not
// transposed), the diagonal constructor and a threadgroup round trip; then the half matrices.
kernel void float_matmad(device float *a [[buffer(0)]], device float *b [[buffer(1)]], device float *c [[buffer(2)]],
                         device float *r [[buffer(3)]], device half *h [[buffer(4)]],
                         uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float tile[64];
    simdgroup_float8x8 ma, mb, mc, mr;
    simdgroup_load(ma, a);
    simdgroup_load(mb, b);
    simdgroup_load(mc, c);
    simdgroup_multiply_accumulate(mr, ma, mb, mc);
    simdgroup_store(mr, r);
    simdgroup_float8x8 twice = simdgroup_float8x8(2.0f);
    simdgroup_multiply(mr, twice, ma);
    simdgroup_store(mr, tile, 8, ulong2(0, 0), true);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = tid; k < 64; k += 32) r[64 + k] = tile[k];
    simdgroup_half8x8 hx;
    simdgroup_load(hx, h, 16, ulong2(8, 0));
    simdgroup_half8x8 hy = make_filled_simdgroup_matrix<half, 8, 8>(half(0.5f));
    simdgroup_multiply_accumulate(hx, hx, hy, hx);
    simdgroup_store(hx, h, 16);
}
"""


def test_simdgroup_matrices_as_the_specification_writes_them(device, queue):
    rng = np.random.default_rng(5)
    a, b, c = (rng.integers(-4, 5, (8, 8)).astype(np.float32) for _ in range(3))
    h = rng.integers(-4, 5, (8, 16)).astype(np.float16)
    bufs = [to_buffer(device, x) for x in (a, b, c, np.zeros(128, np.float32), h)]
    launch(queue, device.compile(SIMDGROUP_MATRIX_KERNEL, "float_matmad"), bufs, (1, 1, 1), (32, 1, 1))
    queue.wait()
    r = from_buffer(bufs[3], np.float32, 128).reshape(2, 8, 8)
    np.testing.assert_array_equal(r[0], a @ b + c)
    np.testing.assert_array_equal(r[1], (2 * a).T)           # stored transposed
    got_h = from_buffer(bufs[4], np.float16, 128).reshape(8, 16)
    right = h[:, 8:].astype(np.float32)
    np.testing.assert_array_equal(got_h[:, :8], (right @ np.full((8, 8), 0.5, np.float32) + right).astype(np.float16))
    np.testing.assert_array_equal(got_h[:, 8:], h[:, 8:])


def test_simdgroup_matrices_hold_half_and_float_only(device):
    refuses(device, "kernel void k(device int* p [[buffer(0)]]) { simdgroup_matrix<int, 8, 8> m; "
                    "simdgroup_load(m, p); }", match="half or float")
    refuses(device, "kernel void k(device float* p [[buffer(0)]]) { simdgroup_matrix<float, 4, 4> m; "
                    "simdgroup_load(m, p); }", match="8x8")
