"""numba.cuda's lanemask_lt, match_any_sync, match_all_sync and eq_sync (kernel_api/simd.py) on SIMD
groups of 32, with partial groups (threadgroups of 48 threads: the second SIMD group has 16 lanes),
against a Python model of CUDA's definitions per SIMD group. Masks follow numba-metal's rule: the full
mask or activemask()."""

import numpy as np
import pytest

from numba_metal import metal

THREADS = 48


def _groups(x):
    return [x[0:32], x[32:48]]


@metal.jit
def matches(x, f, masks, preds):
    i = metal.grid(1)
    masks[0, i] = metal.lanemask_lt()
    masks[1, i] = metal.match_any_sync(0xffffffff, x[i])
    m, p = metal.match_all_sync(metal.activemask(), x[i])
    masks[2, i] = m
    preds[0, i] = p
    m2, p2 = metal.match_all_sync(0xffffffff, f[i])
    masks[3, i] = m2
    preds[1, i] = p2
    masks[4, i] = metal.match_any_sync(0xffffffff, f[i])
    preds[2, i] = metal.eq_sync(0xffffffff, x[i] > 0)


def _match_any(g):
    return [sum(1 << k for k in range(len(g)) if g[k] == v) for v in g]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32])
def test_match_and_lanemask_against_cudas_definitions(dtype):
    x = (np.arange(THREADS) % 3).astype(dtype)
    f = np.ones(THREADS, np.float32)
    f[40] = -0.0  # equal to 0.0 as a float, not as bits: match compares bits
    f[41] = 0.0
    masks = np.zeros((5, THREADS), np.int64)
    preds = np.zeros((3, THREADS), np.bool_)
    matches[1, THREADS](x, f, masks, preds)
    u = masks & 0xffffffff
    for lo, (gx, gf) in zip((0, 32), zip(_groups(x), _groups(f))):
        n = len(gx)
        lanes = slice(lo, lo + n)
        active = (1 << n) - 1
        np.testing.assert_array_equal(u[0, lanes], [(1 << k) - 1 for k in range(n)])
        np.testing.assert_array_equal(u[1, lanes], _match_any(list(gx)))
        assert not preds[0, lanes].any() and not u[2, lanes].any()  # x differs across lanes
        all_f = len({v.tobytes() for v in gf}) == 1
        np.testing.assert_array_equal(u[3, lanes], [active if all_f else 0] * n)
        np.testing.assert_array_equal(preds[1, lanes], [all_f] * n)
        np.testing.assert_array_equal(u[4, lanes], _match_any([v.tobytes() for v in gf]))
        pos = [v > 0 for v in gx]
        np.testing.assert_array_equal(preds[2, lanes], [all(pos) or not any(pos)] * n)
    assert preds[1, 0:32].all()  # the first group's floats are all 1.0


@metal.jit
def all_same(x, masks, preds):
    i = metal.grid(1)
    m, p = metal.match_all_sync(0xffffffff, x[i] * 0 + 7)
    masks[i] = m
    preds[0, i] = p
    preds[1, i] = metal.eq_sync(0xffffffff, x[i] > 1000)


def test_match_all_and_eq_sync_when_every_lane_agrees():
    x = np.arange(THREADS, dtype=np.int32)
    masks = np.zeros(THREADS, np.int64)
    preds = np.zeros((2, THREADS), np.bool_)
    all_same[1, THREADS](x, masks, preds)
    np.testing.assert_array_equal(masks & 0xffffffff, [0xffffffff] * 32 + [0xffff] * 16)
    assert preds.all()


def test_a_partial_mask_is_refused():
    def k(x, out):
        out[0] = metal.match_any_sync(0xffff, x[0])
    with pytest.raises(Exception, match="only the full mask"):
        metal.compile_msl(k, "void(int32[:], int32[:])")
