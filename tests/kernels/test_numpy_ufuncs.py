"""NumPy ufuncs inside kernels (kernel_api/numpy_ufuncs.py, one row per ufunc in kernel_api/ufunc_table.py):
every row on float32, float64 and integer inputs against NumPy, in the scalar form (``np.sin(x[i])``) and
the array form with an explicit output (``np.sin(x, out)``); NumPy's type rules; broadcasting; numba.cuda's
ufunc doc example after renaming; the errors."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError
from numba_metal.kernel_api.ufunc_table import UFUNCS, UFUNCS_BY_NAME, names

# ---------------------------------------------------------------------------------------------
# Inputs: each row's domain (values outside it give NaN on both sides, which is compared too)
# ---------------------------------------------------------------------------------------------

_FLOAT_RANGE = {"arccosh": (0.5, 30.0), "arctanh": (-1.2, 1.2), "arcsin": (-1.2, 1.2), "arccos": (-1.2, 1.2),
                "log": (-0.5, 100.0), "log2": (-0.5, 100.0), "log10": (-0.5, 100.0), "log1p": (-1.5, 100.0),
                "sqrt": (-1.0, 1e4), "exp": (-80.0, 80.0), "exp2": (-120.0, 120.0), "expm1": (-80.0, 80.0),
                "sinh": (-80.0, 80.0), "cosh": (-80.0, 80.0), "power": (0.0, 8.0), "reciprocal": (-8.0, 8.0)}
_INT_RANGE = {"left_shift": (0, 30), "right_shift": (0, 30), "power": (0, 6), "arccosh": (1, 40),
              "arctanh": (-1, 1)}
_SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5, -2.5, 3.5]


def _inputs(row, dtype, rng):
    ufunc = getattr(np, row.name)
    dtype = np.dtype(dtype)
    xs = []
    for k in range(ufunc.nin):
        if row.name == "ldexp" and k == 1:
            xs.append(rng.integers(-20, 20, 64).astype(np.int32))
            continue
        if dtype.kind == "c":
            lo, hi = (-2.0, 2.0) if row.name not in ("exp", "sinh", "cosh", "power") else (-0.5, 2.0)
            x = rng.uniform(lo, hi, 64) + 1j * rng.uniform(lo, hi, 64)
            x[:3] = [0.0, 1.0, complex(np.nan, 1.0)] if row.name != "power" else [1.0, 0.5j, 2.0]
            if k == 1:
                x[10:20] = xs[0][10:20]                         # equal numbers, and equal real parts
                x[20:30] = xs[0][20:30].real + 1j * rng.uniform(lo, hi, 10)
        elif dtype.kind == "f":
            lo, hi = _FLOAT_RANGE.get(row.name, (-10.0, 10.0))
            x = rng.uniform(lo, hi, 64)
            x[:len(_SPECIALS)] = _SPECIALS if row.name != "power" or k == 1 else np.abs(_SPECIALS)
            if k == 1:
                x[5] = 0.0       # x / 0, x % 0, fmod(x, 0)
        else:
            lo, hi = _INT_RANGE.get(row.name, (-20, 20) if dtype.kind == "i" else (0, 40))
            x = rng.integers(lo, hi, 64, endpoint=True)
            if k == 1 and row.name not in _INT_RANGE:
                x[3] = 0         # x // 0 and x % 0 are 0 (NumPy)
        xs.append(x.astype(dtype))
    return xs


def _kernels(fn, nin, nout):
    """(scalar-form kernel, array-form kernel) applying ``fn`` element by element."""
    if (nin, nout) == (1, 1):
        @metal.jit
        def scalar(x, o):
            i = metal.grid(1)
            if i < x.size:
                o[i] = fn(x[i])

        @metal.jit
        def whole(x, o):
            fn(x, o)
    elif (nin, nout) == (2, 1):
        @metal.jit
        def scalar(x, y, o):
            i = metal.grid(1)
            if i < x.size:
                o[i] = fn(x[i], y[i])

        @metal.jit
        def whole(x, y, o):
            fn(x, y, o)
    elif (nin, nout) == (1, 2):
        @metal.jit
        def scalar(x, o, p):
            i = metal.grid(1)
            if i < x.size:
                r = fn(x[i])
                o[i] = r[0]
                p[i] = r[1]

        @metal.jit
        def whole(x, o, p):
            fn(x, o, p)
    else:
        @metal.jit
        def scalar(x, y, o, p):
            i = metal.grid(1)
            if i < x.size:
                o[i], p[i] = fn(x[i], y[i])

        @metal.jit
        def whole(x, y, o, p):
            fn(x, y, o, p)
    return scalar, whole


def _check(row, got, expected, reference_dtype, ulps=None):
    """Exact (NaN in the same places) where the row is exact or correctly rounded, else within the row's
    bound in ulps of the result type (plus its absolute error near zeros)."""
    if expected.dtype.kind == "c":
        _check_complex(row, got, expected, reference_dtype)
        return
    ulps = row.accuracy.ulps if ulps is None else ulps
    if expected.dtype.kind != "f" or ulps <= 0.5:
        np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=row.name)
        if expected.dtype.kind == "f":   # signed zeros too
            same = expected == 0
            np.testing.assert_array_equal(np.signbit(got[same]), np.signbit(expected[same]), err_msg=row.name)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=row.name)
    finite = np.isfinite(expected) & (np.abs(expected) < np.finfo(reference_dtype).max)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)]
                                  .astype(got.dtype), err_msg=row.name)
    spacing = np.spacing(np.abs(expected[finite]).astype(reference_dtype)).astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - expected[finite].astype(np.float64))
    ok = (err / spacing <= ulps + 1e-9) | (err <= row.accuracy.absolute)
    assert ok.all(), (row.name, (err / spacing).max())


def _runs(row, dtype) -> bool:
    """True if NumPy's loop for these inputs (Numba's choice) is one the row computes."""
    from numba.core import types
    from numba.np.numpy_support import from_dtype, ufunc_find_matching_loop
    ufunc = getattr(np, row.name)
    args = [from_dtype(np.dtype(dtype))] * ufunc.nin
    if row.name == "ldexp":
        args[1] = types.int32
    loop = ufunc_find_matching_loop(ufunc, args)
    if loop is None:
        return False
    first = next((t for t in loop.inputs if isinstance(t, (types.Float, types.Complex))), loop.inputs[0])
    kind = str(first) if isinstance(first, (types.Float, types.Complex)) else "int" if first.signed else "uint"
    return row.routine(kind) is not None


_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.uint32, np.complex64, np.complex128)
#: Complex results: within this many ulps (of the result's part type) of the larger part of NumPy's value; the
#: complex library's measured bounds are at most 5.8 (complex64) and 0.53 (complex128) ulps of CPython's cmath
#: (compiler/complex_ops.py), and NumPy's own functions differ from cmath by a few ulps.
_COMPLEX_ULPS = 8.0


def _complex_exact(row) -> bool:
    """NumPy's complex operation is exact (addition, negation, conjugate, comparisons, maximum...)."""
    return not row.twin and row.name not in ("square", "power", "multiply", "divide", "reciprocal", "log2")


def _check_complex(row, got, expected, reference_dtype):
    """Complex results: NaN and infinities in the same places, exact where NumPy's operation is (addition,
    negation, conjugate, the choices of maximum...), else within _COMPLEX_ULPS of the larger part."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=row.name)
    infinite = ~np.isnan(expected) & ~np.isfinite(expected)
    np.testing.assert_array_equal(got[infinite], expected[infinite].astype(got.dtype), err_msg=row.name)
    ok = np.isfinite(expected)
    got, expected = got[ok], expected[ok]
    part = np.float32 if reference_dtype == np.complex64 else np.float64
    scale = np.maximum(np.abs(expected.real), np.abs(expected.imag)).astype(part)
    err = np.maximum(np.abs(got.real - expected.real), np.abs(got.imag - expected.imag)).astype(np.float64)
    bound = 0.0 if _complex_exact(row) else _COMPLEX_ULPS
    assert (err <= bound * np.spacing(scale).astype(np.float64)).all(), (row.name, (err / np.spacing(scale)).max())


_CASES = [(row, dtype) for row in UFUNCS for dtype in _DTYPES if _runs(row, dtype)]


@pytest.mark.parametrize("row, dtype", _CASES, ids=[f"{r.name}-{np.dtype(d).name}" for r, d in _CASES])
def test_every_row_against_numpy_in_both_forms(row, dtype):
    """np.<f> of every row on float32, float64 and integer inputs, in the scalar form and the array form with
    an explicit output: NumPy's result type (float32 in, float32 out; integers give float64 for the
    transcendental functions), NumPy's values within the row's bound (exact where exact)."""
    ufunc = getattr(np, row.name)
    xs = _inputs(row, dtype, np.random.default_rng(7))
    with np.errstate(all="ignore"):
        expected = ufunc(*xs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    reference = expected
    complex_in = np.dtype(dtype).kind == "c"
    if any(e.dtype in (np.float32, np.complex64) for e in expected) and (
            row.accuracy.ulps > 0.5 if not complex_in else not _complex_exact(row)):
        with np.errstate(all="ignore"):   # judged against the float64 value, in float32 ulps
            reference = ufunc(*[x.astype(np.float64) if x.dtype == np.float32 else
                                x.astype(np.complex128) if x.dtype == np.complex64 else x for x in xs])
        reference = reference if isinstance(reference, tuple) else (reference,)
    scalar, whole = _kernels(ufunc, ufunc.nin, ufunc.nout)
    outs = [np.zeros(64, e.dtype) for e in expected]
    scalar[1, 64](*xs, *outs)
    outs_whole = [np.zeros(64, e.dtype) for e in expected]
    whole[1, 1](*xs, *outs_whole)
    for got, got_whole, exp, ref in zip(outs, outs_whole, expected, reference):
        # abs(z) is hypot of the parts: within 1 ulp (the complex library's is correctly rounded, NumPy's is C's).
        magnitude = complex_in and exp.dtype.kind == "f"
        _check(row, got, ref, exp.dtype, ulps=1.0 if magnitude else None)
        np.testing.assert_array_equal(got_whole, got)


def test_numpy_type_rules_float32_stays_float32_and_integers_give_float64():
    """The scalar form's result type is NumPy's: sin of float32 is float32 (its value is a float32 even when
    stored into float64), sin of int32 is float64, add of two int32 wraps in int32."""
    @metal.jit
    def k(f, n, out_f, out_i):
        i = metal.grid(1)
        if i < f.size:
            out_f[i, 0] = np.sin(f[i])
            out_f[i, 1] = np.sin(n[i])
            out_i[i] = np.add(n[i], n[i])

    f = np.linspace(0.1, 3, 32).astype(np.float32)
    n = np.arange(1, 33, dtype=np.int32) * 67108864
    out_f = np.zeros((32, 2))
    out_i = np.zeros(32, np.int64)
    k[1, 32](f, n, out_f, out_i)
    assert (out_f[:, 0] == out_f[:, 0].astype(np.float32)).all()
    np.testing.assert_allclose(out_f[:, 0], np.sin(f), rtol=1e-6)
    assert (out_f[:, 1] != out_f[:, 1].astype(np.float32)).any()
    np.testing.assert_allclose(out_f[:, 1], np.sin(n), rtol=1e-15)
    np.testing.assert_array_equal(out_i, np.add(n, n))          # int32 wraparound, as NumPy's
    assert (out_i < 0).any()


def test_float64_of_a_float32_kernel_stays_float32_and_exact_kernels_compute_it_exactly():
    """np.maximum(x, 0.0) with float32 x is NumPy's float64 loop (Numba types the literal float64): a kernel
    without float64 data computes it in float32 (no emulated float64 in its MSL, as math calls), one that
    holds float64 data computes it exactly."""
    from numba_metal.compiler import msl

    def relu(x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i] = np.maximum(x[i], 0.0) + np.sqrt(np.float32(2.0))

    assert msl.FLOAT64 not in metal.compile_msl(relu, "void(float32[:], float32[:])")
    assert msl.FLOAT64 in metal.compile_msl(relu, "void(float32[:], float64[:])")
    x = np.array([-1.5, 0.25, np.nan, 3.0], np.float32)
    out = np.zeros(4, np.float32)
    metal.jit(relu)[1, 4](x, out)
    np.testing.assert_array_equal(out, np.maximum(x, np.float32(0.0)) + np.sqrt(np.float32(2.0)))


def test_out_form_broadcasts_casts_and_takes_every_layout():
    """np.f(x, y, out): inputs broadcast to the output's shape (a row, a scalar, extent 1), 2-d and 3-d,
    F-ordered and strided outputs, results cast to the output's dtype (same_kind), two outputs, and the call's
    value is its output."""
    @metal.jit
    def k(a, row, col, out2, out3, f_out, half, q, r):
        np.add(a, row, out2)
        np.multiply(a[0, 0], col, f_out)         # a scalar and a (3, 1) column into an F-ordered (3, 4)
        back = np.hypot(out3, 2.0, out3)         # in place; the value is the output
        back[0, 0, 0] += 100.0
        np.sqrt(row, half)                       # float64 results into float32 (same_kind)
        np.divmod(a, row, q, r)

    a = np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5
    row = np.array([1.0, -2.0, 0.5, 4.0])
    col = np.array([[1.0], [2.0], [3.0]])
    out2 = np.zeros((3, 4))
    out3 = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    out3_before = out3.copy()
    f_out = np.asfortranarray(np.zeros((3, 4)))
    half = np.zeros(4, np.float32)
    q, r = np.zeros((3, 4)), np.zeros((3, 4))
    k[1, 1](a, row, col, out2, out3, f_out, half, q, r)
    np.testing.assert_array_equal(out2, a + row)
    np.testing.assert_array_equal(f_out, a[0, 0] * np.broadcast_to(col, (3, 4)))
    expected3 = np.hypot(out3_before, 2.0)
    expected3[0, 0, 0] += 100.0
    np.testing.assert_array_equal(out3, expected3)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(half, np.sqrt(row).astype(np.float32))
    eq, er = np.divmod(a, row)
    np.testing.assert_array_equal(q, eq)
    np.testing.assert_array_equal(r, er)


def test_outputs_the_inputs_cannot_broadcast_to_are_left_unwritten():
    """A (3,) input and a (4,) output do not broadcast: nothing is written (numba.cuda raises a ValueError
    there, which a kernel drops), and nothing outside the arrays is read."""
    @metal.jit
    def k(x, out):
        np.negative(x, out)

    out = np.full(4, 7.0, np.float32)
    k[1, 1](np.ones(3, np.float32), out)
    np.testing.assert_array_equal(out, 7.0)


def test_numba_cuda_ufunc_doc_example_after_renaming():
    """numba.cuda's 'Calling a NumPy UFunc' example (docs/source/user/examples.rst, test_ex_cuda_ufunc_call),
    with `cuda` renamed `metal`."""
    # ex_cuda_ufunc.begin
    import numpy as np
    from numba_metal import metal

    # A kernel calling a ufunc (sin, in this case)
    @metal.jit
    def f(r, x):
        # Compute sin(x) with result written to r
        np.sin(x, r)

    # Declare input and output arrays
    x = np.arange(10, dtype=np.float32) - 5
    r = np.zeros_like(x)

    # Launch kernel that calls the ufunc
    f[1, 1](r, x)

    # A quick sanity check demonstrating equality of the sine computed by
    # the sin ufunc inside the kernel, and NumPy's sin ufunc
    np.testing.assert_allclose(r, np.sin(x))
    # ex_cuda_ufunc.end


def test_numba_cuda_test_ufuncs_forms_scalar_inputs_into_one_element_outputs():
    """numba-cuda's test_ufuncs.py calls `np.<f>(a0, a1)` with a scalar a0 and a one-element output array, on
    unsigned/signed/float scalars; comparisons of int64 with uint64 compare values (NumPy >= 1.25)."""
    @metal.jit
    def k(a, b, o, c):
        np.cos(a, o)
        np.less(b, np.uint64(1), c)

    o = np.zeros(1, np.float32)
    c = np.zeros(1, np.bool_)
    k[1, 1](np.float32(0.5), np.int64(-1), o, c)
    np.testing.assert_allclose(o, np.cos(np.float32(0.5)), rtol=1e-6)
    assert c[0]


def test_a_read_only_input_array_is_accepted_and_the_output_is_written():
    """The ufunc reads its inputs and writes its outputs only: a read-only NumPy input is accepted (the
    launch refuses read-only arrays a kernel may write)."""
    @metal.jit
    def k(x, out):
        np.exp(x, out)

    x = np.linspace(0, 1, 8).astype(np.float32)
    x.flags.writeable = False
    out = np.zeros(8, np.float32)
    k[1, 1](x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)


def _compile_error(fn, sig):
    with pytest.raises(NumbaMetalError) as info:
        metal.compile_msl(fn, sig)
    return info.value


def test_unsupported_ufuncs_and_forms_are_refused_naming_the_ufunc_and_the_line():
    def new_array(x, out):
        out[0] = np.sin(x)[0]

    def unsupported(x, out):
        out[0] = np.gcd(x[0], x[1])

    def keyword(x, out):
        np.sin(x, out=out)

    def complex_loop(x, out):
        np.rint(x, out)

    def cast(x, out):
        np.sin(x, out)

    cases = [(new_array, "void(float32[:], float32[:])", "np.sin: on arrays it would return a new array"),
             (unsupported, "void(int32[:], int32[:])", "np.gcd: this NumPy ufunc is not supported"),
             (keyword, "void(float32[:], float32[:])", "np.sin: keyword arguments (out)"),
             (complex_loop, "void(complex64[:], complex64[:])", "np.rint: its F->F loop (complex64) is not supported"),
             (cast, "void(float32[:], int32[:])", "np.sin: can't cast result to explicit result type")]
    for fn, sig, words in cases:
        error = _compile_error(fn, sig)
        assert isinstance(error, UnsupportedFeatureError), fn.__name__
        assert words in str(error), str(error)
        assert f"test_numpy_ufuncs.py:{fn.__code__.co_firstlineno + 1}" in str(error), str(error)


def test_every_numba_cuda_kernel_ufunc_has_a_row():
    """numba-cuda's CUDA ufunc table (numba/cuda/ufuncs.py; the ufuncs its test_ufuncs.py exercises and its
    docs list for kernels) is covered, and the aliases NumPy gives them resolve to the same ufunc."""
    numba_cuda = """sin cos tan arcsin arccos arctan arctan2 hypot sinh cosh tanh arcsinh arccosh arctanh deg2rad
    radians rad2deg degrees greater greater_equal less less_equal not_equal equal logical_and logical_or
    logical_xor logical_not maximum minimum fmax fmin bitwise_and bitwise_or bitwise_xor invert bitwise_not
    left_shift right_shift log log2 log10 isnan conjugate divide""".split()
    assert set(numba_cuda) <= set(names())
    for row in UFUNCS:
        for alias in row.aliases:
            assert getattr(np, alias) is getattr(np, row.name)
    assert UFUNCS_BY_NAME["sin"].twin == "sin" and UFUNCS_BY_NAME["arctan2"].twin == "atan2"


def test_supported_features_lists_exactly_the_ufuncs_of_the_table():
    """docs/supported-features.md's list of ufuncs is the table's (names and aliases)."""
    import os
    import re
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "supported-features.md")
    line = next(l for l in open(doc, encoding="utf-8") if l.startswith("| NumPy ufuncs, one row each"))
    listed = re.findall(r"`(\w+)`", line.split("):", 1)[1].split(";", 1)[0])
    assert listed == list(names())
    assert set(listed) == metal.numpy_ufuncs()


def test_ufuncs_on_shared_arrays_0d_outputs_in_device_functions_and_with_debug():
    """The array form takes shared arrays and 0-d outputs, works in device functions (whose value is the
    output), and compiles with debug=True (its element accesses bounds-checked like any)."""
    @metal.jit(device=True)
    def hypot4(a, o):
        return np.hypot(a, np.float32(4.0), o)

    @metal.jit(debug=True)
    def k(x, out, o0, h):
        s = metal.shared.array(4, np.float32)
        i = metal.threadIdx.x
        s[i] = x[i]
        metal.syncthreads()
        if i == 0:
            np.exp(s, out)
            np.add(x[1], 1.0, o0)
            hypot4(x, h)[3] += 1.0

    x = np.arange(4, dtype=np.float32)
    out, h = np.zeros(4, np.float32), np.zeros(4, np.float32)
    o0 = np.zeros((), np.float64)
    k[1, 4](x, out, o0, h)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    assert o0[()] == 2.0
    np.testing.assert_array_equal(h, np.hypot(x, 4.0) + [0, 0, 0, 1])
