"""A function of two scalars returning a tuple, run elementwise over two arrays both as a numba-metal kernel
and with Numba's @njit (Numba's NumPy error model, as kernels have): result k of element i goes to
``out[k, i]``. The float64 and complex tests compare the two bit for bit."""

from __future__ import annotations

import numba
import numpy as np

from numba_metal import metal


def rows_kernel(dev):
    """A kernel writing the tuple ``dev(x[i], y[i])`` (a device function) to column i of ``out``."""
    @metal.jit
    def kernel(x, y, out):
        i = metal.grid(1)
        if i < x.size:
            r = dev(x[i], y[i])
            for k in range(len(r)):
                out[k, i] = r[k]
    return kernel


def njit_rows(fn, nout, dtype, x, y):
    """``fn`` over ``x`` and ``y`` with @njit, as an (nout, n) array of ``dtype``."""
    jfn = numba.njit(error_model="numpy")(fn)

    @numba.njit(error_model="numpy")
    def run(x, y, out):
        for i in range(x.size):
            r = jfn(x[i], y[i])
            for k in range(len(r)):
                out[k, i] = r[k]

    out = np.zeros((nout, x.size), dtype)
    with np.errstate(all="ignore"):
        run(x, y, out)
    return out
