"""Compile-only tests: properties of the MSL numba-metal generates (no device needed)."""

import math
import re

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal

f32 = types.Array(types.float32, 1, "C")
f32_2d = types.Array(types.float32, 2, "C")
i64 = types.Array(types.int64, 1, "C")


def vadd(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def test_kernel_signature_binds_arrays_then_argument_block_then_builtins():
    src = metal.compile_msl(vadd, (f32, f32, f32))
    sig = re.search(r"kernel void (\w+)\((.*?)\) \{", src).group(2)
    params = [p.strip() for p in sig.split(", ")]
    # arrays the kernel only reads are const (issue 28 item 4)
    assert params[0].startswith("device const float* nm_p0 [[buffer(0)]]")
    assert params[1].startswith("device const float* nm_p1 [[buffer(1)]]")
    assert params[2].startswith("device float* nm_p2 [[buffer(2)]]")
    assert params[3].startswith("constant nm_args_") and params[3].endswith("[[buffer(3)]]")
    assert "uint3 nm_b_gid [[thread_position_in_grid]]" in params


def test_no_double_and_every_float_literal_has_a_suffix():
    def k(a, out):
        i = metal.grid(1)
        out[i] = a[i] * 0.1 + 2.5 / (a[i] + 1) + math.pi

    src = metal.compile_msl(k, (f32, f32))
    body = src.split("kernel void", 1)[1]
    assert "double" not in src
    # Any decimal literal in the kernel body carries an f suffix.
    for lit in re.findall(r"(?<![\w.])\d+\.\d*(?:e[-+]?\d+)?\w?", body):
        assert lit.endswith("f"), lit


def test_signed_integer_arithmetic_wraps_through_unsigned():
    def k(a):
        i = metal.grid(1)
        a[i] = a[i] * 3 + 7

    src = metal.compile_msl(k, (i64,))
    assert "long(ulong(" in src  # wrapping multiply/add spelt through ulong


def test_python_floor_division_and_modulo_use_prelude_helpers():
    def k(a, n):
        i = metal.grid(1)
        a[i] = a[i] // n + a[i] % n

    src = metal.compile_msl(k, (i64, types.int64))
    assert "nm_floordiv(" in src and "nm_mod(" in src
    assert "NM_SIGNED_DIVMOD(long, ulong)" in src


def test_prelude_sections_are_included_only_when_used():
    src = metal.compile_msl(vadd, (f32, f32, f32))
    assert "nm_floordiv" not in src
    assert "nm_atomic" not in src
    assert "nm_erf" not in src


def test_break_from_both_sides_of_or_compiles_without_goto():
    def k(a, out):
        i = metal.grid(1)
        x = a[i]
        n = 0
        while True:
            x = x * 0.5
            n += 1
            if x < 1.0 or n > 10:
                break
        out[i] = n

    src = metal.compile_msl(k, (f32, f32))
    assert "goto" not in src
    assert "while (true)" in src


def test_c_contiguous_last_axis_uses_unit_stride():
    def k(a):
        x, y = metal.grid(2)
        a[x, y] = 1.0

    src = metal.compile_msl(k, (f32_2d,))
    store = [ln for ln in src.splitlines() if ".data[" in ln and "= " in ln][-1]
    assert "strides[0]" in store and "strides[1]" not in store


def test_generated_msl_size_is_linear_in_kernel_size():
    def make(n):
        lines = ["def k(a):", "    i = metal.grid(1)", "    x = a[i]"]
        for j in range(n):
            lines += [f"    if x > {j}:", f"        x = x - {j}", "    else:", f"        x = x + {j}"]
        lines.append("    a[i] = x")
        ns = {"metal": metal}
        exec("\n".join(lines), ns)
        return ns["k"]

    small = len(metal.compile_msl(make(10), (f32,)))
    large = len(metal.compile_msl(make(40), (f32,)))
    assert large < small * 4.5  # 4x the code, at most ~4x the MSL (no duplication)


def test_device_functions_are_always_inline():
    @metal.jit(device=True)
    def twice(x):
        return 2 * x

    def k(a):
        i = metal.grid(1)
        a[i] = twice(a[i])

    src = metal.compile_msl(k, (f32,))
    assert re.search(r"static NM_INLINE float nm_f_twice_\w+\(thread const nm_env& nm_e, float p0\)", src)
    assert "#define NM_INLINE inline __attribute__((__always_inline__))" in src


def test_compile_msl_of_a_device_function():
    def add(x, y):
        return x + y

    src = metal.compile_msl(add, "float32(float32, float32)", device=True)
    assert "kernel void" not in src
    assert re.search(r"float nm_f_add_\w+\(thread const nm_env& nm_e, float p0, float p1\)", src)


def test_float64_array_argument_is_its_bit_patterns_in_place():
    def k(a):
        a[0] = 1

    src = metal.compile_msl(k, (types.Array(types.float64, 1, "C"),))
    assert "device ulong* nm_p0 [[buffer(0)]]" in src
    assert re.search(r"v_a\.data\[.*\] = nm_f64_from_i64\(\w+\)\.bits;", src)


def test_shared_memory_over_32k_is_refused_at_compile_time():
    from numba_metal.errors import UnsupportedFeatureError

    def k(a):
        s = metal.shared.array(9000, np.float32)
        s[0] = 1
        a[0] = s[0]

    with pytest.raises(UnsupportedFeatureError, match="32768"):
        metal.compile_msl(k, (f32,))


def test_each_float_operation_is_its_own_statement_so_safe_mode_contraction_cannot_apply():
    # MSL's safe math mode sets FP contract "on" (MSL §1.6.3): a * b + c may be fused within one
    # expression. Every float operation numba-metal emits is a statement of its own, so each result is
    # rounded as written whether or not the Metal compiler contracts (Apple's was measured not to in safe
    # mode; the CPU device compiles with -ffp-contract=off), which is what bit-exact float tests rely on.
    def k(a, b, c, out):
        i = metal.grid(1)
        out[i] = a[i] * b[i] + c[i] - a[i] * (b[i] - c[i]) / 3.0 + a[i] ** 2 * c[i] + math.sqrt(a[i] * a[i] + 1.5e-3)

    body = metal.compile_msl(k, (f32, f32, f32, f32)).split("kernel void", 1)[1]
    floats = set(re.findall(r"\bfloat (v_\w+)\{\}", body))
    checked = 0
    for lhs, rhs in re.findall(r"^\s*(v_\w+) = (.*);$", body, re.M):
        if lhs not in floats:
            continue
        flat = re.sub(r"\b\d+\.?\d*(?:[eE][-+]?\d+)?f\b", "0", rhs)   # float literals
        while re.search(r"\[[^\[\]]*\]", flat):
            flat = re.sub(r"\[[^\[\]]*\]", "", flat)                      # integer index arithmetic
        has_mul = re.search(r"[\w)]\s*\*", flat)
        has_add = re.search(r"[\w)]\s*[-+]", flat)
        assert not (has_mul and has_add), f"{lhs} = {rhs}"
        checked += 1
    assert checked >= 8
