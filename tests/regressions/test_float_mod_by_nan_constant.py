"""Regression: ``x % math.nan``, ``x // math.nan`` and ``math.fmod(x, math.nan)`` silently dropped the
kernel's stores on the CPU reference device: clang folds ``fmod(x, <constant NaN>)`` to poison, and
the prelude's Python ``%``/``//`` called fmod with the NaN. numba-metal now answers NaN operands
itself (``nm_mod``, ``nm_floordiv``, ``nm_fmod``). Found by the differential tests (seed 20151).

(Hand-written MSL that calls ``fmod(x, NAN)`` is still subject to the clang folding on the CPU device.)
"""

import math

import numpy as np

from numba_metal import metal


@metal.jit
def mod_by_nan(out, b):
    i = metal.grid(1)
    if i < b.size:
        x = np.float32(b[i])
        out[i, 0] = 5.0
        out[i, 1] = x % math.nan
        out[i, 2] = x // math.nan
        out[i, 3] = math.fmod(x, np.float32(math.nan))
        out[i, 4] = math.nan % x
        out[i, 5] = 7.0


def test_mod_floordiv_and_fmod_by_a_nan_constant_are_nan_and_keep_the_other_stores():
    b = np.array([0, 1, -3, 8], np.int32)
    out = np.zeros((4, 6), np.float32)
    mod_by_nan[1, 4](out, b)
    assert (out[:, 0] == 5.0).all() and (out[:, 5] == 7.0).all()
    assert np.isnan(out[:, 1:5]).all(), out
