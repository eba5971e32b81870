"""metal.<type> (kernel_api/scalartypes.py) are Numba's type objects, as numba.cuda's cuda.<type>: they
build array types and signatures, convert inside kernels, and name dtypes of shared and local arrays,
where NumPy's scalar classes are still accepted. Oracle: NumPy's conversions."""

import numba
import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.kernel_api import scalartypes


def test_each_name_is_numbas_type_object():
    for name, ty in scalartypes.SCALAR_TYPES.items():
        assert getattr(metal, name) is ty is getattr(numba.core.types, name)
    assert metal.float32 is numba.float32 and metal.void is types.none


def test_array_types_and_signatures_build_from_them():
    from numba_metal.metal import float32, int32, void
    assert int32[:] == types.Array(types.int32, 1, "A")
    assert float32[:, ::1] == types.Array(types.float32, 2, "C")
    sig = float32(float32, float32)
    assert sig.return_type == types.float32 and sig.args == (types.float32, types.float32)
    assert void(int32[::1]).return_type == types.none


@metal.jit("void(int32[::1], float32[::1], int8[::1])")
def conversions(a, f, out8):
    i = metal.grid(1)
    if i < a.size:
        a[i] = metal.int32(f[i])
        out8[i] = metal.int8(a[i] + metal.int32(200))


def test_jit_with_a_signature_and_casts_in_the_kernel():
    f = np.array([1.9, -1.9, 100.5, 7.0], np.float32)
    a = np.zeros(4, np.int32)
    out8 = np.zeros(4, np.int8)
    conversions[1, 4](a, f, out8)
    np.testing.assert_array_equal(a, f.astype(np.int32))
    np.testing.assert_array_equal(out8, (a + 200).astype(np.int8))  # wraps as NumPy's astype


@pytest.mark.parametrize("dtype", [metal.int16, np.int16, metal.float32, np.float32, metal.uint8])
def test_shared_and_local_arrays_take_numba_types_and_numpy_dtypes(dtype):
    @metal.jit
    def k(out):
        s = metal.shared.array(4, dtype)
        loc = metal.local.array((2, 2), dtype)
        t = metal.threadIdx.x
        s[t] = t + 1
        metal.syncthreads()
        loc[1, 1] = s[3 - t]
        out[t] = loc[1, 1]

    out = np.zeros(4, np.int64)
    k[1, 4](out)
    np.testing.assert_array_equal(out, [4, 3, 2, 1])


def test_explicit_signature_with_metal_types():
    @metal.jit(metal.void(metal.float32[::1], metal.float32))
    def scale(x, s):
        i = metal.grid(1)
        if i < x.size:
            x[i] *= s

    x = np.arange(5, dtype=np.float32)
    scale[1, 5](x, np.float32(2.5))
    np.testing.assert_array_equal(x, np.arange(5, dtype=np.float32) * np.float32(2.5))


def test_numba_cudas_c_names_are_its_types_in_signatures_and_conversions():
    # numba.cuda exports numba.cuda.types' C names (numba-cuda's test_blackscholes: `from numba.cuda import
    # double, void`); each is Numba's type object of that C type
    c_names = {"double": types.float64, "byte": types.uint8, "char": types.int8, "uchar": types.uint8,
               "short": types.int16, "ushort": types.uint16, "intc": types.int32, "uintc": types.uint32,
               "longlong": types.int64, "ulonglong": types.uint64}
    for name, ty in c_names.items():
        assert getattr(metal, name) is ty, name

    @metal.jit(metal.void(metal.double[::1], metal.short[::1], metal.double))
    def k(x, s, scale):
        i = metal.grid(1)
        if i < x.size:
            x[i] = metal.double(x[i]) * scale
            s[i] = metal.short(x[i])

    x = np.array([1.5, -2.25, 40000.0], np.float64)
    s = np.zeros(3, np.int16)
    k[1, 3](x, s, 3.0)
    np.testing.assert_array_equal(x, [4.5, -6.75, 120000.0])
    np.testing.assert_array_equal(s[:2], [4, -6])
