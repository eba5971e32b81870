"""Sample for `advisor scan`: existing numba-metal kernels."""
import math

from numba_metal import metal


@metal.jit("void(float32[:], float32[:], float32[:])")
def add_kernel(a, b, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


@metal.jit
def exp_kernel(a, out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = math.exp(a[i])


@metal.jit(device=True)
def clamp(x, lo, hi):
    return min(max(x, lo), hi)
