"""The math module inside kernels (kernel_api/pymath.py): every function of the math table within its bound."""

import math

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.kernel_api.functions import MATH, MATH_BY_NAME, argument_types, result_type, tuple_members


# -- every function of numba-metal's math table (numba_metal/kernel_api/functions.py) ------------------

#: Inputs per function, inside its domain (the rest of the real line is tested by the differential test).
DOMAIN = {"acos": (-1, 1), "asin": (-1, 1), "atanh": (-0.99, 0.99), "acosh": (1, 50), "log": (1e-3, 1e3),
          "log2": (1e-3, 1e3), "log10": (1e-3, 1e3), "log1p": (-0.9, 100), "sqrt": (0, 1e4),
          "gamma": (0.1, 20), "lgamma": (0.1, 50), "exp": (-20, 20), "exp2": (-20, 20), "expm1": (-5, 5),
          "cosh": (-10, 10), "sinh": (-10, 10), "tan": (-1.5, 1.5), "pow": (0.1, 4), "cbrt": (-30, 30),
          "erfc": (-6, 9)}
#: Host dtypes standing for the table's argument types (float64 values are float32 data made float64 in the
#: kernel by float(); intp is int64).
_HOST = {"float32": np.float32, "float64": np.float32, "int64": np.int64, "uint64": np.uint64,
         "intp": np.int64, "intc": np.int32}
#: (float16 signatures give float16 and are tested against half precision by test_math_float16.py.)
#: (Rows with tuple results or keyword parameters, frexp modf isclose, are checked by
#: float64/test_f64_compiler.py::test_frexp_modf_nextafter_isclose_as_python.)
_CASES = [(f, s) for f in MATH for s in f.signatures
          if "float16" not in s and not tuple_members(result_type(s)) and not f.keywords]


def _signature_kernel(function, sig):
    """A kernel computing out[i] = math.<function>(a0[i], ...) with the signature's argument types."""
    args = argument_types(sig)
    params = ", ".join(f"a{k}" for k in range(len(args)))
    values = ", ".join(f"float(a{k}[i])" if t == "float64" else f"a{k}[i]" for k, t in enumerate(args))
    source = (f"def k({params}, out):\n    i = metal.grid(1)\n    if i < out.size:\n"
              f"        out[i] = math.{function.name}({values})\n")
    namespace = {"math": math, "metal": metal}
    exec(compile(source, f"<math.{function.name} {sig}>", "exec"), namespace)
    return metal.jit(namespace["k"])


def _inputs(function, sig, n=65):
    rng = np.random.default_rng(len(function.name) * 7919 + len(sig))
    lo, hi = DOMAIN.get(function.name, (-10, 10))
    inputs = []
    for k, t in enumerate(argument_types(sig)):
        dtype = _HOST[t]
        if np.dtype(dtype).kind == "f":
            values = np.linspace(lo, hi, n) if k == 0 else rng.uniform(-3, 3, n)
        elif function.name == "ldexp":
            values = rng.integers(-20, 20, n)
        else:  # the integers of the domain (near zero)
            low = max(math.ceil(lo), 0 if np.dtype(dtype).kind == "u" else -20)
            values = rng.integers(low, min(math.floor(hi), 20) + 1, n)
        inputs.append(np.asarray(values).astype(dtype))
    return inputs


def _reference(function, xs):
    # nextafter's neighbour is one of the computation type, float32 in these kernels.
    fn = {"nextafter": lambda x, y: float(np.nextafter(np.float32(x), np.float32(y)))}.get(
        function.name, getattr(math, function.name))
    out = []
    for row in zip(*xs):
        try:
            out.append(fn(*(int(x) if isinstance(x, np.integer) else float(x) for x in row)))
        except (ValueError, OverflowError):
            out.append(math.nan)
    return out


@pytest.mark.parametrize("function, sig", _CASES, ids=[f"{f.name}-{s}" for f, s in _CASES])
def test_every_function_of_the_math_table_runs_within_its_bound(function, sig):
    """math.<f> for every signature of every row of the math table, against Python's math (in double):
    within the row's bound in float32 ulps (plus its absolute error near zeros), exact for integer and
    boolean results."""
    xs = _inputs(function, sig)
    result = result_type(sig)
    out = np.zeros(len(xs[0]), {"bool": np.bool_, "int64": np.int64, "intp": np.int64,
                                "uint64": np.uint64}.get(result, np.float32))
    _signature_kernel(function, sig)[2, 64](*xs, out)
    exact = np.array(_reference(function, [x.astype(np.float32) if x.dtype.kind == "f" else x for x in xs]),
                     dtype=np.float64 if out.dtype.kind == "f" else out.dtype)
    if out.dtype.kind != "f":
        np.testing.assert_array_equal(out, exact)
        return
    finite = np.isfinite(exact) & (np.abs(exact) < 3e38)
    err = _ulp_error(out[finite], exact[finite])
    absolute = np.abs(out[finite].astype(np.float64) - exact[finite])
    bound = function.accuracy.ulps
    ok = (err <= max(bound, 0.5) + 1e-9) | (absolute <= function.accuracy.absolute)
    assert ok.all(), (function.name, sig, err.max(), xs[0][finite][~ok][:5])
    assert np.isnan(out[~finite & np.isnan(exact)]).all()


def _ulp_error(got, exact):
    exact32 = exact.astype(np.float32)
    spacing = np.spacing(np.abs(exact32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@metal.jit
def math_binary(a, b, out_f, out_b):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out_f[i, 0] = math.atan2(x, y)
        out_f[i, 1] = math.hypot(x, y)
        out_f[i, 2] = math.pow(abs(x), y)
        out_f[i, 3] = math.copysign(x, y)
        out_f[i, 4] = math.fmod(x, y)
        out_f[i, 5] = math.remainder(x, y)
        out_f[i, 6] = math.ldexp(x, 3)
        out_f[i, 7] = math.pi + math.e + math.tau
        out_b[i, 0] = math.isnan(x)
        out_b[i, 1] = math.isinf(y)
        out_b[i, 2] = math.isfinite(x * y)


def test_math_binary_functions_predicates_and_constants():
    a = np.array([1.5, -2.0, 3.25, np.nan, 0.5, -7.0], np.float32)
    b = np.array([0.5, 3.0, -1.5, 1.0, np.inf, 2.0], np.float32)
    of = np.zeros((6, 8), np.float32)
    ob = np.zeros((6, 3), np.bool_)
    math_binary[1, 8](a, b, of, ob)
    ef = []
    for x, y in zip(a.astype(float), b.astype(float)):
        ef.append([math.atan2(x, y), math.hypot(x, y), math.pow(abs(x), y), math.copysign(x, y),
                   math.fmod(x, y) if not math.isinf(y) else x, math.remainder(x, y) if math.isfinite(x) else math.nan,
                   math.ldexp(x, 3), math.pi + math.e + math.tau])
    np.testing.assert_allclose(of, np.array(ef, np.float32), rtol=3e-6, equal_nan=True)
    eb = [[math.isnan(x), math.isinf(y), math.isfinite(np.float32(x) * np.float32(y))] for x, y in zip(a, b)]
    np.testing.assert_array_equal(ob, eb)


def test_math_on_integers_returns_float():
    @metal.jit
    def k(n, out):
        out[0] = math.sqrt(n)
        out[1] = math.floor(n)
        out[2] = math.isnan(n)

    out = np.zeros(3, np.float32)
    k[1, 1](10, out)
    np.testing.assert_allclose(out, [math.sqrt(10), 10, 0], rtol=1e-6)
