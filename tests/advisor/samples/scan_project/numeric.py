"""Sample for `advisor scan`: Numba functions and plain loops with varied patterns and blockers."""
import math

import numpy as np
from numba import guvectorize, njit, prange, stencil, vectorize

SCALE = 2.5


@njit("float32(float32[:], float32[:])")
def dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@njit("void(float64[:], float64[:], float64[:])")
def saxpy(x, y, out):
    for i in range(out.shape[0]):
        out[i] = 2.0 * x[i] + y[i]


@vectorize(["float32(float32, float32)"])
def hypot2(x, y):
    return math.sqrt(x * x + y * y)


@guvectorize(["void(float32[:], float32[:])"], "(n)->(n)")
def double_it(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2


@stencil
def blur(a):
    return (a[-1] + a[0] + a[1]) / 3


@njit(parallel=True)
def scaled_sqrt(a, out):
    for i in prange(a.shape[0]):
        out[i] = math.sqrt(a[i]) * SCALE


@njit("float32(float32[:])")
def normalized_sum(a):
    tmp = np.zeros(a.shape[0], dtype=np.float32)
    for i in range(a.shape[0]):
        tmp[i] = a[i] / np.sum(a)
    return tmp[0]


@njit
def careful(a, out):
    for i in range(a.shape[0]):
        try:
            out[i] = 1.0 / a[i]
        except ZeroDivisionError:
            print("zero at", i)
            out[i] = 0.0


def matmul(a, b, c):
    n, m = a.shape
    p = b.shape[1]
    for i in range(n):
        for j in range(p):
            acc = 0.0
            for k in range(m):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


def heat_step(u, out):
    for i in range(1, u.shape[0] - 1):
        out[i] = u[i] + 0.1 * (u[i - 1] - 2 * u[i] + u[i + 1])


def estimate_pi(n):
    inside = 0
    for _ in range(n):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y <= 1.0:
            inside += 1
    return 4.0 * inside / n


def no_loops(a):
    return a + 1


class Model:
    def forward(self, x, out):
        for i in range(x.shape[0]):
            out[i] = math.tanh(x[i])


@njit("void(float32[:], float32[:])")
def uses_global(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * SCALE
