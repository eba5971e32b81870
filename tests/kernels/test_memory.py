"""Kernel memory: shared (threadgroup) arrays static and dynamic, local arrays, constant arrays, and
the 32 KB threadgroup-memory limit."""

import numpy as np
import pytest
from numba import float32, int32
from numba.core import types

from numba_metal import metal
from numba_metal.errors import KernelLaunchError, NumbaMetalError, UnsupportedFeatureError

f32 = types.float32[::1]
TILE = 8

# -- shared memory --------------------------------------------------------------------------------


@metal.jit
def reverse_2d_tiles(a, out):
    """Each 8x4 threadgroup loads its tile into a 2-d shared array and writes it back rotated 180°."""
    tile = metal.shared.array((4, 8), np.float32)
    tx, ty = metal.threadIdx.x, metal.threadIdx.y
    x, y = metal.grid(2)
    tile[ty, tx] = a[y, x]
    metal.syncthreads()
    out[y, x] = tile[3 - ty, 7 - tx]


def test_static_2d_shared_array():
    a = np.arange(8 * 24, dtype=np.float32).reshape(8, 24)
    out = np.zeros_like(a)
    reverse_2d_tiles[(3, 2), (8, 4)](a, out)
    expected = a.reshape(2, 4, 3, 8)[:, ::-1, :, ::-1].reshape(8, 24)
    np.testing.assert_array_equal(out, expected)


@metal.jit
def several_shared_arrays(out):
    """Three shared arrays of different types and both spellings are distinct memory."""
    f = metal.shared.array((4, 4), np.float32)
    n = metal.shared_array(16, np.int32)
    c = metal.shared.array((2, 2, 4), np.uint8)
    t = metal.threadIdx.x
    f[t // 4, t % 4] = t * 0.5
    n[t] = 100 + t
    c[t // 8, (t // 4) % 2, t % 4] = t * 2
    metal.syncthreads()
    r = 15 - t
    out[t] = f[r // 4, r % 4] + n[r] + c[r // 8, (r // 4) % 2, r % 4]


def test_several_shared_arrays_and_both_spellings():
    out = np.zeros(16, np.float32)
    several_shared_arrays[1, 16](out)
    r = 15 - np.arange(16)
    np.testing.assert_array_equal(out, r * 0.5 + 100 + r + r * 2)


@metal.jit
def dynamic_reverse(a, out):
    """Dynamic shared memory (shape 0): sized by the launch's sharedmem bytes."""
    s = metal.shared.array(0, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    s[t] = a[i]
    metal.syncthreads()
    out[i] = s[metal.blockDim.x - 1 - t] + s.size * 1000


def test_dynamic_shared_memory_is_sized_by_the_launch():
    a = np.arange(128, dtype=np.float32)
    out = np.zeros_like(a)
    dynamic_reverse[2, 64, 0, 64 * 4](a, out)
    expected = a.reshape(2, 64)[:, ::-1].ravel() + 64 * 1000
    np.testing.assert_array_equal(out, expected)
    # A larger allocation is seen by the kernel as a larger array.
    dynamic_reverse[2, 64, 0, 100 * 4](a, out)
    np.testing.assert_array_equal(out, a.reshape(2, 64)[:, ::-1].ravel() + 100 * 1000)


@metal.jit
def dynamic_arrays_alias(out_bits):
    """numba.cuda's rule: all dynamic shared arrays start at the same address."""
    ints = metal.shared.array(0, np.uint32)
    floats = metal.shared.array(0, np.float32)
    t = metal.threadIdx.x
    floats[t] = t + 1.5
    metal.syncthreads()
    out_bits[t] = ints[t]


def test_dynamic_shared_arrays_alias():
    out = np.zeros(8, np.uint32)
    dynamic_arrays_alias[1, 8, 0, 32](out)
    np.testing.assert_array_equal(out, (np.arange(8, dtype=np.float32) + 1.5).view(np.uint32))


@metal.jit
def static_and_dynamic(out):
    big = metal.shared.array((64, 64), np.float32)      # 16 KB static
    dyn = metal.shared.array(0, np.int32)                # the rest, from the launch
    t = metal.threadIdx.x
    big[t, t] = t
    dyn[t] = 2 * t
    metal.syncthreads()
    out[t] = big[63 - t, 63 - t] + dyn[63 - t]


def test_static_plus_dynamic_shared_memory_up_to_the_limit():
    """16 KB static + 16 KB dynamic is exactly Metal's 32 KB: allowed, and counted once."""
    out = np.zeros(64, np.float32)
    static_and_dynamic[1, 64, 0, 16 * 1024](out)
    r = 63 - np.arange(64)
    np.testing.assert_array_equal(out, r + 2 * r)
    with pytest.raises(KernelLaunchError, match="32768"):
        static_and_dynamic[1, 64, 0, 16 * 1024 + 16](out)


def test_dynamic_shared_memory_over_the_limit_is_a_launch_error():
    a = np.zeros(64, np.float32)
    with pytest.raises(KernelLaunchError, match="dynamic shared memory"):
        dynamic_reverse[1, 64, 0, 40000](a, a.copy())


def test_static_shared_memory_over_32kb_is_a_compile_error():
    def k(out):
        a = metal.shared.array((64, 128), np.float32)  # 32 KB
        b = metal.shared_array(16, np.float32)          # one more array: over the limit
        a[0, 0] = 1.0
        b[0] = 1.0
        out[0] = a[0, 0] + b[0]

    with pytest.raises(UnsupportedFeatureError, match="32768") as e:
        metal.compile_msl(k, (f32,))
    assert "test_memory.py" in str(e.value)  # names the line


def test_shared_array_needs_a_constant_shape():
    def k(out, n):
        a = metal.shared.array(n, np.float32)
        out[0] = a[0]

    with pytest.raises(UnsupportedFeatureError, match="constant"):
        metal.compile_msl(k, (f32, types.int64))


@pytest.mark.parametrize("array", ["shared", "local"])
def test_shape_and_dtype_errors_include_numba_cudas_words(array):
    # numba.cuda's test_sm_creation (test_invalid_2, test_invalid_string_dtype) and test_localmem
    from numba.core.errors import TypingError

    ns = {"metal": metal, "float32": float32}
    exec(f"def k(A):\n    sa = metal.{array}.array(shape=(1, A[0]), dtype=float32)\n    A[0, 0] = sa[0, 0]\n", ns)
    with pytest.raises(TypingError, match=f"metal.{array}.array: the shape must be a constant") as e:
        metal.jit((float32[:, :],))(ns["k"])
    assert (f"No implementation of function Function(<function {array}.array" in str(e.value)
            and "found for signature:\n \n >>> array(shape=Tuple(Literal[int](1), array(float32, 1d, A)), "
                "dtype=class(float32))" in str(e.value))
    exec(f"def k(x):\n    s = metal.{array}.array(10, dtype='int33')\n    s[0] = x[0]\n", ns)
    with pytest.raises(TypingError, match=f"metal.{array}.array\\(shape, dtype\\): Invalid NumPy dtype "
                                          "specified: 'int33'; use a Numba type"):
        metal.jit((int32[::1],))(ns["k"])


GLOBAL_ROWS, GLOBAL_COLS = 5, 6


@pytest.mark.parametrize("array", ["shared", "local"])
def test_a_list_shape_is_refused_in_numba_cudas_words(array):
    # numba.cuda's test_sm_creation.test_global_build_list: a list is not a shape (a tuple is)
    from numba.core.errors import TypingError

    ns = {"metal": metal, "float32": float32, "GLOBAL_ROWS": GLOBAL_ROWS, "GLOBAL_COLS": GLOBAL_COLS}
    exec(f"def k(A):\n    sa = metal.{array}.array(shape=[GLOBAL_ROWS, GLOBAL_COLS], dtype=float32)\n"
         "    A[0, 0] = sa[0, 0]\n", ns)
    with pytest.raises(TypingError, match=f"metal.{array}.array: the shape must be a constant int or tuple of "
                                          "ints, not a list .*write it as a tuple") as e:
        metal.jit((float32[:, :],))(ns["k"])
    assert (f"No implementation of function Function(<function {array}.array" in str(e.value)
            and "found for signature:\n \n >>> array(shape=list(int64)<iv=[5, 6]>, dtype=class(float32))"
            in str(e.value))
    # a list anywhere else is still refused where it is built
    exec("def k2(A):\n    xs = [1, 2]\n    A[0, 0] = xs[0]\n", ns)
    with pytest.raises(UnsupportedFeatureError, match="lists are not supported in Metal kernels"):
        metal.jit((float32[:, :],))(ns["k2"])


@metal.jit(device=True)
def block_sum(v):
    """A block reduction in a device function with its own shared array (as numba.cuda allows)."""
    buf = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    buf[t] = v
    metal.syncthreads()
    s = 32
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        metal.syncthreads()
        s //= 2
    r = buf[0]
    metal.syncthreads()
    return r


@metal.jit(device=True)
def reversed_in_block(v):
    d = metal.shared.array(0, np.int32)          # dynamic shared memory, from a device function
    t = metal.threadIdx.x
    d[t] = v
    metal.syncthreads()
    return d[metal.blockDim.x - 1 - t]


@metal.jit
def uses_shared_device_functions(a, sums, rev):
    i = metal.grid(1)
    sums[i] = block_sum(a[i]) + block_sum(a[i] * 2)
    rev[i] = reversed_in_block(i)


def test_shared_arrays_declared_in_device_functions():
    a = np.arange(128, dtype=np.float32)
    sums = np.zeros(128, np.float32)
    rev = np.zeros(128, np.int32)
    uses_shared_device_functions[2, 64, 0, 64 * 4](a, sums, rev)
    np.testing.assert_array_equal(sums, np.repeat([a[:64].sum() * 3, a[64:].sum() * 3], 64))
    np.testing.assert_array_equal(rev, np.concatenate([np.arange(63, -1, -1), np.arange(127, 63, -1)]))


def test_device_function_shared_arrays_count_against_the_limit():
    @metal.jit(device=True)
    def big():
        s = metal.shared.array(6000, np.float32)
        s[0] = 1.0
        return s[0]

    def k(out):
        t = metal.shared.array(3000, np.float32)
        t[0] = big()
        out[0] = t[0]

    with pytest.raises(UnsupportedFeatureError, match="more than Metal's 32768"):
        metal.compile_msl(k, (f32,))


@metal.jit
def cuda_style_declarations(a, out):
    """numba.cuda code often passes shape/dtype by keyword and uses Numba's types as dtypes."""
    s = metal.shared.array(shape=(TILE, 2), dtype=float32)
    loc = metal.local.array(shape=3, dtype=int32)
    t = metal.threadIdx.x
    loc[0] = t
    s[t, 0] = a[t] + loc[0]
    metal.syncthreads()
    out[t] = s[TILE - 1 - t, 0]


def test_keyword_arguments_and_numba_dtypes():
    a = np.arange(TILE, dtype=np.float32)
    out = np.zeros(TILE, np.float32)
    cuda_style_declarations[1, TILE](a, out)
    np.testing.assert_array_equal(out, 2 * a[::-1])


# -- local memory ---------------------------------------------------------------------------------


@metal.jit
def local_arrays(out):
    i = metal.grid(1)
    m = metal.local.array((3, 4), np.float32)
    v = metal.local_array(4, np.int32)
    for r in range(3):
        for c in range(4):
            m[r, c] = i * 100 + r * 10 + c
    for c in range(4):
        v[c] = c * c
    s = 0.0
    for r in range(3):
        for c in range(4):
            s += m[r, c] * v[c]
    out[i] = s


def test_local_arrays_nd_and_both_spellings_are_private_per_thread():
    out = np.zeros(64, np.float32)
    local_arrays[2, 32](out)
    i = np.arange(64)[:, None, None]
    m = i * 100 + np.arange(3)[None, :, None] * 10 + np.arange(4)[None, None, :]
    np.testing.assert_array_equal(out, (m * (np.arange(4) ** 2)).sum(axis=(1, 2)))


# -- constant memory ------------------------------------------------------------------------------

WEIGHTS = np.array([[0.25, 0.5, 0.25], [1.0, -2.0, 1.0]], dtype=np.float32)
OFFSETS = np.arange(5, dtype=np.int32) * 3


@metal.jit
def const_arrays(a, out):
    w = metal.const.array_like(WEIGHTS)
    off = metal.const.array_like(OFFSETS)
    i = metal.grid(1)
    if 1 <= i < a.size - 1:
        out[0, i] = w[0, 0] * a[i - 1] + w[0, 1] * a[i] + w[0, 2] * a[i + 1]
        out[1, i] = w[1, 0] * a[i - 1] + w[1, 1] * a[i] + w[1, 2] * a[i + 1] + off[i % 5]


def test_const_array_like_bakes_host_data_into_the_kernel():
    a = (np.arange(32, dtype=np.float32) ** 2) / 7
    out = np.zeros((2, 32), np.float32)
    const_arrays[1, 32](a, out)
    i = np.arange(1, 31)
    np.testing.assert_allclose(out[0, 1:31], 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1], rtol=1e-6)
    np.testing.assert_allclose(out[1, 1:31], a[i - 1] - 2 * a[i] + a[i + 1] + OFFSETS[i % 5], rtol=1e-5,
                               atol=1e-5)
    assert "constant float" in const_arrays.inspect_msl(const_arrays.specializations and
                                                         next(iter(const_arrays.specializations)))


def test_const_array_is_read_only():
    def k(out):
        w = metal.const.array_like(WEIGHTS)
        w[0, 0] = 1.0
        out[0] = w[0, 0]

    with pytest.raises(NumbaMetalError, match="readonly|read-only"):
        metal.compile_msl(k, (f32,))


def test_const_float64_array_holds_exact_float64_bit_patterns():
    data = np.array([0.1, -0.0, 1e-310])

    def k(out):
        w = metal.const.array_like(data)
        out[0] = w[0]

    src = metal.compile_msl(k, (f32,))
    assert "constant ulong" in src and "0x3FB999999999999AUL" in src and "0x8000000000000000UL" in src
