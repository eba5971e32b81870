"""metal.declare_device with link=[...] of hand-written .metal files (kernel_api/external.py) and
@metal.jit(link=[...]) (compiler/linking.py), in the place of numba.cuda's PTX/CUDA C linking; and device functions passed as values (to device functions
and to kernels), as numba.cuda allows. Oracle: NumPy."""

import os

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.compiler import driver
from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError

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
    clamp_index = metal.declare_device("clamp_index", metal.int32(metal.int64, metal.int32), link=ops, abi="c")

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
    with pytest.raises(TypeError, match="Return type must be provided.*needs a return type"):  # numba.cuda's
        metal.declare_device("mul_add", "(float32, float32, float32)", link=[ops])
    with pytest.raises(UnsupportedFeatureError, match="'numba' or 'c'"):
        metal.declare_device("mul_add", "float32(float32, float32, float32)", link=[ops], abi="ptx")
    with pytest.raises(UnsupportedFeatureError, match=r"'ops.cu' is CUDA code \(.cu\).*port the function"):
        metal.declare_device("mul_add", "float32(float32, float32, float32)", link=["ops.cu"])


def test_the_kernel_links_the_msl_of_functions_declared_without_link(ops):
    # numba.cuda's other form: declare_device(name, sig) and @cuda.jit(link=[...]) on the kernel.
    mul_add = metal.declare_device("mul_add", "float32(float32, float32, float32)")

    @metal.jit(link=[ops])
    def k(out, a):
        i = metal.grid(1)
        if i < a.size:
            out[i] = mul_add(a[i], 3.0, 1.0)

    a = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    k[1, 5](out, a)
    np.testing.assert_array_equal(out, a * 3 + 1)
    (msl_source,) = k.inspect_msl().values()
    assert msl_source.count("float mul_add(") == 1   # linked once

    # The same file linked by the kernel and by a declaration, under another spelling of its path.
    clamp_index = metal.declare_device("clamp_index", "int32(int64, int32)", link=[os.path.relpath(ops)])

    @metal.jit(link=[ops])
    def both(out, a):
        out[0] = mul_add(a[clamp_index(7, a.size)], 1.0, 1.0)

    both[1, 1](out, a)
    assert out[0] == a[4] + 1
    (kernel,) = both.overloads.values()
    assert kernel.msl.count("float mul_add(") == 1
    # Both spellings are recorded (the disk cache checks each file).
    assert [p for p, _ in driver.compile_kernel(both.py_func, kernel.argtypes, link=[ops]).linked] == \
        [ops, os.path.relpath(ops)]
    assert metal.compile_msl(k, "void(float32[:], float32[:])").count("float mul_add(") == 1   # without a device

    @metal.jit
    def unlinked(out, a):
        out[0] = mul_add(a[0], 3.0, 1.0)

    with pytest.raises(NumbaMetalError, match=r"mul_add\(\) was declared .* without link=.*@metal.jit\(link="):
        unlinked[1, 1](out, a)


def test_link_mistakes_are_refused_as_numba_cuda_does(ops):
    with pytest.raises(UnsupportedFeatureError, match=r"'k.ptx' is CUDA code \(.ptx\)"):
        metal.jit(link=["k.ptx"])
    with pytest.raises(ValueError, match="link keyword invalid for device function"):
        metal.jit(device=True, link=[ops])
    with pytest.raises(NumbaMetalError, match="not a path"):
        metal.jit(link=[3])
    # numba.cuda's code objects in memory are made as in numba.cuda (a module defining one still imports) and
    # refused when linked, alone or in a list, naming their kind
    cu = metal.CUSource('extern "C" __device__ int f(int *out, int a) { *out = a; return 0; }')
    assert cu.name == "<unnamed-cu>" and "__device__" in cu.data
    with pytest.raises(UnsupportedFeatureError, match=r"CUSource '<unnamed-cu>' holds CUDA C/C\+\+ source"):
        metal.declare_device("f", "int32(int32)", link=cu)
    for kind in ("PTXSource", "Fatbin", "Cubin", "Archive", "Object", "LTOIR"):
        with pytest.raises(UnsupportedFeatureError, match=f"{kind} 'k' holds .*Metal Shading Language"):
            metal.jit(link=[ops, getattr(metal, kind)(b"...", name="k")])

    @metal.jit(link=["/nonexistent/missing.metal"])
    def k(out):
        out[0] = 1.0

    with pytest.raises(NumbaMetalError, match=r"cannot read the linked file '/nonexistent/missing.metal'"):
        k[1, 1](np.zeros(1, np.float32))


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
