"""The MSL lint (tests/msl_lint.py) finds each rule's violation in known-bad MSL, naming the rule and the
line, and finds nothing in MSL that keeps the rules; the session plugin fails the test that compiled a
source with a finding."""

from __future__ import annotations

import pathlib

import pytest

import msl_lint
import msl_lint_plugin
from numba_metal import metal
from numba_metal import runtime as rt
from numba_metal.compiler import mslib

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def findings(source: str, version: int = 320, params=None) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in msl_lint.lint(HEADER + source, version, params)]


GOOD = """
struct args_t { float scale; long n; float3 axis; packed_float3 p; uint flags[3]; };
template <typename P, int N> struct view { P data; long shape[N]; };
NM_HELPER float load(thread const view<device float*, 1>& v, long i, thread float& last) { last = v.data[i]; return last; }
kernel void good(device float* x [[buffer(0)]], constant args_t& args [[buffer(1)]],
                 device atomic_uint* counter [[buffer(2)]], threadgroup float* dyn [[threadgroup(0)]],
                 uint3 gid [[thread_position_in_grid]], uint3 grid [[threads_per_grid]],
                 ushort lane [[thread_index_in_simdgroup]], ushort sg [[simdgroup_index_in_threadgroup]],
                 uint3 tid [[thread_position_in_threadgroup]], uint index [[thread_index_in_threadgroup]]) {
    threadgroup atomic_int local;
    threadgroup float tile[32];
    view<device float*, 1> v{x, {long(args.n)}};
    float last = 0.0f;
    thread float* p = &last;
    tile[lane] = load(v, long(gid.x), *p) * args.scale;
    atomic_fetch_add_explicit(&local, 1, memory_order_relaxed);
    atomic_fetch_add_explicit((device atomic_float*)x, 1.0f, memory_order_relaxed);
    atomic_fetch_max_explicit(counter, index, memory_order_relaxed);
    x[gid.x] = float(int(x[0]) & 3) * (float)sg;
}
"""
GOOD_PARAMS = [rt.KernelParam(rt.PARAM_BUFFER, 0, 0, "device float*", "x"),
               rt.KernelParam(rt.PARAM_ARGUMENT_BLOCK, 1, 64, "constant args_t&", "args")]


def test_msl_that_keeps_the_rules_has_no_findings():
    assert findings(GOOD, 320, GOOD_PARAMS) == []


# (rule, MSL, line of the finding): one violation each.
BAD = [
    ("address-space", "void f(float* p) { *p = 1.0f; }\nkernel void k(device float* x [[buffer(0)]]) {}\n", 3),
    ("address-space", "kernel void k(device float* x [[buffer(0)]]) {\n    float& r = x[0];\n}\n", 4),
    ("address-space", "kernel void k(device float* x [[buffer(0)]]) {\n    thread uint* u = (uint*)x;\n}\n", 4),
    ("address-space", "struct S { float* p; };\nkernel void k(device float* x [[buffer(0)]]) {}\n", 3),
    ("address-space", "kernel void k(device float* x [[buffer(0)]]) {\n    device float* thread* pp = nullptr;\n"
                      "    device float** qq = nullptr;\n}\n", 5),
    ("kernel-attributes", "kernel void k(device float* x [[buffer(0)]], int gid [[thread_position_in_grid]]) {}\n", 3),
    ("kernel-attributes", "kernel void k(uint2 gid [[thread_position_in_grid]], uint3 n [[threads_per_grid]]) {}\n", 3),
    ("kernel-attributes", "kernel void k(ushort2 a [[thread_position_in_threadgroup]],\n"
                          "              uint2 b [[threads_per_threadgroup]]) {}\n", 4),
    ("kernel-attributes", "kernel void k(uint3 t [[thread_position_in_threadgroup]],\n"
                          "              ushort i [[thread_index_in_threadgroup]]) {}\n", 4),
    ("kernel-attributes", "kernel void k(ushort lane [[thread_index_in_simdgroup]],\n"
                          "              uint sg [[simdgroup_index_in_threadgroup]]) {}\n", 4),
    ("kernel-attributes", "kernel void k(uint2 a [[thread_position_in_grid]], uint2 b [[threads_per_grid]],\n"
                          "              uint3 c [[threadgroup_position_in_grid]]) {}\n", 4),
    ("kernel-attributes", "kernel void k(float x [[buffer(0)]]) {}\n", 3),
    ("kernel-attributes", "kernel void k(device float* x [[buffer(1)]],\n    device float* y [[buffer(1)]]) {}\n", 4),
    ("kernel-attributes", "kernel void k(device float* x [[threadgroup(0)]]) {}\n", 3),
    ("kernel-attributes", "kernel void k(device float* x [[buffer(0)]], uint n) {}\n", 3),
    ("atomics", "kernel void k(device float* x [[buffer(0)]]) {\n    threadgroup atomic_float sum;\n}\n", 4),
    ("atomics", "kernel void k(device atomic_float* x [[buffer(0)]]) {\n"
                "    atomic_fetch_min_explicit(x, 1.0f, memory_order_relaxed);\n}\n", 4),
    ("atomics", "kernel void k(device atomic_int* x [[buffer(0)]]) {\n"
                "    atomic_fetch_add_explicit(x, 1, memory_order_seq_cst);\n}\n", 4),
    ("atomics", "kernel void k(device atomic_bool* x [[buffer(0)]]) {\n"
                "    atomic_fetch_or_explicit(x, true, memory_order_relaxed);\n}\n", 4),
    ("atomics", "kernel void k(device float* x [[buffer(0)]]) {\n    threadgroup atomic_ulong m;\n}\n", 4),
    ("atomics", "kernel void k(device float* x [[buffer(0)]]) {\n    device atomic_long* l = nullptr;\n}\n", 4),
    ("atomics", "kernel void k(device float* x [[buffer(0)]]) {\n"
                "    atomic_fetch_add_explicit((threadgroup atomic_float*)x, 1.0f, memory_order_relaxed);\n}\n", 4),
    ("atomics", "kernel void k(device float* x [[buffer(0)]]) {\n"
                "    atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_acquire);\n}\n", 4),
    ("coherent-device", "kernel void k(device float* x [[buffer(0)]], device atomic_uint* n [[buffer(1)]]) {\n"
                        "    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);\n}\n",
     3),
    ("buffer-count", "kernel void k(device float* x [[buffer(31)]]) {}\n", 3),
    ("buffer-count", "kernel void k(" + ", ".join(f"device float* b{n} [[buffer({n})]]" for n in range(31))
     + ", device float* extra [[buffer(31)]]) {}\n", 3),
    ("language-version", "kernel void k(device float* x [[buffer(0)]]) {\n    x[0] = nextafter(x[0], 1.0f);\n}\n", 4),
    ("language-version", "kernel void k(device atomic_float* x [[buffer(0)]]) {}\n", 3),
    ("weak-cas-retry", "kernel void k(device atomic_uint* x [[buffer(0)]]) {\n    uint e = 0u;\n"
                       "    if (atomic_compare_exchange_weak_explicit(x, &e, 1u, memory_order_relaxed,\n"
                       "                                              memory_order_relaxed)) { x[1] = 2u; }\n}\n", 5),
]


@pytest.mark.parametrize("rule, source, line", BAD, ids=[f"{r[0]}-{n}" for n, r in enumerate(BAD)])
def test_each_rule_finds_its_violation_at_its_line(rule, source, line):
    version = {"nextafter": 300, "atomic_float*": 240}.get(next((k for k in ("nextafter", "atomic_float*") if k in source
                                                                 and rule == "language-version"), None), 320)
    found = findings(source, version)
    assert (rule, line) in found, found
    assert {r for r, _ in found} == {rule}, found


def test_a_weak_compare_exchange_retried_in_a_loop_is_no_finding():
    for loop in ("while (!atomic_compare_exchange_weak_explicit(x, &e, 1u, memory_order_relaxed, "
                 "memory_order_relaxed)) {\n        if (e != 0u) { return; }\n    }\n",
                 "for (;;) {\n        if (atomic_compare_exchange_weak_explicit(x, &e, 1u, memory_order_relaxed, "
                 "memory_order_relaxed)) { return; }\n    }\n",
                 "do {\n        e = 0u;\n    } while (!atomic_compare_exchange_weak_explicit(x, &e, 1u, "
                 "memory_order_relaxed, memory_order_relaxed));\n"):
        src = "kernel void k(device atomic_uint* x [[buffer(0)]]) {\n    uint e = 0u;\n    " + loop + "}\n"
        assert findings(src) == [], src


def test_the_prelude_keeps_the_rules():
    # All of the prelude, whichever kernel includes which section: the bounds check's fault record took its
    # flag with one weak compare-exchange, so a spurious failure lost the report of a kernel's first fault.
    text = pathlib.Path(mslib.path("prelude.metal")).read_text()
    assert [str(f) for f in msl_lint.lint(HEADER + text, 320) if f.rule == "weak-cas-retry"] == []


def test_an_unversioned_source_needing_more_than_msl_3_0_is_a_finding():
    fence = "kernel void k(coherent(device) device float* x [[buffer(0)]]) {\n" \
            "    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);\n}\n"
    assert findings(fence, 320) == []
    assert findings(fence, 0) == [("language-version", 4)]
    assert findings("kernel void k(device atomic_float* x [[buffer(0)]]) {}\n", 0) == []   # MSL 3.0 is enough


def test_coherent_device_is_needed_only_by_kernels_that_fence_device_memory():
    body = "kernel void k({}device float* x [[buffer(0)]], device atomic_uint* n [[buffer(1)]]) {{\n" \
           "    atomic_thread_fence(mem_flags::{}, memory_order_seq_cst, thread_scope_device);\n}}\n"
    assert findings(body.format("", "mem_device")) == [("coherent-device", 3)]
    assert findings(body.format("coherent(device) ", "mem_device")) == []
    assert findings(body.format("", "mem_threadgroup")) == []
    # Device memory is coherent within a threadgroup: a threadgroup-scope fence needs no coherent(device).
    block = body.replace("thread_scope_device", "thread_scope_threadgroup")
    assert findings(block.format("", "mem_device | mem_flags::mem_threadgroup")) == []


def test_the_argument_struct_size_follows_msl_layout():
    src = "struct a_t { float f; long n; float3 v; packed_float3 p; half h[3]; };\n" \
          "kernel void k(constant a_t& a [[buffer(0)]]) {}\n"
    # float 4 (+4 pad), long 8, float3 16 (16-aligned), packed_float3 12, half[3] 6, padded to 16: 48 + 16 = 64
    size = msl_lint._Linter(HEADER + src, 320, None).struct_size("a_t")
    assert size == 64
    ok = [rt.KernelParam(rt.PARAM_ARGUMENT_BLOCK, 0, 64, "constant a_t&", "a")]
    assert findings(src, 320, ok) == []
    wrong = [rt.KernelParam(rt.PARAM_ARGUMENT_BLOCK, 0, 60, "constant a_t&", "a")]
    assert findings(src, 320, wrong) == [("argument-size", 3)]


def test_findings_name_rule_line_and_source_line():
    text = str(msl_lint.lint(HEADER + "kernel void k(float x [[buffer(0)]]) {}\n", 320)[0])
    assert text.startswith("[kernel-attributes] kernel.metal:3:15: ")
    assert "kernel void k(float x [[buffer(0)]]) {}" in text


def test_comments_and_preprocessor_lines_are_not_code():
    src = "// float* p; threadgroup atomic_float f; atomic_thread_fence\n/* float& r;\n   goto */\n" \
          "#define BAD float*\nkernel void k(device float* x [[buffer(0)]]) {}\n"
    assert findings(src, 300) == []


def test_results_are_cached_by_source():
    src = HEADER + "kernel void k(float x [[buffer(0)]]) {}\n"
    assert msl_lint.lint(src, 320) is msl_lint.lint(src, 320)


def test_generated_kernels_keep_the_rules():
    @metal.jit
    def saxpy(a, x, y, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]
    msl = metal.compile_msl(saxpy, "(float32, float32[:], float32[::1], float32[:])")
    assert [str(f) for f in msl_lint.lint(msl, 300)] == []


def test_the_plugin_fails_a_test_whose_kernel_breaks_a_rule():
    plugin = msl_lint_plugin.MSLLintPlugin()
    plugin.check(HEADER + "kernel void k(float x [[buffer(0)]]) {}\n", "k", 320, None)
    with pytest.raises(msl_lint_plugin.LintFailure, match=r"kernel 'k': \[kernel-attributes\] kernel\.metal:3:15"):
        plugin._raise_pending("call")
    plugin.check(HEADER + "kernel void k(device float* x [[buffer(0)]]) {}\n", "k", 320, None)
    plugin._raise_pending("call")   # nothing found, nothing raised
