"""SIMD-group (warp) functions: Metal's simd_* and numba.cuda's *_sync, checked per SIMD group against
NumPy. Threadgroups of 80 threads make the last SIMD group of each threadgroup a partial one (16
lanes), where reductions, votes and activemask see only the live lanes."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError

GROUPS, THREADS = 2, 80
N = GROUPS * THREADS


def _simd_groups(x):
    """Split per-thread values into the SIMD groups of the launch: a list of arrays."""
    out = []
    for g in range(GROUPS):
        block = x[g * THREADS:(g + 1) * THREADS]
        out.extend(block[s:s + 32] for s in range(0, THREADS, 32))
    return out


@metal.jit
def reductions(x, out):
    i = metal.grid(1)
    v = x[i]
    out[0, i] = metal.simd_sum(v)
    out[1, i] = metal.simd_product(v)
    out[2, i] = metal.simd_max(v)
    out[3, i] = metal.simd_min(v)
    out[4, i] = metal.simd_prefix_exclusive_sum(v)
    out[5, i] = metal.simd_prefix_inclusive_sum(v)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float32])
def test_reductions_and_scans(dtype):
    rng = np.random.default_rng(7)
    x = rng.integers(1, 4, N).astype(dtype)  # small values: products stay exact and in range
    if dtype == np.float32:
        x = x * np.float32(0.5)
    out = np.zeros((6, N), dtype)
    reductions[GROUPS, THREADS](x, out)
    got = [_simd_groups(row) for row in out]
    for k, g in enumerate(_simd_groups(x)):
        np.testing.assert_array_equal(got[0][k], np.full(len(g), g.sum(dtype=dtype)))
        np.testing.assert_array_equal(got[1][k], np.full(len(g), g.prod(dtype=dtype)))
        np.testing.assert_array_equal(got[2][k], np.full(len(g), g.max()))
        np.testing.assert_array_equal(got[3][k], np.full(len(g), g.min()))
        incl = np.cumsum(g, dtype=dtype)
        np.testing.assert_array_equal(got[4][k], incl - g)
        np.testing.assert_array_equal(got[5][k], incl)


@metal.jit
def metal_shuffles(x, out):
    i = metal.grid(1)
    v = x[i]
    lane = metal.simd_lane_id()
    out[0, i] = metal.simd_shuffle(v, (lane * 7 + 3) % 16)   # a different source per lane
    out[1, i] = metal.simd_shuffle_up(v, 3)
    out[2, i] = metal.simd_shuffle_down(v, 5)
    out[3, i] = metal.simd_shuffle_xor(v, 6)
    out[4, i] = metal.simd_broadcast(v, 9)


def _up(g, d):
    return np.array([g[k - d] if k >= d else g[k] for k in range(len(g))])


def _down(g, d):
    return np.array([g[k + d] if k + d < len(g) else g[k] for k in range(len(g))])


def test_metal_shuffles():
    x = (np.arange(N, dtype=np.float32) * 1.5) - 20
    out = np.zeros((5, N), np.float32)
    metal_shuffles[GROUPS, THREADS](x, out)
    got = [_simd_groups(row) for row in out]
    for k, g in enumerate(_simd_groups(x)):
        lanes = np.arange(len(g))
        np.testing.assert_array_equal(got[0][k], g[(lanes * 7 + 3) % 16])
        np.testing.assert_array_equal(got[1][k], _up(g, 3))
        np.testing.assert_array_equal(got[2][k], _down(g, 5))
        np.testing.assert_array_equal(got[3][k], g[lanes ^ 6])
        np.testing.assert_array_equal(got[4][k], np.full(len(g), g[9]))


@metal.jit
def cuda_shuffles(x, out, src, delta):
    i = metal.grid(1)
    v = x[i]
    out[0, i] = metal.shfl_sync(0xFFFFFFFF, v, src)          # src >= 32: taken modulo 32
    out[1, i] = metal.shfl_up_sync(0xFFFFFFFF, v, delta)
    out[2, i] = metal.shfl_down_sync(0xFFFFFFFF, v, delta)
    out[3, i] = metal.shfl_xor_sync(0xFFFFFFFF, v, 16)
    mask = metal.activemask()
    out[4, i] = metal.shfl_down_sync(mask, v, 1)               # activemask() is an honoured mask


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.float32])
def test_cuda_shuffles_and_out_of_range_lanes(dtype):
    x = (np.arange(N) * 3 + 2**40 * (np.dtype(dtype).itemsize == 8)).astype(dtype)
    out = np.zeros((5, N), dtype)
    groups = [g for g in _simd_groups(x) if len(g) == 32]  # full SIMD groups: CUDA semantics apply
    for src, delta in ((35, 33), (-1, 2)):
        cuda_shuffles[GROUPS, THREADS](x, out, src, delta)
        got = [[r for r in _simd_groups(row) if len(r) == 32] for row in out]
        for k, g in enumerate(groups):
            lanes = np.arange(32)
            np.testing.assert_array_equal(got[0][k], np.full(32, g[src % 32]))
            np.testing.assert_array_equal(got[1][k], _up(g, delta % 32))
            np.testing.assert_array_equal(got[2][k], _down(g, delta % 32))
            np.testing.assert_array_equal(got[3][k], g[lanes ^ 16])
            np.testing.assert_array_equal(got[4][k], _down(g, 1))


@metal.jit
def votes(x, out, ballots):
    i = metal.grid(1)
    v = x[i]
    out[0, i] = metal.simd_all(v > 0)
    out[1, i] = metal.simd_any(v > 100)
    out[2, i] = metal.all_sync(0xFFFFFFFF, v > 0)
    out[3, i] = metal.any_sync(0xFFFFFFFF, v > 100)
    ballots[0, i] = metal.simd_ballot(v % 3 == 0)
    ballots[1, i] = metal.ballot_sync(0xFFFFFFFF, v % 3 == 0)
    ballots[2, i] = metal.activemask()
    if metal.laneid < 10:
        ballots[3, i] = metal.activemask()   # inside a branch: only the lanes that took it
        ballots[4, i] = metal.ballot_sync(metal.activemask(), True)
    else:
        ballots[3, i] = 0
        ballots[4, i] = 0


def _bits(flags):
    return int(sum(1 << k for k, f in enumerate(flags) if f))


def test_votes_ballots_and_activemask():
    x = np.arange(1, N + 1, dtype=np.int32)
    x[40] = -1  # SIMD group 1 of threadgroup 0 is not all positive
    x[150] = 500
    out = np.zeros((4, N), np.int32)
    ballots = np.zeros((5, N), np.uint64)
    votes[GROUPS, THREADS](x, out, ballots)
    got = [_simd_groups(row) for row in out]
    gb = [_simd_groups(row) for row in ballots]
    for k, g in enumerate(_simd_groups(x)):
        n = len(g)
        assert (got[0][k] == int((g > 0).all())).all()
        assert (got[1][k] == int((g > 100).any())).all()
        np.testing.assert_array_equal(got[2][k], got[0][k])
        np.testing.assert_array_equal(got[3][k], got[1][k])
        assert (gb[0][k] == _bits(g % 3 == 0)).all()
        assert (gb[1][k] == _bits(g % 3 == 0)).all()
        assert (gb[2][k] == (1 << n) - 1).all()          # a partial SIMD group: only its live lanes
        assert (gb[3][k][:10] == 0x3FF).all() and (gb[3][k][10:] == 0).all()
        assert (gb[4][k][:10] == 0x3FF).all()


# -- masks Metal cannot honour, unsupported values ------------------------------------------------


@pytest.mark.parametrize("call", ["metal.shfl_sync(0xFFFF, v, 0)", "metal.all_sync(1, v > 0)",
                                  "metal.ballot_sync(m, v > 0)", "metal.shfl_down_sync(m, v, 1)"])
def test_partial_or_runtime_masks_are_refused_clearly(call):
    ns = {"metal": metal}
    exec(f"def k(a, m):\n    v = a[0]\n    a[1] = {call}\n", ns)
    with pytest.raises(UnsupportedFeatureError, match="0xffffffff") as e:
        metal.compile_msl(ns["k"], (types.int32[::1], types.uint32))
    assert "every active lane" in str(e.value)


def test_unsupported_value_types_are_refused():
    def k(a):
        a[0] = metal.simd_sum((a[0], a[1]))

    with pytest.raises(UnsupportedFeatureError, match="not supported"):
        metal.compile_msl(k, (types.int32[::1],))
