"""Half precision (kernel_api/fp16.py): metal.fp16's functions and float16 arithmetic, against NumPy's
float16 (the oracle: NumPy rounds every float16 operation to half, as numba.cuda does), within the
accuracy MSL guarantees for half (Table 8.3), which each row of functions.FP16 records."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.compiler.frontend import infer_types
from numba_metal.kernel_api import functions as F

h = np.float16


@metal.jit
def cancellation(a, out):
    out[0] = (a[0] + a[1]) - a[0]
    x = a[0]
    x += a[1]
    out[1] = x - a[0]
    out[2] = (a[0] * a[2]) / a[2]
    out[3] = -a[1]
    out[4] = abs(out[3])


def test_float16_arithmetic_rounds_to_half_after_every_operation():
    a = np.array([2048, 1, 3], h)
    out = np.zeros(5, h)
    cancellation[1, 1](a, out)
    expected = [(a[0] + a[1]) - a[0], (a[0] + a[1]) - a[0], (a[0] * a[2]) / a[2], -a[1], abs(-a[1])]
    np.testing.assert_array_equal(out, np.array(expected, h))
    assert out[0] == 0  # 2049 is not a half: 2048 + 1 rounds to 2048


def _add(a, b):
    return a + b


def _neg(a):
    return -a


@pytest.mark.parametrize("other,result", [(types.float16, types.float16), (types.int8, types.float16),
                                          (types.uint8, types.float16), (types.float32, types.float32)])
def test_float16_arithmetic_types_as_numpy(other, result):
    assert infer_types(_add, (types.float16, other)).return_type == result
    assert infer_types(_neg, (types.float16,)).return_type == types.float16


BINARY = [f for f in F.FP16 if f.arity == 2 and F.result_type(f.signatures[0]) == "float16"]
COMPARE = [f for f in F.FP16 if F.result_type(f.signatures[0]) == "bool"]
UNARY = [f for f in F.FP16 if f.arity == 1]

_NUMPY = {"hadd": np.add, "hsub": np.subtract, "hmul": np.multiply, "hdiv": np.divide,
          "hmax": lambda a, b: np.where(a > b, a, b), "hmin": lambda a, b: np.where(a < b, a, b),
          "heq": np.equal, "hne": np.not_equal, "hlt": np.less, "hle": np.less_equal, "hgt": np.greater,
          "hge": np.greater_equal, "hneg": np.negative, "habs": np.abs, "hsqrt": np.sqrt,
          "hrsqrt": lambda x: 1 / np.sqrt(x.astype(np.float64)), "hrcp": lambda x: 1 / x.astype(np.float64),
          "hceil": np.ceil, "hfloor": np.floor, "htrunc": np.trunc, "hrint": np.rint, "hsin": np.sin,
          "hcos": np.cos, "hexp": np.exp, "hexp2": np.exp2, "hexp10": lambda x: 10.0 ** x.astype(np.float64),
          "hlog": np.log, "hlog2": np.log2, "hlog10": np.log10, "htanh": np.tanh, "htanh_approx": np.tanh}


def test_every_fp16_row_has_an_oracle_and_a_metal_name():
    assert {f.name for f in F.FP16} == set(_NUMPY) | {"hfma"}
    for f in F.FP16:
        assert getattr(metal.fp16, f.name).path == "fp16." + f.name


def _kernel(name, arity):
    fn = getattr(metal.fp16, name)
    if arity == 1:
        def k(x, y, out):
            i = metal.grid(1)
            if i < x.size:
                out[i] = fn(x[i])
    else:
        def k(x, y, out):
            i = metal.grid(1)
            if i < x.size:
                out[i] = fn(x[i], y[i])
    return metal.jit(k)


def _inputs(name):
    rng = np.random.default_rng(len(name))
    x = rng.uniform(-8, 8, 200).astype(h)
    y = rng.uniform(-8, 8, 200).astype(h)
    x[-3:] = [0.5, 1.5, -2.5]  # ties of hrint
    y[:20] = x[:20]  # equal operands for the comparisons
    if name in ("hsqrt", "hrsqrt", "hlog", "hlog2", "hlog10"):
        x = np.abs(x) + h(0.01)
    if name in ("hexp", "hexp2", "hexp10"):
        x = (x / h(4)).astype(h)  # results stay finite
    return x, y


def _ulps(got, expected):
    got64 = got.astype(np.float64)
    ulp = np.spacing(np.abs(expected).astype(h)).astype(np.float64)
    return np.abs(got64 - expected) / ulp


@pytest.mark.parametrize("function", BINARY + COMPARE + UNARY, ids=lambda f: f.name)
def test_fp16_function_against_numpy_within_msl_bound(function):
    name = function.name
    x, y = _inputs(name)
    out = np.zeros(x.size, np.bool_ if function in COMPARE else h)
    _kernel(name, function.arity)[1, x.size](x, y, out)
    args = (x,) if function.arity == 1 else (x, y)
    expected = np.asarray(_NUMPY[name](*args))
    if function in COMPARE or function.accuracy.ulps == 0:
        np.testing.assert_array_equal(out, expected.astype(out.dtype))
    else:
        # NumPy's float16 functions compute in float32 and round: compare with the exact (float64) result.
        exact = np.asarray(_NUMPY[name](*(a.astype(np.float64) for a in args)), np.float64)
        assert np.max(_ulps(out, exact)) <= function.accuracy.ulps, name


@metal.jit
def hfma_kernel(a, b, c, out):
    i = metal.grid(1)
    if i < a.size:
        out[i] = metal.fp16.hfma(a[i], b[i], c[i])


def test_hfma_is_fused():
    a = np.array([1 + 2.0 ** -6, 3, -2], h)
    c = np.array([-1, 0.5, 4], h)
    out = np.zeros(3, h)
    hfma_kernel[1, 3](a, a, c, out)
    # (1 + 2^-6)^2 - 1 = 2^-5 + 2^-12 exactly (a half), which a rounded product loses.
    np.testing.assert_array_equal(out, np.array([2.0 ** -5 + 2.0 ** -12, 9.5, 8], h))


def test_fp16_functions_take_float16_only():
    def k(x, out):
        out[0] = metal.fp16.hadd(x[0], x[0])
    src = metal.compile_msl(k, "void(float16[:], float16[:])")
    assert "half" in src
