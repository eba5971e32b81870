"""Regression: a 0-d NumPy array passed to a kernel was typed as a scalar of its dtype, so ``o[()] = 3.0``
failed to compile (``setitem(float32, Tuple(), float64)``); numba.cuda passes it as a 0-d array. A 0-d
array's ``size`` in a kernel read ``shape[0]`` of an array with no axes.
"""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import UnsupportedFeatureError


@metal.jit
def store_three(o):
    o[()] = 3.0


def test_a_0d_numpy_array_is_a_0d_array_in_the_kernel():
    o = np.array(0., np.float32)
    store_three[1, 1](o)
    assert o == 3.0
    (argtypes,) = store_three.specializations
    assert argtypes[0].ndim == 0 and str(argtypes[0].dtype) == "float32"


@metal.jit(device=True)
def twice(z):
    return z[()] * 2


@metal.jit
def describe(i, o, n):
    o[()] = twice(i) + o.size * 100 + o.ndim * 1000 + len(o.shape) * 10000
    n[()] = i.size + o.itemsize


def test_0d_arrays_are_read_written_and_measured_as_numba_does():
    i, o, n = np.array(5, np.int32), np.array(0., np.float32), np.array(0, np.int64)
    describe[1, 1](i, o, n)
    assert o == 110.0 and n == 5


def test_0d_device_arrays_views_and_mapped_arrays_are_0d_arrays():
    d = metal.to_device(np.array(0., np.float32))
    store_three[1, 1](d)
    assert d.copy_to_host() == 3.0
    whole = metal.to_device(np.zeros(4, np.float32))
    store_three[1, 1](whole[2, ...])              # a 0-d view of element 2
    assert whole.copy_to_host().tolist() == [0, 0, 3, 0]
    m = metal.mapped_array((), np.float32)
    store_three[1, 1](m)
    assert m == 3.0


def test_len_of_a_0d_array_in_a_kernel_is_an_error_as_in_numpy():
    @metal.jit
    def length(o):
        o[()] = len(o)

    with pytest.raises(UnsupportedFeatureError, match="len\\(\\) of a 0-d array"):
        length[1, 1](np.array(0., np.float32))


def test_a_record_scalar_is_still_passed_as_a_record():
    rec = np.zeros(1, np.dtype([("x", np.float32), ("y", np.int32)]))[0]

    @metal.jit
    def set_fields(r):
        r.x = 1.5
        r.y = 7

    set_fields[1, 1](rec)
    assert rec["x"] == 1.5 and rec["y"] == 7
