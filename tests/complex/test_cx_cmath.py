"""The cmath functions of complex.metal: errors against mpmath within the bounds documented in complex_ops.py
(CI profile: 300 inputs per region), C99 Annex G special values (CPython's cmath where it returns a value,
NumPy's C99 value where CPython raises), the branch cuts (the sign of a zero part picks the side, as in
CPython), and phase, polar and rect against CPython."""

from __future__ import annotations

import cmath
import itertools
import math
import zlib

import numpy as np
import pytest

import cx_suite as S

N = 300
inf, nan = math.inf, math.nan
SPECIAL_PARTS = [-inf, -2.5, -0.0, 0.0, 2.5, inf, nan]
_NUMPY = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
          "atanh": "arctanh"}
# Where C99 leaves a sign unspecified, CPython and NumPy differ; CPython's choice is the reference.
FUNCTIONS = ("exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
             "asinh", "acosh", "atanh")


@pytest.mark.parametrize("name", sorted(S.CASES))
def test_error_within_documented_bound(mathlib, name):
    case = S.CASES[name]
    bound = S.ROWS[name].ulp
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    worst = max((S.measure(mathlib, case, r.label, r.make(rng, N)) for r in case.regions), key=lambda r: r.max_ulp)
    assert worst.max_ulp <= bound, (name, worst)


def _c99(fn: str, z: complex):
    """(CPython's value, or None where CPython raises; NumPy's value, which is glibc's C99 Annex G value)."""
    with np.errstate(all="ignore"):
        numpy_value = complex(getattr(np, _NUMPY.get(fn, fn))(np.complex128(z)))
    try:
        return getattr(cmath, fn)(z), numpy_value
    except (ValueError, OverflowError):
        return None, numpy_value


def _same_part(got: float, ref: float, ulps: float, signed: bool = True) -> bool:
    if math.isnan(ref):
        return math.isnan(got)
    if not math.isfinite(ref) or ref == 0:
        if not signed:
            return abs(got) == abs(ref)
        return got == ref and math.copysign(1, got) == math.copysign(1, ref)
    return math.isfinite(got) and abs(got - ref) <= ulps * math.ulp(ref)


def _matches_c99(fn: str, z: complex, got: complex, ulps: float, single: bool = False) -> bool:
    """got is CPython's value; where CPython raises, C99's value up to the signs of infinite and zero parts
    (which Annex G leaves unspecified in those cases); where CPython and NumPy disagree (C99 and C11 differ
    for tanh(+-0 + i nan) and acosh(+-0 + i nan), and CPython changed with them), either."""
    python, numpy_value = _c99(fn, z)
    candidates = [(python, True)] if python is not None else [(numpy_value, False)]
    if python is not None and not (_same_part(numpy_value.real, python.real, 4) and _same_part(numpy_value.imag, python.imag, 4)):
        candidates.append((numpy_value, True))
    for ref, signed in candidates:
        if single:
            with np.errstate(over="ignore"):
                ref = complex(np.complex64(ref))
        if _same_part(got.real, ref.real, ulps, signed) and _same_part(got.imag, ref.imag, ulps, signed):
            return True
    return False


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_special_values_are_c99s(mathlib, fn):
    zs = [complex(a, b) for a, b in itertools.product(SPECIAL_PARTS, SPECIAL_PARTS)]
    for prefix, dtype, ulps in (("nm_c128", np.complex128, 2), ("nm_c64", np.complex64, 4)):
        got = mathlib.call(f"{prefix}_{fn}", np.array(zs, dtype=dtype))
        single = dtype == np.complex64
        scale = ulps * 2.0 ** 29 if single else ulps                    # a float32 ulp, in float64 ulps
        for z, g in zip(zs, got):
            assert _matches_c99(fn, z, complex(g), scale, single), (prefix, fn, z, complex(g), _c99(fn, z))


# Points on (and next to) the branch cuts: the real axis beyond +-1 for asin, acos, atanh, below -1 for
# acosh... (both signs of zero), the imaginary axis beyond +-i for asinh and atan, the negative real axis
# for log and sqrt.
CUT_POINTS = [complex(x, s * 0.0) for x in (-3.5, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 3.5, 1e300, -1e300)
              for s in (1, -1)] + [complex(s * 0.0, y) for y in (-3.5, -1.5, -1.0, 1.0, 1.5, 3.5, -1e300)
                                   for s in (1, -1)] + [complex(-2.0, 1e-300), complex(-2.0, -1e-300)]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_branch_cuts_are_cpythons(mathlib, fn):
    got = mathlib.call(f"nm_c128_{fn}", np.array(CUT_POINTS))
    for z, g in zip(CUT_POINTS, got):
        assert _matches_c99(fn, z, complex(g), 3), (fn, z, complex(g), _c99(fn, z))
    small = [complex(np.complex64(z)) for z in CUT_POINTS if abs(z) < 1e30 and abs(z.imag) != 1e-300]
    got = mathlib.call(f"nm_c64_{fn}", np.array(small, dtype=np.complex64))
    for z, g in zip(small, got):
        assert _matches_c99(fn, z, complex(g), 4 * 2.0 ** 29, True), (fn, z, complex(g), _c99(fn, z))


def test_phase_polar_rect(mathlib):
    rng = np.random.default_rng(31)
    parts = SPECIAL_PARTS + [1e-300, 1e300, -7.25]
    z = np.array([complex(a, b) for a, b in itertools.product(parts, parts)]
                 + list(rng.standard_normal(2000) * np.exp2(rng.uniform(-100, 100, 2000))
                        + 1j * rng.standard_normal(2000)))
    phase = mathlib.call("nm_c128_phase", z)
    modulus, angle = mathlib.call("nm_c128_polar", z)
    for k, v in enumerate(z):
        ref = math.atan2(v.imag, v.real)     # cmath.phase, which raises when the angle underflows
        assert _same_part(phase[k], ref, 1) and _same_part(angle[k], ref, 1), v
        try:
            ref = abs(v)
        except OverflowError:
            ref = inf
        assert _same_part(modulus[k], ref, 1), v
    r = np.array([a for a, b in itertools.product(parts, parts)] + list(rng.uniform(-10, 10, 2000)))
    phi = np.array([b for a, b in itertools.product(parts, parts)] + list(rng.uniform(-10, 10, 2000)))
    got = mathlib.call("nm_c128_rect", r, phi)
    for k in range(len(r)):
        try:
            ref = cmath.rect(r[k], phi[k])
        except (ValueError, OverflowError):
            if math.isinf(phi[k]):
                # C99's spirit (CPython's table): an infinite angle gives NaN, an infinite radius +-infinity
                assert math.isnan(got[k].imag) and (math.isinf(got[k].real) if math.isinf(r[k])
                                                    else math.isnan(got[k].real)), (r[k], phi[k], got[k])
                continue
            ref = complex(r[k] * math.cos(phi[k]), r[k] * math.sin(phi[k]))       # overflow: infinite parts
        assert _same_part(got[k].real, ref.real, 2) and _same_part(got[k].imag, ref.imag, 2), (r[k], phi[k], got[k], ref)
    z32 = z[-2000:].astype(np.complex64)
    got32 = mathlib.call("nm_c64_polar", z32)
    ref = np.array([cmath.polar(complex(v)) for v in z32])
    assert np.allclose(got32.real, ref[:, 0], rtol=3e-7) and np.allclose(got32.imag, ref[:, 1], rtol=3e-7, atol=1e-30)
