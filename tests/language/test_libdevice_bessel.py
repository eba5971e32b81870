"""metal.libdevice's Bessel functions j0 j1 jn y0 y1 yn and their f forms (compiler/mslib/libdevice.metal's
ld_bessel) against mpmath's besselj/bessely: random and edge arguments (tiny, both sides of the switch from
Miller's recurrence to Hankel's expansion at 25, near the zeros, huge), within the bound each row records
(absolute near the zeros, where relative error is meaningless, as CUDA documents its own); C99/glibc's
special values (libdevice's: NaN for a negative order) and the identity for negative arguments."""

import math

import mpmath
import numpy as np

from numba_metal import metal
from numba_metal.kernel_api import functions as F

ld = metal.libdevice
ROWS = {f.name: f for f in F.LIBDEVICE}
NAMES = ("j0", "j1", "y0", "y1", "jn", "yn")


def _bessel_kernel(j0, j1, y0, y1, jn, yn):
    @metal.jit
    def k(n, x, out):
        i = metal.grid(1)
        if i < x.size:
            out[i, 0] = j0(x[i])
            out[i, 1] = j1(x[i])
            out[i, 2] = y0(x[i])
            out[i, 3] = y1(x[i])
            out[i, 4] = jn(n[i], x[i])
            out[i, 5] = yn(n[i], x[i])
    return k


bessel64 = _bessel_kernel(ld.j0, ld.j1, ld.y0, ld.y1, ld.jn, ld.yn)
bessel32 = _bessel_kernel(ld.j0f, ld.j1f, ld.y0f, ld.y1f, ld.jnf, ld.ynf)


def _run(kernel, n, x, dtype):
    out = np.zeros((x.size, 6), dtype)
    kernel[(x.size + 63) // 64, 64](n, x, out)
    return out


def _reference(n, x):
    with mpmath.workdps(40):
        return np.array([[float(mpmath.besselj(0, v)), float(mpmath.besselj(1, v)), float(mpmath.bessely(0, v)),
                          float(mpmath.bessely(1, v)), float(mpmath.besselj(int(m), v)),
                          float(mpmath.bessely(int(m), v))] for m, v in zip(n, map(float, x))])


def _arguments(rng):
    zeros = [float(mpmath.besseljzero(0, k)) for k in (1, 2, 8)] + [float(mpmath.besseljzero(1, k)) for k in (1, 9)]
    zeros += [float(mpmath.besselyzero(0, k)) for k in (1, 7)] + [float(mpmath.besselyzero(1, 2))]
    return np.concatenate([rng.uniform(0, 8, 60), rng.uniform(8, 40, 60), np.geomspace(1e-9, 1e5, 40), zeros,
                           [24.999999, 25.0, 25.000001, 2.0 ** -27, 1e15, 1e300, 0.3]])


def _within(got, want, row, n=None):
    """|got - want| <= the row's absolute bound, or within its ulps of want (yn: CUDA's ceil(2 + 2.5 n))."""
    ulps = row.accuracy.ulps if n is None else np.ceil(2 + 2.5 * n)
    error = np.abs(got - want)
    return (error <= row.accuracy.absolute) | (error <= ulps * np.spacing(np.abs(want)))


def test_float64_forms_against_mpmath_within_their_bounds():
    rng = np.random.default_rng(12)
    x = _arguments(rng)
    n = rng.integers(2, 60, x.size).astype(np.int32)
    got = _run(bessel64, n, x, np.float64)
    want = _reference(n, x)
    for col, name in enumerate(NAMES):
        finite = np.abs(want[:, col]) < 1e300
        ok = _within(got[finite, col], want[finite, col], ROWS[name], n[finite] if name == "yn" else None)
        assert ok.all(), (name, x[finite][~ok], got[finite, col][~ok], want[finite, col][~ok])
        overflow = ~finite   # yn of a small argument and a high order: -inf, as glibc
        assert (got[overflow, col] == -np.inf).all(), (name, x[overflow])


def test_float32_forms_are_the_float64_result_rounded():
    """The f forms round the float64 result: within 1 float32 ulp or the absolute bound of the float64 row."""
    rng = np.random.default_rng(13)
    x = _arguments(rng)
    x = x[x < 1e30].astype(np.float32)
    n = rng.integers(2, 30, x.size).astype(np.int32)
    got = _run(bessel32, n, x, np.float32).astype(np.float64)
    want = _reference(n, x)
    for col, name in enumerate(NAMES):
        finite = np.abs(want[:, col]) < 3e38
        w, g = want[finite, col], got[finite, col]
        ok = (np.abs(g - w) <= np.spacing(np.abs(w).astype(np.float32)).astype(np.float64)) | (np.abs(g - w) <= 1e-15)
        assert ok.all(), (name + "f", x[finite][~ok], g[~ok], w[~ok])


def test_the_absolute_error_near_zeros_is_far_below_cudas():
    """CUDA documents 5e-12 (float64) and 2.2e-6 (float32) absolute error away from |x| < 8; the rows record
    1e-15 (float64), measured on the zeros themselves where the value is smallest."""
    x = np.array([float(mpmath.besseljzero(0, k)) for k in range(1, 12)])
    got = _run(bessel64, np.full(x.size, 2, np.int32), x, np.float64)
    with mpmath.workdps(40):
        want = np.array([float(mpmath.besselj(0, v)) for v in x])
    assert np.abs(got[:, 0] - want).max() <= ROWS["j0"].accuracy.absolute <= 5e-12


def test_within_cudas_7_ulp_below_8_also_at_the_zeros():
    """Below |x| = 8 CUDA promises 7 ulp for j0 j1 y0 y1: relative error, also next to the zeros, where the
    rows switch to their Taylor series about the zero (the first float64 on each side of it included)."""
    rng = np.random.default_rng(14)
    zeros = [float(f(nu, k)) for f in (mpmath.besseljzero, mpmath.besselyzero) for nu in (0, 1) for k in (1, 2, 3)]
    near = [v for z in zeros for v in (z, np.nextafter(z, 0), np.nextafter(z, 9), z + 1e-9, z - 0.5, z + 0.99)]
    x = np.concatenate([rng.uniform(0, 8, 120), np.geomspace(1e-8, 8, 20), near])
    x = x[(x > 0) & (x < 8)]
    got = _run(bessel64, np.full(x.size, 2, np.int32), x, np.float64)
    want = _reference(np.full(x.size, 2), x)
    for col, name in enumerate(NAMES[:4]):
        ulps = np.abs(got[:, col] - want[:, col]) / np.spacing(np.abs(want[:, col]))
        assert ulps.max() <= ROWS[name].accuracy.ulps <= 7, (name, x[ulps.argmax()], ulps.max())


def test_the_zeros_of_the_taylor_table_are_mpmaths():
    """libdevice.metal's table of zeros (hi + lo) and derivatives there, against mpmath."""
    import re
    import struct
    from pathlib import Path
    from numba_metal.compiler import mslib
    source = Path(mslib.path("libdevice.metal")).read_text(encoding="utf-8")
    table = source[source.index("nm_ld_bessel_zeros["):]
    table = table[:table.index("};")]
    rows = re.findall(r"\{(\d)UL, 0x([0-9A-F]{16})UL, 0x([0-9A-F]{16})UL, 0x([0-9A-F]{16})UL\}", table)
    assert len(rows) == int(re.search(r"nm_ld_bessel_zeros\[(\d+)\]", table).group(1))
    value = lambda h: struct.unpack("<d", struct.pack("<Q", int(h, 16)))[0]   # noqa: E731
    zero_of = {0: (mpmath.besselj, 0), 1: (mpmath.besselj, 1), 2: (mpmath.bessely, 0), 3: (mpmath.bessely, 1)}
    with mpmath.workdps(50):
        for fn, hi, lo, slope in rows:
            f, nu = zero_of[int(fn)]
            z = mpmath.findroot(lambda v: f(nu, v), mpmath.mpf(value(hi)))
            assert abs(mpmath.mpf(value(hi)) + mpmath.mpf(value(lo)) - z) < mpmath.mpf(2) ** -100 * z
            assert value(slope) == float(mpmath.diff(lambda v: f(nu, v), z))


def test_special_values_and_negative_orders_as_libdevice():
    x = np.array([np.inf, -np.inf, 0.0, -0.0, np.nan, -1.5, 3.25, -3.25, 1.0, 1.0])
    n = np.array([3, 2, 2, 3, 4, 2, -3, 3, 200, 50], np.int32)
    got = _run(bessel64, n, x, np.float64)
    with np.errstate(invalid="ignore"):
        assert list(got[:2, 0]) == [0.0, 0.0] and list(got[:2, 1]) == [0.0, 0.0]
        assert not np.signbit(got[0, 1]) and np.signbit(got[1, 1])   # j1(-inf) = -0, as j1 is odd
        assert got[2, 0] == 1.0 and got[2, 1] == 0.0 and np.signbit(got[3, 1])   # j1(-0) = -0
        assert got[2, 2] == -np.inf and got[2, 3] == -np.inf and got[2, 5] == -np.inf   # y(0) = -inf
        assert got[3, 5] == -np.inf                    # yn(3, -0): -0 == 0
        assert np.isnan(got[4]).all()                  # NaN in, NaN out
        assert np.isnan(got[5, 2:4]).all() and np.isnan(got[5, 5])   # y(x < 0) = NaN
        assert got[0, 2] == 0.0 and got[0, 3] == 0.0 and got[0, 4] == 0.0 and got[0, 5] == 0.0
    j3 = float(mpmath.besselj(3, 3.25))
    assert np.isnan(got[6, 4]) and np.isnan(got[6, 5])   # libdevice: jn/yn(n < 0, x) = NaN
    assert math.isclose(got[7, 4], -j3, abs_tol=1e-15)   # J_3(-x) = -J_3(x)
    assert got[8, 4] == 0.0                                # J_200(1) ~ 1e-435 underflows
    assert math.isclose(got[9, 4], float(mpmath.besselj(50, 1)), rel_tol=1e-13)


def measure(samples: int = 4000, seed: int = 1) -> None:
    """Print, per function, the largest absolute error (|value| < 1), the largest error in ulps where the
    absolute error exceeds 1e-15 and the largest in ulps below x = 8, over `samples` random arguments in
    [0, 40] and a log-spread set."""
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(0, 40, samples), np.geomspace(1e-9, 1e6, samples // 4)])
    n = rng.integers(2, 129, x.size).astype(np.int32)
    got = _run(bessel64, n, x, np.float64)
    want = _reference(n, x)
    print(f"{x.size} arguments; orders of jn/yn in [2, 128]")
    for col, name in enumerate(NAMES):
        w, g = want[:, col], got[:, col]
        finite = np.abs(w) < 1e300
        error = np.abs(g - w)[finite]
        small = np.abs(w[finite]) < 1
        ulps = np.where(error > 1e-15, error / np.spacing(np.abs(w[finite])), 0)
        below8 = (x[finite] < 8) & (w[finite] != 0)
        ulps8 = error[below8] / np.spacing(np.abs(w[finite][below8]))
        print(f"{name:3} max abs error (|value| < 1) {error[small].max():.3g}   max ulps beyond 1e-15 {ulps.max():.3g}"
              f"   max ulps for x < 8 {ulps8.max():.3g}")


if __name__ == "__main__":
    measure()
