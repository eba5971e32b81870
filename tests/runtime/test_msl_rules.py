"""What MSL forbids and a header cannot express is refused by the CPU device's MSL reader before clang
runs, with a Metal-like `kernel.metal:LINE:COL: error:` saying what MSL forbids (MSL specification
§1.5.4, §2.1, §4.2, §4.4, §5.1, §5.3); what MSL allows right next to it still compiles."""

from __future__ import annotations

import re

import numpy as np
import pytest

from numba_metal.errors import KernelCompilationError
from runtime_helpers import from_buffer, launch

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
KERNEL = "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"


def refused(device, source: str, where: str, *phrases: str, version: int = 0) -> str:
    """Compiles source (HEADER prepended) expecting a refusal at `where` ("line:col") saying each phrase."""
    with pytest.raises(KernelCompilationError) as e:
        device.compile(HEADER + source, "k", language_version=version)
    message = str(e.value)
    assert f"kernel.metal:{where}: error: " in message, message
    for phrase in phrases:
        assert phrase in message, message
    return message


# (name, source, where, phrases): each refused construct, at the line and column that names it.
REFUSALS = [
    ("goto", "void f(thread int& n) {\n    again: if (--n > 0) goto again;\n}\n" + KERNEL + "}\n",
     "4:25", ["goto statements are not allowed in Metal", "§1.5.4"]),
    ("direct recursion", "int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }\n" + KERNEL
     + "    x[i] = float(fact(5));\n}\n", "3:43", ["recursion is not supported: fact -> fact", "maxCallStackDepth"]),
    ("recursion after a ternary colon", "int deep(int n) { return n == 0 ? 0 : deep(n - 1) + 1; }\n" + KERNEL
     + "    x[i] = float(deep(3));\n}\n", "3:39", ["recursion is not supported: deep -> deep"]),
    ("mutual recursion", "int odd(int n);\nint even(int n) { return n == 0 ? 1 : odd(n - 1); }\n"
     "int odd(int n) { return n == 0 ? 0 : even(n - 1); }\n" + KERNEL + "    x[i] = float(even(4));\n}\n",
     "5:38", ["recursion is not supported: even -> odd -> even"]),
    ("function pointer declared", KERNEL + "    float (*f)(float) = nullptr;\n}\n", "4:11",
     ["function pointers are not supported", "[[visible]]"]),
    ("function used as a value", "float twice(float v) { return 2.0f * v; }\n"
     "float apply(float v, int) { return v; }\n" + KERNEL + "    x[i] = apply(x[i], twice);\n}\n", "6:24",
     ["function pointers are not supported: 'twice' is used as a value"]),
    ("static local", KERNEL + "    static float last = 0.0f;\n    x[i] = last;\n}\n", "4:5",
     ["static variables are not allowed in Metal functions", "§5.3"]),
    ("threadgroup variable in a device function", "float helper(uint i) {\n    threadgroup float tile[32];\n"
     "    return tile[i];\n}\n" + KERNEL + "    x[i] = helper(i);\n}\n", "4:5",
     ["threadgroup variables can be declared only in kernel functions, not in 'helper'", "§4.4"]),
    ("threadgroup variable at program scope", "threadgroup float shared_sum;\n" + KERNEL + "}\n", "3:1",
     ["program-scope variables must be in the constant address space"]),
    ("lambda before MSL 3.2", KERNEL + "    auto sq = [](float v) { return v * v; };\n    x[i] = sq(x[i]);\n}\n",
     "4:15", ["lambda expressions are not supported before MSL 3.2", "compiled as MSL 3.1"]),
    ("new", KERNEL + "    float* p = new float;\n}\n", "4:16", ["the new operator is not available in Metal"]),
    ("virtual", "struct S { virtual float f() { return 0.0f; } };\n" + KERNEL + "}\n", "3:12",
     ["virtual functions are not allowed in Metal"]),
    ("long long", KERNEL + "    long long n = 0;\n}\n", "4:5", ["'long long' is not supported in Metal"]),
    ("derived class", "struct A { float a; };\nstruct B : A { float b; };\n" + KERNEL + "}\n", "4:10",
     ["derived classes are not allowed in Metal"]),
    ("a function named main", "int main() { return 0; }\n" + KERNEL + "}\n", "3:5",
     ["a function cannot be named main in Metal"]),
    ("a kernel called as a function", "kernel void other(device float* y [[buffer(0)]]) { y[0] = 1.0f; }\n"
     + KERNEL + "    other(x);\n}\n", "5:5", ["kernel function 'other' cannot be called", "§5.1"]),
]


@pytest.mark.parametrize("source, where, phrases", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_msl_forbids(device, source, where, phrases):
    version = 310 if "lambda" in source or "[](" in source else 0
    refused(device, source, where, *phrases, version=version)


def test_what_msl_allows_next_to_the_refusals_compiles_and_runs(device, queue):
    # Overloads that call one another are not recursion; `= delete`, program-scope `static constant` data,
    # pointers to threadgroup memory in device functions, threadgroup variables in nested kernel blocks,
    # static members of structs, and (from MSL 3.2) lambdas are all MSL.
    src = HEADER + """
struct Box { static constexpr int kSize = 2; float v[kSize]; Box(const thread Box&) = delete; Box() = default; };
static constant float kScale = 2.0f;
float widen(float v) { return v * kScale; }
half widen(half v) { return half(widen(float(v))); }
float sum_shared(threadgroup float* tile, uint n) { float s = 0.0f; for (uint k = 0; k < n; ++k) s += tile[k]; return s; }
kernel void k(device float* x [[buffer(0)]], uint i [[thread_index_in_threadgroup]]) {
    if (i < 64) {
        threadgroup float tile[4];
        if (i < 4) tile[i] = float(i);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        auto twice = [](float v) { return v + v; };
        x[i] = twice(sum_shared(tile, 4)) + float(widen(half(1.0f))) + float(Box::kSize);
    }
}
"""
    pipe = device.compile(src, "k", language_version=320)
    buf = device.new_buffer(4 * 64)
    launch(queue, pipe, [buf], (1, 1, 1), (64, 1, 1))
    queue.wait()
    np.testing.assert_array_equal(from_buffer(buf, np.float32, 64), np.full(64, 12 + 2 + 2, np.float32))


def test_lambdas_compile_from_msl_3_2(device):
    device.compile(HEADER + KERNEL + "    auto sq = [&](float v) { return v * x[0]; };\n    x[i] = sq(x[i]);\n}\n", "k",
                   language_version=320)


def test_refusals_cover_the_whole_source_not_only_the_kernel_compiled(device):
    # Apple compiles the whole library: a goto in another kernel of the source fails this one too.
    src = "kernel void other(device int* y [[buffer(0)]]) { goto out; out: y[0] = 1; }\n" + KERNEL + "}\n"
    refused(device, src, "3:50", "goto statements")


def test_the_messages_point_at_the_line_in_a_long_generated_source(device):
    lines = [f"float f{n}(float v) {{ return v + {n}.0f; }}" for n in range(200)]
    src = "\n".join(lines) + "\nint g(int n) { return n > 0 ? g(n - 1) : 0; }\n" + KERNEL + "}\n"
    message = refused(device, src, f"{203}:31", "g -> g")
    assert re.search(r"kernel\.metal:203:31: error: recursion", message)
