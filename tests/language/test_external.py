"""metal.declare_device with link=[...] of hand-written .metal files (kernel_api/external.py), in the
place of numba.cuda's PTX/CUDA C linking; and device functions passed as values (to device functions
and to kernels), as numba.cuda allows. Oracle: NumPy."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalError

OPS = """\
#include <metal_stdlib>
using namespace metal;

float mul_add(float a, float b, float c) {
    return fma(a, b, c);
}

int clamp_index(long i, int n) {
    return int(min(max(i, 0l), long(n - 1)));
}
"""


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    path = tmp_path_factory.mktemp("link") / "ops.metal"
    path.write_text(OPS)
    return str(path)


def test_a_declared_msl_function_is_called_from_kernels_and_device_functions(ops):
    mul_add = metal.declare_device("mul_add", "float32(float32, float32, float32)", link=[ops])
    clamp_index = metal.declare_device("clamp_index", metal.int32(metal.int64, metal.int32), link=ops)

    @metal.jit(device=True)
    def twice(x):
        return mul_add(x, 2.0, 0.0)

    @metal.jit
    def k(out, a):
        i = metal.grid(1)
        if i < out.size:
            j = clamp_index(i - 2, a.size)
            out[i] = mul_add(a[j], a[j], 1.0) + twice(a[j])

    a = np.arange(4, dtype=np.float32)
    out = np.zeros(6, np.float32)
    k[1, 6](out, a)
    j = np.clip(np.arange(6) - 2, 0, 3)
    np.testing.assert_array_equal(out, a[j] * a[j] + 1 + 2 * a[j])


def test_mistakes_are_named_when_declaring(ops, tmp_path):
    with pytest.raises(NumbaMetalError, match="identifier"):
        metal.declare_device("1x", "float32()", link=[ops])
    with pytest.raises(NumbaMetalError, match="defines an MSL function named nope"):
        metal.declare_device("nope", "float32()", link=[ops])
    with pytest.raises(NumbaMetalError, match="not a signature"):
        metal.declare_device("mul_add", "float32(", link=[ops])
    with pytest.raises(NumbaMetalError, match="cannot read the linked file"):
        metal.declare_device("mul_add", "float32()", link=[str(tmp_path / "missing.metal")])
    with pytest.raises(NumbaMetalError, match="pass link"):
        metal.declare_device("mul_add", "float32(float32, float32, float32)")


def test_a_declared_function_cannot_be_called_on_the_host(ops):
    mul_add = metal.declare_device("mul_add", "float32(float32, float32, float32)", link=[ops])
    with pytest.raises(NumbaMetalError, match="only be called inside"):
        mul_add(1.0, 2.0, 3.0)


@metal.jit(device=True)
def square(x):
    return x * x


@metal.jit(device=True)
def negate(x):
    return -x


@metal.jit(device=True)
def apply(f, x):
    return f(x)


@metal.jit
def apply_both(out, a):
    i = metal.grid(1)
    if i < a.size:
        out[i] = apply(square, a[i]) + apply(negate, a[i])


@metal.jit
def apply_argument(out, a, f):
    i = metal.grid(1)
    if i < a.size:
        out[i] = f(a[i])


def test_device_functions_as_arguments_of_device_functions_and_kernels():
    a = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    apply_both[1, 5](out, a)
    np.testing.assert_array_equal(out, a * a - a)
    apply_argument[1, 5](out, a, square)
    np.testing.assert_array_equal(out, a * a)
    apply_argument[1, 5](out, a, negate)  # a second specialisation, on the function
    np.testing.assert_array_equal(out, -a)
