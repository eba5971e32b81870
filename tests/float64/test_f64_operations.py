"""Every float64.metal entry point, bit for bit against NumPy (and the documented rules where NumPy's
answer is platform-dependent): the CI profile of generated vectors (2^20 per basic operation, 2^16 for
the others; NUMBA_METAL_LONG_TESTS=1 runs 10^8 each), the TestFloat-style edge table, and Hypothesis
batches over raw bit patterns of every class."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import f64_suite as S
import f64_vectors as V
from numba_metal.compiler.float64_ops import FUNCTIONS

NAMES = list(S.CASES)
PARAMS = {fn.name: fn.params for fn in FUNCTIONS}


@pytest.mark.parametrize("name", NAMES)
def test_generated_vectors_match_numpy(f64lib, name):
    n = S.count(name)
    assert S.run(f64lib, S.CASES[name], seed=zlib.crc32(name.encode()), n=n) == n


@pytest.mark.parametrize("name", NAMES)
def test_edge_table_matches_numpy(f64lib, name):
    S.check(f64lib, S.CASES[name], S.edge_inputs(name))


# --------------------------------------------------------------------------------------------------
# Hypothesis: batches of operand tuples drawn from bit-pattern strategies.

_EDGES = [int(v) for v in V.edge_values()]


def _pack(sign, exp, frac):
    return (sign << 63) | (exp << 52) | frac


def f64_bits():
    """Raw float64 patterns: any 64 bits, the edge table, or sign/exponent/fraction drawn separately
    with the boundary exponents (subnormal, 1, around 1.0, overflow, inf/NaN) and fractions (0, 1,
    half, all ones) weighted up."""
    exponent = st.one_of(st.sampled_from([0, 1, 2, 0x3FE, 0x3FF, 0x400, 0x433, 0x7FE, 0x7FF]),
                         st.integers(0, 0x7FF))
    fraction = st.one_of(st.sampled_from([0, 1, 1 << 51, (1 << 51) + 1, (1 << 52) - 1]),
                         st.integers(0, (1 << 52) - 1))
    return st.one_of(st.builds(_pack, st.integers(0, 1), exponent, fraction),
                     st.sampled_from(_EDGES), st.integers(0, (1 << 64) - 1))


def _near(a):
    """A pattern related to a: a few ulps away, negated, or with a nearby exponent."""
    return st.one_of(st.integers(-3, 3).map(lambda d: (a + d) % (1 << 64)),
                     st.just(a ^ (1 << 63)),
                     st.integers(-60, 60).map(lambda k: (a & ~(0x7FF << 52)) | (min(max(((a >> 52) & 0x7FF) + k, 0), 0x7FE) << 52)))


_INT = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
        "uint": np.uint32, "long": np.int64, "ulong": np.uint64}


def _operand(kind: str, name: str):
    if kind == "nm_f64":
        return f64_bits()
    if kind == "float":
        return st.one_of(st.integers(0, (1 << 32) - 1),
                         st.sampled_from([0, 1, 0x7FFFFF, 0x800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00001, 0x80000001]))
    if kind == "half":
        return st.integers(0, (1 << 16) - 1)
    if name == "nm_f64_ldexp":
        return st.one_of(st.integers(-2200, 2200), st.integers(-1100, -1000), st.integers(1000, 1100))
    info = np.iinfo(_INT[kind])
    return st.one_of(st.integers(int(info.min), int(info.max)), st.sampled_from([int(info.min), int(info.max), 0]))


def _tuples(name: str):
    params = PARAMS[name]
    if len(params) >= 2 and params[0] == params[1] == "nm_f64":
        first = f64_bits()
        rest = [_operand(p, name) for p in params[2:]]
        return first.flatmap(lambda a: st.tuples(st.just(a), st.one_of(f64_bits(), _near(a)), *rest))
    return st.tuples(*[_operand(p, name) for p in params])


def _arrays(name: str, rows):
    params = PARAMS[name]
    dtypes = [np.uint64 if p in ("nm_f64", "ulong") else np.uint32 if p == "float" else np.uint16 if p == "half"
              else _INT[p] for p in params]
    return [np.array([r[k] for r in rows], dtype=d) for k, d in enumerate(dtypes)]


@pytest.mark.parametrize("name", NAMES)
def test_hypothesis_bit_patterns_match_numpy(f64lib, name):
    @settings(max_examples=250 if S.LONG else 25, deadline=None, derandomize=not S.LONG, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(_tuples(name), min_size=1, max_size=48))
    def check(rows):
        S.check(f64lib, S.CASES[name], _arrays(name, rows))

    check()


def test_fma_reference_is_correctly_rounded():
    """The fma reference (the C library's fma) agrees with exact rational arithmetic rounded once."""
    from fractions import Fraction

    import f64_reference as R

    rng = np.random.default_rng(7)
    a, b, c = V.fma_triples(rng, 4000)
    fa, fb, fc = R.f(a), R.f(b), R.f(c)
    ref = R.f(R.fma_libm(a, b, c))
    checked = 0
    for x, y, z, r in zip(fa.tolist(), fb.tolist(), fc.tolist(), ref.tolist()):
        if not all(map(np.isfinite, (x, y, z, r))):
            continue
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if exact == 0:
            continue
        assert float(exact) == r, (x.hex(), y.hex(), z.hex(), r.hex())
        checked += 1
    assert checked > 2000
