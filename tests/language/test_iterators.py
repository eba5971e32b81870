"""``enumerate``, ``zip`` and ``iter`` in kernels, checked against Python on the same data.

numba.cuda types and lowers them as Numba does (its tests: cudapy/test_iterators.py, whose kernels are
the first ones here, renamed): ``for i, v in enumerate(x)``, ``for a, b in zip(x, y)``, nested either way,
over arrays, ranges and tuples.
"""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import KernelCompilationError

X = np.asarray((10, 9, 8, 7, 6))
Y = np.asarray((1, 2, 3, 4, 5))


@metal.jit
def enumerator(x, error):
    count = 0
    for i, v in enumerate(x):
        if count != i:
            error[0] = 1
        if v != x[i]:
            error[0] = 2
        count += 1
    if count != len(x):
        error[0] = 3


@metal.jit
def enumerator_zipper(x, y, error):
    count = 0
    for i, (xv, yv) in enumerate(zip(x, y)):
        if i != count:
            error[0] = 1
        if xv != x[i]:
            error[0] = 2
        if yv != y[i]:
            error[0] = 3
        count += 1
    if count != len(x):
        error[0] = 4


@metal.jit
def zipper_enumerator(x, y, error):
    count = 0
    for (i, xv), yv in zip(enumerate(x), y):
        if i != count:
            error[0] = 1
        if xv != x[i]:
            error[0] = 2
        if yv != y[i]:
            error[0] = 3
        count += 1
    if count != len(x):
        error[0] = 4


def test_numba_cuda_iterators():
    error = np.zeros(1, np.int32)
    enumerator[1, 1](X, error)
    assert error[0] == 0
    for kernel in (enumerator_zipper, zipper_enumerator):
        kernel[1, 1](X, Y, error)
        assert error[0] == 0


def sums(x, y, t, out):
    s = 0
    for i, v in enumerate(x):
        s += i * v
    out[0] = s
    s = 0
    for a, b in zip(x, y):
        s += a * b
    out[1] = s
    s = 0
    for i, (a, b) in enumerate(zip(x, y), 2):          # a start
        s += i * a - b
    out[2] = s
    s = 0
    for (i, a), b in zip(enumerate(x), range(10, 13)):  # stops with its shortest source
        s += i + a * b
    out[3] = s
    s = 0
    for v in iter(x):
        s += v
    for v in iter(range(3)):
        s += v
    out[4] = s
    s = 0
    for i, v in enumerate(t):                          # a tuple
        s += i * v
    out[5] = s
    s = 0
    for a, b, c in zip(x, y[::-1], range(100)):        # three sources, one a view
        s += a * b + c
    out[6] = s


def test_enumerate_zip_and_iter_over_arrays_ranges_and_tuples():
    out = np.zeros(7, np.int64)
    metal.jit(sums)[1, 1](X, Y, (4, 5, 6), out)
    expected = np.zeros(7, np.int64)
    sums(X, Y, (4, 5, 6), expected)
    np.testing.assert_array_equal(out, expected)


def rows(m, out):
    for i, row in enumerate(m):         # the rows of a 2-D array are views
        for j, v in enumerate(row):
            out[i, j] = v * (i + 1) + j


def test_enumerate_yields_views_of_the_rows_of_a_2d_array():
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = np.zeros_like(m)
    metal.jit(rows)[1, 1](m, out)
    expected = np.zeros_like(m)
    rows(m, expected)
    np.testing.assert_array_equal(out, expected)


def test_enumerating_a_heterogeneous_tuple_is_refused_at_typing_as_numba_refuses_it():
    def hetero(out):
        for i, v in enumerate((1, 2.5)):
            out[i] = v

    with pytest.raises(KernelCompilationError, match=r"(?s)test_iterators.py:\d+.*enumerate\(Tuple\("):
        metal.jit(hetero)[1, 1](np.zeros(2, np.float32))
