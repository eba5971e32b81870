"""Thread indexing: metal.grid/gridsize/threadgroup_position/... and numba.cuda's threadIdx/blockIdx/
blockDim/gridDim/laneid/warpsize, checked per thread against positions computed with NumPy."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError


@metal.jit
def positions_1d(out):
    i = metal.grid(1)
    if i < out.shape[0]:
        out[i, 0] = i
        out[i, 1] = metal.gridsize(1)
        out[i, 2] = metal.threadgroup_position(1)
        out[i, 3] = metal.thread_in_threadgroup(1)
        out[i, 4] = metal.threads_per_threadgroup(1)
        out[i, 5] = metal.threadgroups_per_grid(1)
        out[i, 6] = metal.threadIdx.x
        out[i, 7] = metal.blockIdx.x
        out[i, 8] = metal.blockDim.x
        out[i, 9] = metal.gridDim.x
        out[i, 10] = metal.laneid
        out[i, 11] = metal.warpsize
        out[i, 12] = metal.simd_lane_id()
        out[i, 13] = metal.simd_group_id()
        # numba.cuda's identity: grid(1) == blockIdx.x * blockDim.x + threadIdx.x
        out[i, 14] = metal.blockIdx.x * metal.blockDim.x + metal.threadIdx.x


def test_1d_positions_metal_and_cuda_spellings():
    groups, threads = 3, 96
    out = np.full((groups * threads, 15), -1, np.int64)
    positions_1d[groups, threads](out)
    i = np.arange(groups * threads)
    tid, tg = i % threads, i // threads
    expected = np.stack([i, np.full_like(i, groups * threads), tg, tid, np.full_like(i, threads),
                         np.full_like(i, groups), tid, tg, np.full_like(i, threads), np.full_like(i, groups),
                         tid % 32, np.full_like(i, 32), tid % 32, tid // 32, i], axis=1)
    np.testing.assert_array_equal(out, expected)


@metal.jit
def positions_3d(out):
    x, y, z = metal.grid(3)
    gx, gy, gz = metal.gridsize(3)
    bx, by, bz = metal.threadgroup_position(3)
    tx, ty, tz = metal.thread_in_threadgroup(3)
    nx, ny, nz = metal.threads_per_threadgroup(3)
    mx, my, mz = metal.threadgroups_per_grid(3)
    row = out[z, y, x]
    row[0] = x
    row[1] = y
    row[2] = z
    row[3] = gx * 10000 + gy * 100 + gz
    row[4] = bx * 10000 + by * 100 + bz
    row[5] = tx * 10000 + ty * 100 + tz
    row[6] = nx * 10000 + ny * 100 + nz
    row[7] = mx * 10000 + my * 100 + mz
    row[8] = metal.threadIdx.x * 10000 + metal.threadIdx.y * 100 + metal.threadIdx.z
    row[9] = metal.blockIdx.x * 10000 + metal.blockIdx.y * 100 + metal.blockIdx.z
    row[10] = metal.blockDim.x * 10000 + metal.blockDim.y * 100 + metal.blockDim.z
    row[11] = metal.gridDim.x * 10000 + metal.gridDim.y * 100 + metal.gridDim.z
    row[12] = metal.laneid
    row[13] = metal.simd_group_id()


@metal.jit
def positions_2d(out):
    x, y = metal.grid(2)
    gx, gy = metal.gridsize(2)
    bx, by = metal.threadgroup_position(2)
    tx, ty = metal.thread_in_threadgroup(2)
    nx, ny = metal.threads_per_threadgroup(2)
    mx, my = metal.threadgroups_per_grid(2)
    out[y, x, 0] = x * 100 + y
    out[y, x, 1] = gx * 100 + gy
    out[y, x, 2] = bx * 100 + by
    out[y, x, 3] = tx * 100 + ty
    out[y, x, 4] = nx * 100 + ny
    out[y, x, 5] = mx * 100 + my


def _pack(a, b, c):
    return a * 10000 + b * 100 + c


def test_3d_positions_metal_and_cuda_spellings():
    groups, threads = (2, 3, 2), (8, 2, 4)  # 64 threads per group: two SIMD groups
    shape = tuple(g * t for g, t in zip(groups, threads))  # (x, y, z)
    out = np.zeros((shape[2], shape[1], shape[0], 14), np.int64)
    positions_3d[groups, threads](out)
    z, y, x = np.meshgrid(np.arange(shape[2]), np.arange(shape[1]), np.arange(shape[0]), indexing="ij")
    tx, ty, tz = x % threads[0], y % threads[1], z % threads[2]
    bx, by, bz = x // threads[0], y // threads[1], z // threads[2]
    linear = tx + ty * threads[0] + tz * threads[0] * threads[1]
    np.testing.assert_array_equal(out[..., 0], x)
    np.testing.assert_array_equal(out[..., 1], y)
    np.testing.assert_array_equal(out[..., 2], z)
    assert (out[..., 3] == _pack(*shape)).all()
    np.testing.assert_array_equal(out[..., 4], _pack(bx, by, bz))
    np.testing.assert_array_equal(out[..., 5], _pack(tx, ty, tz))
    assert (out[..., 6] == _pack(*threads)).all()
    assert (out[..., 7] == _pack(*groups)).all()
    np.testing.assert_array_equal(out[..., 8], out[..., 5])   # threadIdx == thread_in_threadgroup
    np.testing.assert_array_equal(out[..., 9], out[..., 4])   # blockIdx == threadgroup_position
    np.testing.assert_array_equal(out[..., 10], out[..., 6])  # blockDim == threads_per_threadgroup
    np.testing.assert_array_equal(out[..., 11], out[..., 7])  # gridDim == threadgroups_per_grid
    # SIMD groups are 32 consecutive threads of the threadgroup's linear order.
    np.testing.assert_array_equal(out[..., 12], linear % 32)
    np.testing.assert_array_equal(out[..., 13], linear // 32)


def test_2d_positions():
    groups, threads = (3, 2), (4, 8)
    out = np.zeros((16, 12, 6), np.int64)
    positions_2d[groups, threads](out)
    y, x = np.meshgrid(np.arange(16), np.arange(12), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], x * 100 + y)
    assert (out[..., 1] == 1216).all()
    np.testing.assert_array_equal(out[..., 2], (x // 4) * 100 + y // 8)
    np.testing.assert_array_equal(out[..., 3], (x % 4) * 100 + y % 8)
    assert (out[..., 4] == 408).all()
    assert (out[..., 5] == 302).all()


def _return_type(expr):
    ns = {"metal": metal}
    exec(f"def f():\n    return {expr}\n", ns)
    return metal.jit(device=True)(ns["f"]).typed(()).return_type


def test_types_follow_numba_cuda():
    """grid(1) is int64 and grid(n) a tuple of int64; .x/.y/.z and laneid are int32; simd ids uint32."""
    assert _return_type("metal.grid(1)") == types.int64
    assert _return_type("metal.gridsize(2)") == types.UniTuple(types.int64, 2)
    assert _return_type("metal.threadgroup_position(3)") == types.UniTuple(types.int64, 3)
    assert _return_type("metal.threadIdx.y") == types.int32
    assert _return_type("metal.laneid") == types.int32
    assert _return_type("metal.simd_lane_id()") == types.uint32
    assert metal.warpsize == 32


@pytest.mark.parametrize("call", ["metal.grid(4)", "metal.gridsize(0)", "metal.threadgroup_position(n)"])
def test_bad_dimension_count_is_a_clear_compile_error(call):
    ns = {"metal": metal}
    exec(f"def k(a, n):\n    x = {call}\n", ns)
    with pytest.raises(UnsupportedFeatureError, match="1, 2 or 3"):
        metal.compile_msl(ns["k"], (types.int64[::1], types.int64))


@pytest.mark.parametrize("name", ["grid", "gridsize"])
def test_a_run_time_dimension_count_is_numba_cudas_require_literal_value(name):
    # numba.cuda's test_nonliteral_grid_error: a TypingError, RequireLiteralValue, that names it
    from numba.core.errors import RequireLiteralValue

    ns = {"metal": metal}
    exec(f"def k(n):\n    metal.{name}(n)\n", ns)
    with pytest.raises(RequireLiteralValue, match=f"metal.{name}\\(\\) needs a constant 1, 2 or 3 .*int32.*"
                                                  "RequireLiteralValue") as e:
        metal.jit("void(int32)")(ns["k"])
    assert isinstance(e.value, UnsupportedFeatureError)


def _positions_by_hand(out):
    i = metal.blockIdx.x * metal.blockDim.x + metal.threadIdx.x
    j = metal.threadIdx.y + metal.blockDim.y * metal.blockIdx.y
    k = metal.blockIdx.x * metal.blockDim.y + metal.threadIdx.x      # not a grid position
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j, 0] = i
        out[i, j, 1] = j
        out[i, j, 2] = k


def test_block_times_dim_plus_thread_is_the_grid_position_without_64_bit_arithmetic():
    # issue 28 item 4: numba.cuda's own definition of grid() becomes Metal's thread_position_in_grid
    text = metal.compile_msl(_positions_by_hand, "void(int64[:, :, ::1])")
    assert "long(nm_e.gid.x)" in text and "long(nm_e.gid.y)" in text
    assert text.count("long(nm_e.gid.") == 2          # the mixed-axis sum is computed as written
    out = np.full((8, 6, 3), -1, np.int64)
    metal.jit(_positions_by_hand)[(2, 3), (4, 2)](out)
    i, j = np.meshgrid(np.arange(8), np.arange(6), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], i)
    np.testing.assert_array_equal(out[..., 1], j)
    np.testing.assert_array_equal(out[..., 2], (i // 4) * 2 + i % 4)
