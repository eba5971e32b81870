"""fastmath=True opts a kernel into fast math; the default is safe math with precise functions."""

import math

import numpy as np

from numba_metal import metal


def nan_check(a, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = math.isnan(a[i])


def test_fastmath_option_reaches_the_device_compiler():
    a = np.array([np.nan, 1.0], np.float32)
    safe = np.zeros(2, np.bool_)
    metal.jit(nan_check)[1, 2](a, safe)
    np.testing.assert_array_equal(safe, [True, False])        # safe math honours NaN
    fast = np.zeros(2, np.bool_)
    metal.jit(fastmath=True)(nan_check)[1, 2](a, fast)
    # Fast math assumes no NaNs (MSL: NaN handling is undefined under fast math); the CPU device's
    # fast-math flags fold isnan() to false, which shows the option was applied.
    np.testing.assert_array_equal(fast, [False, False])
