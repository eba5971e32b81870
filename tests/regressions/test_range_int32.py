"""Regression: ``range()`` of int32 values (Numba's range_state_int32, e.g. ``range(np.int32(n))``)
generated MSL that did not compile: the prelude's trip-count helper had long and ulong overloads
only, so an int call was ambiguous. Found by the differential tests."""

import numpy as np

from numba_metal import metal


@metal.jit
def int32_ranges(out, n, lo):
    i = metal.grid(1)
    if i < out.shape[0]:
        s = 0
        for j in range(np.int32(n)):
            s += j
        for j in range(np.int32(lo), np.int32(i), np.int32(-2)):
            s += 100 * j
        out[i, 0] = s
        out[i, 1] = len(range(np.int32(lo), np.int32(n)))


def _expected(i, n, lo):
    s = sum(range(n)) + sum(100 * j for j in range(lo, i, -2))
    return [s, len(range(lo, n))]


def test_range_of_int32_iterates_like_python():
    out = np.zeros((6, 2), np.int64)
    int32_ranges[1, 8](out, np.int32(5), np.int32(7))
    assert out.tolist() == [_expected(i, 5, 7) for i in range(6)]
