"""math functions of float16 (kernel_api/functions.FLOAT16_MATH): numba.cuda types sin, cos, ceil, floor,
sqrt, log, log2, log10, exp, fabs and trunc of a float16 as float16 (numba-cuda's cudamath), computed by
MSL's half functions: against NumPy's float16 results (computed in double, rounded once to half), within
MSL Table 8.3's bounds for half: 1 ulp for the transcendental functions, correctly rounded or exact for
the others. float32 kernels are unchanged (tests/float64/test_f64_compiler.py pins their MSL)."""

import math

import numpy as np
import pytest
from numba.core import types

from numba_metal.compiler.frontend import infer_types
from numba_metal.kernel_api import functions as F

from elementwise import unary

NUMPY = {"sin": np.sin, "cos": np.cos, "ceil": np.ceil, "floor": np.floor, "sqrt": np.sqrt, "log": np.log,
         "log2": np.log2, "log10": np.log10, "exp": np.exp, "fabs": np.fabs, "trunc": np.trunc}
ONE_ULP = {"sin", "cos", "log", "log2", "log10", "exp"}
DOMAIN = {"sqrt": (0, 1000), "log": (0.01, 1000), "log2": (0.01, 1000), "log10": (0.01, 1000), "exp": (-9, 10),
          "sin": (-10, 10), "cos": (-10, 10)}


def test_the_table_lists_numba_cudas_float16_functions():
    assert set(F.FLOAT16_MATH) == set(NUMPY)


@pytest.mark.parametrize("name", F.FLOAT16_MATH)
def test_result_type_is_float16(name):
    fn = getattr(math, name)
    assert infer_types(lambda x: fn(x), (types.float16,)).return_type == types.float16
    assert infer_types(lambda x: fn(x), (types.float32,)).return_type == (
        types.int64 if name in ("ceil", "floor", "trunc") else types.float32)


@pytest.mark.parametrize("name", F.FLOAT16_MATH)
def test_values_within_msl_half_bounds(name):
    lo, hi = DOMAIN.get(name, (-100, 100))
    x = np.linspace(lo, hi, 97).astype(np.float16)
    out = np.zeros_like(x)
    unary(getattr(math, name))[1, x.size](x, out)
    exact = NUMPY[name](x.astype(np.float64))
    if name not in ONE_ULP:
        np.testing.assert_array_equal(out, exact.astype(np.float16))
        return
    spacing = np.spacing(np.abs(exact.astype(np.float16))).astype(np.float64)
    err = np.abs(out.astype(np.float64) - exact) / spacing
    assert err.max() <= 1.0, (name, x[err.argmax()], out[err.argmax()], exact[err.argmax()])
