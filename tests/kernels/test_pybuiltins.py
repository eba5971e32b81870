"""Python's builtins inside kernels (kernel_api/pybuiltins.py): abs, min, max, round, int, float, bool, len, pow."""

import numpy as np

from numba_metal import metal
from numba_metal.kernel_api.functions import MATH_BY_NAME


def _ulp_error(got, exact):
    exact32 = exact.astype(np.float32)
    spacing = np.spacing(np.abs(exact32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@metal.jit
def builtins_kernel(a, b, n, out_f, out_i):
    i = metal.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out_f[i, 0] = abs(x)
        out_f[i, 1] = min(x, y)
        out_f[i, 2] = max(x, y, 0.5)
        out_f[i, 3] = round(x, 1)
        out_f[i, 4] = float(n) + x
        out_f[i, 5] = pow(abs(x), 0.5)
        out_i[i, 0] = abs(n - i)
        out_i[i, 1] = min(i, n, 7)
        out_i[i, 2] = max((i, n, 3))        # min/max of a tuple
        out_i[i, 3] = round(x)
        out_i[i, 4] = int(y)
        out_i[i, 5] = bool(i % 3)
        out_i[i, 6] = len(a)
        out_i[i, 7] = pow(i, 2)


def test_builtins_abs_min_max_round_int_float_bool_len_pow():
    a = np.array([-2.25, 1.75, 0.0, 3.05, -0.5, 9.0], dtype=np.float32)
    b = np.array([1.0, -3.5, 0.25, 3.05, 2.0, -9.0], dtype=np.float32)
    n = 4
    of = np.zeros((6, 6), np.float32)
    oi = np.zeros((6, 8), np.int64)
    builtins_kernel[1, 8](a, b, n, of, oi)
    f = np.float32
    ef = [[abs(x), min(x, y), max(x, y, f(0.5)), round(float(x), 1), f(n) + x, abs(x) ** f(0.5)]
          for x, y in zip(a, b)]
    ei = [[abs(n - i), min(i, n, 7), max((i, n, 3)), round(float(x)), int(y), bool(i % 3), 6, i ** 2]
          for i, (x, y) in enumerate(zip(a, b))]
    ef = np.array(ef, np.float32)
    np.testing.assert_allclose(of[:, :5], ef[:, :5], rtol=1e-6)
    # pow: within its bound in the math table (MSL Table 8.1: <= 16 ulp).
    exact_pow = np.array([abs(float(x)) ** 0.5 for x in a])
    assert _ulp_error(of[:, 5], exact_pow).max() <= MATH_BY_NAME["pow"].accuracy.ulps
    np.testing.assert_array_equal(oi, ei)


def test_min_max_nan_follow_pythons_algorithm():
    @metal.jit
    def k(a, b, out):
        i = metal.grid(1)
        if i < a.size:
            out[i, 0] = min(a[i], b[i])
            out[i, 1] = max(a[i], b[i])

    a = np.array([np.nan, 1.0], np.float32)
    b = np.array([1.0, np.nan], np.float32)
    out = np.zeros((2, 2), np.float32)
    k[1, 2](a, b, out)
    np.testing.assert_array_equal(out, [[min(np.nan, 1.0), max(np.nan, 1.0)],
                                        [min(1.0, np.nan), max(1.0, np.nan)]])


def _numba_cuda_round(x, nd):
    """numba-cuda's round_to_impl for a float32 x: scaled in float64 (exact for these ndigits), rounded half
    to even, unscaled, converted to float32."""
    x = float(np.float32(x))
    if nd >= 0:
        p = 10.0 ** nd
        y = x * p
        if np.isinf(y):
            return np.float32(x)
    else:
        p = 10.0 ** -nd
        y = x / p
    z = round(y)
    if abs(y - z) == 0.5:
        z = 2.0 * round(y / 2.0)
    return np.float32(z / p if nd >= 0 else z * p)


@metal.jit
def round_ndigits_kernel(x, nd, out):
    i = metal.grid(1)
    if i < x.size:
        out[i] = round(x[i], nd[i])


def test_round_ndigits_of_float32_halfway_cases_is_numba_cudas():
    # numba-cuda's test_round_to_f4_halfway: float32(0.3425) is 0.342500001..., so round(x, 3) is 0.343; the
    # float32 product x * 1000 is exactly 342.5, which rounding half to even alone takes to 342.
    rng = np.random.default_rng(7)
    nds = rng.integers(-4, 8, 4000)
    # near-halves at each ndigits (k + 0.5) / 10**nd in float32, plus values of every magnitude
    near_half = ((rng.integers(-10**4, 10**4, 4000) + 0.5) / 10.0 ** nds).astype(np.float32)
    spread = (rng.standard_normal(4000) * 10.0 ** rng.integers(-6, 7, 4000)).astype(np.float32)
    x = np.concatenate([[0.3425, -0.3425, 2.5, 0.125, 1e30, 123.0], near_half, spread]).astype(np.float32)
    nd = np.concatenate([[3, 3, 0, 2, 3, -45], nds, nds]).astype(np.int32)
    out = np.zeros_like(x)
    round_ndigits_kernel[(x.size + 127) // 128, 128](x, nd, out)
    expected = np.array([_numba_cuda_round(a, int(n)) for a, n in zip(x, nd)], np.float32)
    assert out[0] == np.float32(0.343) and out[1] == np.float32(-0.343) and out[5] == 0.0
    np.testing.assert_array_equal(out, expected)
