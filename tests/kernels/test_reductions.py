"""Reductions: metal.reduce_sum/min/max and @metal.reduce / metal.Reduce (numba.cuda's cuda.reduce)."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import MetalValueError, UnsupportedFeatureError
from numba_metal.libraries.reduction import MAX_GROUPS, THREADS

# Lengths around the tree's boundaries: one partial threadgroup, exactly one, one more, the most
# threadgroups of pass 1, and more than that (threads fold several elements each).
LENGTHS = [1, 7, THREADS, THREADS + 1, 5000, MAX_GROUPS * THREADS, MAX_GROUPS * THREADS + 3, 200_003]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(42)
    return rng.standard_normal(max(LENGTHS)).astype(np.float32)


@pytest.mark.parametrize("n", LENGTHS)
def test_reduce_sum_min_max_float32(data, n):
    x = data[:n]
    d = metal.to_device(x)
    total = metal.reduce_sum(d)
    assert isinstance(total, np.float32)
    # A tree sum: within a few float32 roundings of the exact sum (a sequential sum would drift more).
    assert abs(float(total) - x.astype(np.float64).sum()) <= 1e-6 * np.abs(x).sum() + 1e-6
    assert metal.reduce_min(d) == x.min()
    assert metal.reduce_max(x) == x.max()  # host arrays are accepted too


def test_result_does_not_depend_on_scheduling(data):
    """The combine order depends only on the length: repeated runs agree bit for bit."""
    d = metal.to_device(data)
    results = {metal.reduce_sum(d).tobytes() for _ in range(5)}
    assert len(results) == 1


def test_integer_reductions_are_exact():
    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, 70_001).astype(np.int32)
    assert metal.reduce_sum(x) == x.sum(dtype=np.int32)
    assert metal.reduce_min(x) == x.min() and metal.reduce_max(x) == x.max()
    u = (x + 1000).astype(np.uint32)
    total = metal.reduce_sum(u)
    assert total.dtype == np.uint32 and total == u.sum(dtype=np.uint32)  # in the array's dtype


def test_min_max_propagate_nan_like_numpy(data):
    x = data[:1000].copy()
    x[617] = np.nan
    assert np.isnan(metal.reduce_min(x)) and np.isnan(metal.reduce_max(x))
    assert np.isnan(metal.reduce_sum(x))


def test_result_into_a_device_array_without_waiting(data):
    x = metal.to_device(data[:3000])
    res = metal.device_array(1, np.float32)
    assert metal.reduce_sum(x, res=res) is None
    assert metal.reduce_max(x, res=res[0:1]) is None
    assert res.copy_to_host()[0] == data[:3000].max()


def test_empty_arrays():
    e = np.zeros(0, np.float32)
    assert metal.reduce_sum(e) == 0
    for reduce in (metal.reduce_min, metal.reduce_max):
        with pytest.raises(MetalValueError, match="empty array.*check arr.size first") as info:
            reduce(e)
        assert isinstance(info.value, ValueError)   # NumPy's class for np.min of an empty array


@metal.reduce
def max_abs(a, b):
    return max(abs(a), abs(b))


def test_reduce_decorator_like_cuda_reduce(data):
    x = data[:10_000]
    assert max_abs(x) == np.abs(x).max()
    assert max_abs(metal.to_device(x), size=100) == np.abs(x[:100]).max()
    assert max_abs(np.zeros(0, np.float32), init=5) == 5  # empty: init


def test_reduce_class_with_lambda_init_and_res():
    product = metal.Reduce(lambda a, b: a * b)
    x = np.arange(1, 11, dtype=np.int64)
    assert product(x, init=1) == np.prod(x)
    assert product(x, size=5, init=2) == 2 * np.prod(x[:5])
    assert product(x) == 0  # numba.cuda's default init is 0, combined once
    res = metal.device_array(1, np.int64)
    assert product(x, res=res, init=1) is None
    assert res.copy_to_host()[0] == np.prod(x)


def test_reduce_with_a_device_function():
    @metal.jit(device=True)
    def add_sq(a, b):
        return a + b

    r = metal.reduce(add_sq)
    x = np.arange(100_000, dtype=np.int64)
    assert r(x) == x.sum()


def test_unsupported_inputs_are_refused_clearly():
    with pytest.raises(UnsupportedFeatureError, match="complex128"):
        metal.reduce_sum(np.ones(10, np.complex128))
    with pytest.raises(metal.NumbaMetalError, match="1-d"):
        metal.reduce_sum(np.ones((2, 2), np.float32))
