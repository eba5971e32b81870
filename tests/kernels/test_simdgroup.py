"""SIMD-group matrices (metal.simdgroup): 8x8 float32 and float16 matrices loaded, multiplied and stored by the
32 threads of a SIMD group, checked against NumPy. Values are small integers (and halves), exact in float16
and float32 whatever the order of the sums, since MSL states neither the order nor the precision of
simdgroup_multiply_accumulate; one test uses random float32 values with a tolerance."""

import os
import runpy
import subprocess
import sys

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import (KernelBoundsError, KernelCompilationError, KernelLaunchError, MetalRuntimeError,
                                UnsupportedFeatureError)

sg = metal.simdgroup
DTYPES = (np.float32, np.float16)


def _ints(rng, shape, dtype, lo=-4, hi=5):
    return (rng.integers(lo, hi, shape) * 0.5).astype(dtype)


@metal.jit
def mma_tiles(a, b, c, out):
    # Each SIMD group of the threadgroup computes one 8x8 tile of a @ b + c; the threadgroup covers a 16x16 out.
    s = metal.threadIdx.x // 32
    row = (s // 2) * 8
    col = (s % 2) * 8
    acc = sg.load(c, row, col)
    for k in range(0, a.shape[1], 8):
        x = sg.load(a, row, k)
        y = sg.load(b, k, col)
        acc = sg.multiply_accumulate(x, y, acc)
    sg.store(acc, out, row, col)


@pytest.mark.parametrize("dtype", DTYPES)
def test_multiply_accumulate_tiles_match_numpy(dtype):
    rng = np.random.default_rng(1)
    a, b, c = _ints(rng, (16, 24), dtype), _ints(rng, (24, 16), dtype), _ints(rng, (16, 16), dtype)
    out = np.zeros((16, 16), dtype)
    mma_tiles[1, 128](a, b, c, out)
    want = (a.astype(np.float64) @ b.astype(np.float64) + c).astype(dtype)
    np.testing.assert_array_equal(out, want)


@metal.jit
def multiply_transposed(a, b, out, out_t):
    x = sg.load(a, transpose=True)              # a.T
    y = sg.load(b)
    d = sg.multiply(x, y)
    sg.store(d, out)
    sg.store(d, out_t, 0, 0, True)               # d.T


@pytest.mark.parametrize("dtype", DTYPES)
def test_multiply_and_transposed_loads_and_stores(dtype):
    rng = np.random.default_rng(2)
    a, b = _ints(rng, (8, 8), dtype), _ints(rng, (8, 8), dtype)
    out, out_t = np.zeros((8, 8), dtype), np.zeros((8, 8), dtype)
    multiply_transposed[1, 32](a, b, out, out_t)
    want = (a.T.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out_t, want.T)


@metal.jit
def origins_and_leading_dimension(flat, out2d, out_flat):
    # flat holds a 12x10 matrix in rows of 10: the tile at row 3, column 2, written at (1, 4) of out2d and, as
    # rows of 9 elements, at row 2, column 1 of out_flat.
    m = sg.load(flat, 3, 2, False, 10)
    sg.store(m, out2d, 1, 4)
    sg.store(m, out_flat, row=2, col=1, ld=9)


def test_origin_and_leading_dimension_address_the_tile():
    src = np.arange(120, dtype=np.float32).reshape(12, 10)
    out2d = np.full((10, 13), -1, np.float32)
    out_flat = np.full(11 * 9, -1, np.float32)
    origins_and_leading_dimension[1, 32](src.ravel(), out2d, out_flat)
    want2d = np.full((10, 13), -1, np.float32)
    want2d[1:9, 4:12] = src[3:11, 2:10]
    np.testing.assert_array_equal(out2d, want2d)
    want_flat = np.full((11, 9), -1, np.float32)
    want_flat[2:10, 1:9] = src[3:11, 2:10]
    np.testing.assert_array_equal(out_flat.reshape(11, 9), want_flat)


@metal.jit
def through_shared_memory(a, out):
    tile = metal.shared.array((8, 16), np.float16)
    t = metal.threadIdx.x
    for k in range(t, 128, 32):
        tile[k // 16, k % 16] = a[k // 16, k % 16] * 2
    metal.syncthreads()
    m = sg.load(tile, 0, 8)
    one = sg.diagonal(1.0, np.float16)
    m = sg.multiply_accumulate(one, m, sg.fill(0.5, np.float16))
    sg.store(m, tile, 0, 0)
    metal.syncthreads()
    for k in range(t, 128, 32):
        out[k // 16, k % 16] = tile[k // 16, k % 16]


def test_threadgroup_arrays_fill_and_diagonal():
    a = _ints(np.random.default_rng(3), (8, 16), np.float16)
    out = np.zeros((8, 16), np.float16)
    through_shared_memory[1, 32](a, out)
    want = 2 * a
    want[:, :8] = 2 * a[:, 8:] + np.float16(0.5)
    np.testing.assert_array_equal(out, want)


@metal.jit
def constants(out):
    sg.store(sg.fill(3), out, 0, 0)
    sg.store(sg.diagonal(-2.5), out, 8, 0)


def test_fill_and_diagonal_default_to_float32():
    out = np.zeros((16, 8), np.float32)
    constants[1, 64](out)
    np.testing.assert_array_equal(out[:8], np.full((8, 8), 3, np.float32))
    np.testing.assert_array_equal(out[8:], np.diag(np.full(8, -2.5, np.float32)))


def test_random_float32_within_rounding_of_numpy():
    rng = np.random.default_rng(4)
    a, b, c = (rng.standard_normal((16, 24)).astype(np.float32), rng.standard_normal((24, 16)).astype(np.float32),
               rng.standard_normal((16, 16)).astype(np.float32))
    out = np.zeros((16, 16), np.float32)
    mma_tiles[1, 128](a, b, c, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


@metal.jit(device=True)
def _plus_twice_a(m, a):
    return sg.multiply_accumulate(m, sg.diagonal(2.0), sg.load(a))


@metal.jit
def through_a_device_function(a, out, flag):
    m = sg.load(a)
    if flag > 0:                  # the same on every thread: uniform control flow
        m = _plus_twice_a(m, a)
    sg.store(m, out)


def test_device_functions_take_and_return_matrices():
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    out = np.zeros_like(a)
    through_a_device_function[1, 32](a, out, 1)
    np.testing.assert_array_equal(out, 3 * a)
    through_a_device_function[1, 32](a, out, 0)
    np.testing.assert_array_equal(out, a)


# -- refusals ------------------------------------------------------------------------------------------------------

@metal.jit
def partial_group(a, out):
    sg.store(sg.load(a), out)


def test_a_threadgroup_without_full_simd_groups_is_refused():
    a = np.ones((8, 8), np.float32)
    with pytest.raises(MetalRuntimeError, match="simdgroup_load ran without all 32 lanes of its SIMD group"):
        partial_group[1, 48](a, np.zeros((8, 8), np.float32))


@metal.jit
def divergent(a, out):
    if metal.threadIdx.x < 16:
        sg.store(sg.load(a), out)


def test_divergent_control_flow_is_refused():
    a = np.ones((8, 8), np.float32)
    with pytest.raises(MetalRuntimeError, match="uniform control flow"):
        divergent[1, 32](a, np.zeros((8, 8), np.float32))


def _compile_error(fn, *args):
    with pytest.raises((KernelCompilationError, UnsupportedFeatureError)) as e:
        metal.jit(fn)[1, 32](*args)
    return str(e.value)


def test_mixed_element_types_are_refused():
    def kernel(a, h, out):
        sg.store(sg.multiply(sg.load(a), sg.load(h)), out)
    f32, f16 = np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float16)
    msg = _compile_error(kernel, f32, f16, f32.copy())
    assert "a and b must hold one element type" in msg


def test_other_element_types_and_local_arrays_are_refused():
    def ints(a, out):
        sg.store(sg.load(a), out)
    assert "float32 or float16" in _compile_error(ints, np.zeros((8, 8), np.int32), np.zeros((8, 8), np.int32))

    def local(out):
        tile = metal.local.array((8, 8), np.float32)
        sg.store(sg.load(tile), out)
    assert "device and shared (threadgroup) arrays" in _compile_error(local, np.zeros((8, 8), np.float32))


def test_leading_dimension_of_a_2d_array_is_its_own():
    def kernel(a, out):
        sg.store(sg.load(a, 0, 0, False, 4), out)
    msg = _compile_error(kernel, np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float32))
    assert "pass ld= only with a 1-D array" in msg


def test_store_into_a_matrix_of_another_type_is_refused():
    def kernel(a, out):
        sg.store(sg.load(a), out)
    msg = _compile_error(kernel, np.zeros((8, 8), np.float32), np.zeros((8, 8), np.float16))
    assert "a float32 matrix and a float16 array" in msg


def test_outside_a_kernel():
    with pytest.raises(Exception, match="can only be called inside"):
        sg.fill(1.0)


# -- the example and the benchmark's variant -----------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_example_runs_and_checks_itself(capsys):
    runpy.run_path(os.path.join(ROOT, "examples", "simdgroup_matmul.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "float32: C = A @ B + C" in out and "float16: C = A @ B + C" in out


def test_the_benchmark_variant_is_correct():
    sys.path.insert(0, os.path.join(ROOT, "tests", "benchmarks"))
    try:
        from bench_paths import load
    finally:
        sys.path.pop(0)
    result = load("matmul_simdgroup").run(64, 1)
    assert result["kernels"]["simdgroup"]["correct"] and result["kernels"]["tiled"]["correct"]


def test_a_gpu_without_apple7_is_refused_before_any_simdgroup_kernel_runs():
    # The simulated Metal device posing as an Intel Mac's GPU (family Mac2, no Apple7): numba-metal refuses the
    # device itself, naming SIMD-group matrices among what it lacks, so no kernel of this family reaches it.
    code = ("import numpy as np\nfrom numba_metal import metal\n"
            "@metal.jit\ndef k(a, o):\n    metal.simdgroup.store(metal.simdgroup.load(a), o)\n"
            "k[1, 32](np.ones((8, 8), np.float32), np.zeros((8, 8), np.float32))\n")
    env = dict(os.environ, NUMBA_METAL_DEVICE="metal-sim", NUMBA_METAL_SIM_GPU="mac2", PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "UnsupportedPlatformError" in proc.stderr and "family 7 or later" in proc.stderr
    assert "SIMD-group matrices" in proc.stderr


def test_debug_mode_checks_that_the_tile_lies_inside_the_array():
    @metal.jit(debug=True)
    def tile_at(a, flat, out, row, col):
        m = sg.load(a, row, col)
        sg.store(m, out)
        sg.store(m, flat, row, col, ld=8)

    a, flat, out = np.ones((12, 12), np.float32), np.zeros(88, np.float32), np.zeros((8, 8), np.float32)
    tile_at[1, 32](a, flat, out, 2, 4)                           # inside: runs
    np.testing.assert_array_equal(out, np.ones((8, 8), np.float32))
    with pytest.raises(KernelBoundsError, match="index 12 is out of bounds for axis 1 with size 12 in array 'a'"):
        tile_at[1, 32](a, flat, out, 0, 5)                       # columns 5..12 of a 12-wide array
    with pytest.raises(KernelBoundsError, match="out of bounds for axis 0 with size 12 in array 'a'"):
        tile_at[1, 32](a, flat, out, -1, 0)                      # a negative origin does not wrap
    with pytest.raises(KernelBoundsError, match="index 95 is out of bounds for axis 0 with size 88 in array 'flat'"):
        tile_at[1, 32](a, flat, out, 4, 0)                       # rows 4..11 of 8 in an 88-element array


def test_an_array_only_loaded_may_be_read_only():
    # load only reads: a read-only NumPy array is accepted where store's target is refused at launch.
    @metal.jit
    def copy_tile(a, out):
        sg.store(sg.load(a), out)

    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    a.flags.writeable = False
    out = np.zeros((8, 8), np.float32)
    copy_tile[1, 32](a, out)
    np.testing.assert_array_equal(out, a)
    frozen = np.zeros((8, 8), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(KernelLaunchError, match="argument 1 of copy_tile.. is read-only NumPy memory"):
        copy_tile[1, 32](a, frozen)
