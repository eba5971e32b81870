"""float32 kernels whose MSL must not change when float64 became exact (test_f64_compiler.py)."""
import math

import numpy as np

from numba_metal import metal


def axpy(a, x, y, out):
    i = metal.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def literals_and_int_division(x, out, n):
    i = metal.grid(1)
    if i < x.size:
        out[i] = x[i] * 2.5 + i / n - 0.1 + x[i] / 3


def math_of_ints_and_floats(x, out):
    i = metal.grid(1)
    if i < x.size:
        out[i] = math.sin(i) + math.sqrt(x[i]) + math.exp(x[i] * 0.5) + math.floor(x[i]) + abs(x[i])


def minmax_round_compare(x, out, iout):
    i = metal.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = min(v, 1.0) + max(v, i) + (v % 2.0) + (v // 3.0) + v ** 2 + math.pow(v, 0.5)
        iout[i] = round(v) + int(v > 0.5) + int(v == i)


def shared_reduction(x, out):
    s = metal.shared.array(64, np.float32)
    t = metal.threadIdx.x
    i = metal.grid(1)
    s[t] = x[i] if i < x.size else 0.0
    metal.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        metal.syncthreads()
        step //= 2
    if t == 0:
        out[metal.blockIdx.x] = s[0]


def halves_and_casts(h, out):
    i = metal.grid(1)
    if i < h.size:
        out[i] = np.float32(h[i]) * 1.5 + float(i) + np.float32(i) / 7


CORPUS = (
    (axpy, "void(float32, float32[:], float32[:], float32[:])"),
    (literals_and_int_division, "void(float32[:], float32[:], int64)"),
    (math_of_ints_and_floats, "void(float32[:], float32[:])"),
    (minmax_round_compare, "void(float32[:], float32[:], int32[:])"),
    (shared_reduction, "void(float32[:], float32[:])"),
    (halves_and_casts, "void(float16[:], float32[:])"),
)
