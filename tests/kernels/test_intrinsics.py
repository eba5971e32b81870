"""numba.cuda's bit and arithmetic intrinsics (kernel_api/intrinsics.py): popc, clz, ffs, brev, fma,
cbrt and selp, for every integer width numba.cuda types them with, against Python's integers and exact
rational arithmetic (the oracle), and with numba.cuda's result types (numba-cuda's cudadecl.py)."""

from fractions import Fraction

import numpy as np
import pytest
from numba.core import types
from numba.np.numpy_support import from_dtype

from numba_metal import metal
from numba_metal.compiler.frontend import infer_types
from numba_metal.errors import NumbaMetalError
from numba_metal.kernel_api import functions as F

INTEGER_DTYPES = [np.dtype(t) for t in F.INTEGERS]


def _edge_values(dtype, n=64):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(dtype.itemsize * 7 + (dtype.kind == "u"))
    edges = [0, 1, 2, 3, info.max, info.min, info.max - 1, info.min + 1, -1 if info.min < 0 else 0x80]
    edges += [1 << k for k in range(dtype.itemsize * 8 - 1)]
    vals = np.array(edges, dtype=np.int64 if info.min < 0 else np.uint64).astype(dtype)
    rand = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return np.concatenate([vals, rand])


def _bits(value, width):
    return int(value) & ((1 << width) - 1)


@metal.jit
def bit_kernel(x, popc, clz, ffs):
    i = metal.grid(1)
    if i < x.size:
        popc[i] = metal.popc(x[i])
        clz[i] = metal.clz(x[i])
        ffs[i] = metal.ffs(x[i])


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
def test_popc_clz_ffs_count_in_the_width_of_the_type(dtype):
    x = _edge_values(dtype)
    width = dtype.itemsize * 8
    popc, clz, ffs = np.zeros(x.size, np.int64), np.zeros(x.size, np.int64), np.zeros(x.size, np.uint32)
    bit_kernel[1, x.size](x, popc, clz, ffs)
    bits = [_bits(v, width) for v in x]
    # popc and clz keep x's type: clz(0) is the width, popc(-1) the width.
    np.testing.assert_array_equal(popc, [bin(b).count("1") for b in bits])
    np.testing.assert_array_equal(clz, [width - b.bit_length() for b in bits])
    np.testing.assert_array_equal(ffs, [(b & -b).bit_length() for b in bits])


@metal.jit
def bit_count_kernel(x, out):
    i = metal.grid(1)
    if i < x.size:
        out[i] = x[i].bit_count()


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
def test_int_bit_count_is_popc_of_the_type(dtype):
    # numba.cuda's overload_method(types.Integer, "bit_count") is cuda.popc: the one bits of the value's
    # width (so -1 of int32 counts 32, where Python's int.bit_count() of -1 counts 1), of the value's type
    x = _edge_values(dtype)
    out = np.zeros(x.size, np.int64)
    bit_count_kernel[1, x.size](x, out)
    np.testing.assert_array_equal(out, [bin(_bits(v, dtype.itemsize * 8)).count("1") for v in x])
    ty = from_dtype(dtype)
    tf = infer_types(bit_count_kernel.py_func, (types.Array(ty, 1, "C"), types.Array(types.int64, 1, "C")))
    (method,) = [sig for sig in tf.calltypes.values() if getattr(sig, "recvr", None) is not None]
    assert method.return_type == ty


@metal.jit
def brev_kernel(x, out):
    i = metal.grid(1)
    if i < x.size:
        out[i] = metal.brev(x[i])


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_brev_reverses_32_or_64_bits(dtype):
    x = _edge_values(np.dtype(dtype))
    out = np.zeros_like(x)
    brev_kernel[1, x.size](x, out)
    width = np.dtype(dtype).itemsize * 8
    expected = [int(format(int(v), f"0{width}b")[::-1], 2) for v in x]
    np.testing.assert_array_equal(out, np.array(expected, dtype=dtype))


def _result_type(fn, *argtypes):
    return infer_types(fn, argtypes).return_type


def _popc(x):
    return metal.popc(x)


def _clz(x):
    return metal.clz(x)


def _ffs(x):
    return metal.ffs(x)


def _brev(x):
    return metal.brev(x)


def _fma(a, b, c):
    return metal.fma(a, b, c)


def _selp(t, a, b):
    return metal.selp(t, a, b)


@pytest.mark.parametrize("name", F.INTEGERS)
def test_result_types_are_numba_cudas(name):
    t = getattr(types, name)
    assert _result_type(_popc, t) == t
    assert _result_type(_clz, t) == t
    assert _result_type(_ffs, t) == types.uint32


def test_brev_fma_selp_result_types():
    assert _result_type(_brev, types.uint32) == types.uint32
    assert _result_type(_brev, types.uint64) == types.uint64
    assert _result_type(_fma, types.float32, types.float32, types.float32) == types.float32
    assert _result_type(_selp, types.boolean, types.int16, types.int16) == types.int16
    assert _result_type(_selp, types.boolean, types.float32, types.float32) == types.float32


def test_selp_refuses_two_types_as_numba_cuda_does():
    with pytest.raises(Exception, match="selp"):
        _result_type(_selp, types.boolean, types.int32, types.float32)


@metal.jit
def fma_cbrt_kernel(a, b, c, fused, root):
    i = metal.grid(1)
    if i < a.size:
        fused[i] = metal.fma(a[i], b[i], c[i])
        root[i] = metal.cbrt(a[i])


def _ulp32(x):
    return float(np.spacing(np.float32(abs(x))))


def test_fma_rounds_once_and_cbrt_is_within_its_bound():
    rng = np.random.default_rng(3)
    a = rng.uniform(-4, 4, 256).astype(np.float32)
    b = rng.uniform(-4, 4, 256).astype(np.float32)
    c = rng.uniform(-4, 4, 256).astype(np.float32)
    # (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly, which a multiply rounded before the add loses.
    a[0] = b[0] = np.float32(1 + 2.0 ** -12)
    c[0] = -1
    fused, root = np.zeros_like(a), np.zeros_like(a)
    fma_cbrt_kernel[1, 256](a, b, c, fused, root)
    assert fused[0] == np.float32(2.0 ** -11 + 2.0 ** -24)
    for k in range(a.size):
        exact = Fraction(float(a[k])) * Fraction(float(b[k])) + Fraction(float(c[k]))
        assert abs(Fraction(float(fused[k])) - exact) <= Fraction(_ulp32(float(exact))) / 2, k
    bound = F.INTRINSICS[[f.name for f in F.INTRINSICS].index("cbrt")].accuracy.ulps
    expected = np.cbrt(a.astype(np.float64))
    assert np.all(np.abs(root - expected) <= bound * np.spacing(np.abs(expected).astype(np.float32)))


@metal.jit
def selp_kernel(t, a, b, out):
    i = metal.grid(1)
    if i < t.size:
        out[i] = metal.selp(t[i] > 0, a[i], b[i])


@pytest.mark.parametrize("dtype", [np.int16, np.uint32, np.int64, np.float32])
def test_selp_picks_a_where_the_test_holds(dtype):
    t = np.array([1, 0, -1, 5, 0], np.int32)
    a = np.arange(5).astype(dtype) + 10
    b = np.arange(5).astype(dtype) + 20
    out = np.zeros_like(a)
    selp_kernel[1, 5](t, a, b, out)
    np.testing.assert_array_equal(out, np.where(t > 0, a, b))


def test_intrinsics_are_refused_outside_kernels():
    with pytest.raises(NumbaMetalError, match="inside a @metal.jit kernel"):
        metal.popc(3)
