"""Kernels applying a kernel-side function element by element, shared by the tests of function tables
(test_libdevice*.py, test_math_float16.py): out[i] = fn(x[i]) or fn(x[i], y[i])."""

from numba_metal import metal


def unary(fn):
    @metal.jit
    def k(x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = fn(x[i])
    return k


def binary(fn):
    @metal.jit
    def k(x, y, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = fn(x[i], y[i])
    return k
