"""Device functions: both spellings, scalars/arrays/tuples in, scalars/tuples out, calls between them,
kernel-API calls inside them, recursion refused, and always-inlined MSL."""

import math
import re

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError


@metal.jit(device=True)
def square(x):
    return x * x


@metal.device_func
def divmod_pair(a, b):
    """Returns a tuple."""
    return a // b, a % b


@metal.device_func(fastmath=False)
def norm3(v):
    """Takes a tuple."""
    return math.sqrt(square(v[0]) + square(v[1]) + square(v[2]))


@metal.jit(device=True)
def dot(a, b, n):
    """Takes arrays (device, shared or local alike), calls another device function."""
    s = 0.0
    for k in range(n):
        s += a[k] * b[k]
    return s


@metal.jit(device=True)
def store(out, i, value):
    """Returns nothing; writes through an array argument."""
    out[i] = value


@metal.jit(device=True)
def lane_total(v):
    """Uses the kernel API: SIMD reduction and thread position inside a device function."""
    return metal.simd_sum(v) + 0 * metal.grid(1)


@metal.jit(device=True)
def bump(counter):
    return metal.atomic.add(counter, 0, 1)


@metal.jit(device=True)
def level3(x):
    return x + 1


@metal.jit(device=True)
def level2(x):
    return level3(x) * 2


@metal.jit(device=True)
def level1(x):
    return level2(x) + level3(x)


@metal.jit
def uses_everything(a, out_f, out_i, counter):
    i = metal.grid(1)
    sh = metal.shared.array(32, np.float32)
    loc = metal.local.array(4, np.float32)
    t = metal.threadIdx.x
    sh[t] = a[i]
    for k in range(4):
        loc[k] = k + 1.0
    metal.syncthreads()
    q, r = divmod_pair(i, 5)
    out_i[i, 0] = q
    out_i[i, 1] = r
    out_i[i, 2] = level1(i)
    out_i[i, 3] = bump(counter)
    out_i[i, 4] = square(i)            # int64 specialisation of square
    out_f[i, 0] = square(a[i])         # float32 specialisation
    out_f[i, 1] = norm3((a[i], 2.0, 2.0))
    out_f[i, 2] = dot(sh, loc, 4)      # a shared and a local array
    out_f[i, 3] = dot(a, a, 3)         # device arrays
    out_f[i, 4] = lane_total(a[i])
    store(out_f, (i, 5), a[i] + 1)


def test_device_functions_end_to_end():
    n = 64
    a = np.arange(n, dtype=np.float32) * 0.5
    out_f = np.zeros((n, 6), np.float32)
    out_i = np.zeros((n, 5), np.int64)
    counter = np.zeros(1, np.int32)
    uses_everything[2, 32](a, out_f, out_i, counter)
    i = np.arange(n)
    np.testing.assert_array_equal(out_i[:, 0], i // 5)
    np.testing.assert_array_equal(out_i[:, 1], i % 5)
    np.testing.assert_array_equal(out_i[:, 2], (i + 1) * 2 + (i + 1))
    np.testing.assert_array_equal(np.sort(out_i[:, 3]), i)
    np.testing.assert_array_equal(out_i[:, 4], i * i)
    np.testing.assert_array_equal(out_f[:, 0], a * a)
    np.testing.assert_allclose(out_f[:, 1], np.sqrt(a * a + 8), rtol=1e-6)
    sh = a.reshape(2, 32)[:, :4]
    np.testing.assert_array_equal(out_f[:, 2], np.repeat(sh @ np.arange(1, 5, dtype=np.float32), 32))
    assert (out_f[:, 3] == np.dot(a[:3], a[:3])).all()
    np.testing.assert_array_equal(out_f[:, 4], np.repeat(a.reshape(2, 32).sum(axis=1), 32))
    np.testing.assert_array_equal(out_f[:, 5], a + 1)


def test_device_functions_are_always_inlined():
    """Device functions are `static NM_INLINE`, i.e. always_inline: a small helper costs nothing
    (the earlier numba-metal measured a 2x slowdown from never inlining)."""
    def k(a):
        i = metal.grid(1)
        a[i] = level1(square(a[i]))

    src = metal.compile_msl(k, (types.float32[::1],))
    defs = re.findall(r"^(.*) nm_f_(\w+)\(thread const nm_env& nm_e", src, re.M)
    assert {name.split("_")[0] for _, name in defs} >= {"square", "level1", "level2", "level3"}
    assert all(q.startswith("static NM_INLINE") for q, _ in defs)
    assert "#define NM_INLINE inline __attribute__((__always_inline__))" in src


def test_recursion_is_refused_with_the_call_chain():
    @metal.jit(device=True)
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    def k(out):
        out[0] = fact(5)

    with pytest.raises(UnsupportedFeatureError, match=r"recursion .*fact -> fact.*loop"):
        metal.compile_msl(k, (types.int64[::1],))


@metal.jit(device=True)
def ping(n):
    return pong(n - 1) if n > 0 else 0


@metal.jit(device=True)
def pong(n):
    return ping(n - 1) if n > 0 else 1


def test_mutual_recursion_is_refused():
    def k(out):
        out[0] = ping(4)

    with pytest.raises(UnsupportedFeatureError, match=r"ping -> pong -> ping"):
        metal.compile_msl(k, (types.int64[::1],))


def test_calling_a_device_function_from_the_host_says_how_to_use_it():
    with pytest.raises(NumbaMetalError, match="py_func"):
        square(3)
    assert square.py_func(3) == 9


def test_a_device_function_launched_or_inspected_as_a_kernel_is_refused_as_numba_cuda_refuses_it():
    # numba.cuda's RuntimeErrors (numba-cuda's test_device_func_as_kernel_disallowed, test_inspect_sass_disallowed)
    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel") as e:
        square[1, 1](3)
    assert isinstance(e.value, NumbaMetalError)
    with pytest.raises(RuntimeError, match="Cannot inspect SASS of a device function"):
        square.inspect_sass((types.int32,))
    for name in ("inspect_llvm", "inspect_asm"):
        with pytest.raises(UnsupportedFeatureError, match=r"inspect_msl\(signature\)"):
            getattr(square, name)((types.int32,))
    assert "square" in square.inspect_msl((types.int32,))


def test_calling_a_plain_python_function_suggests_the_decorator():
    def helper(x):
        return x + 1

    def k(out):
        out[0] = helper(1)

    with pytest.raises(NumbaMetalError, match=r"device=True"):
        metal.compile_msl(k, (types.int64[::1],))
