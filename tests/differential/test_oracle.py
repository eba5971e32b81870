"""The reference's scalar semantics checked against Numba itself (@numba.njit on the CPU).

The differential tests are only as good as their oracle, so the oracle's operators are compared
with Numba's compiled code, value and type, on random and boundary operands: exactly for
integers (Numba's NumPy error model is numba-metal's contract), and for float32 operands, whose
arithmetic Numba also does in float32. Where numba-metal's contract deliberately differs from
Numba on the CPU (shift counts of the width or more; float64 computed in float32), the test says so
and checks the contract instead.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from numba.core import types as T

from . import reference as R
from . import semantics as S

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
OPS = ["+", "-", "*", "//", "%", "&", "|", "^"]
PAIRS = [(np.int32, np.int32), (np.int64, np.int64), (np.uint64, np.uint64), (np.uint64, np.int64),
         (np.int8, np.uint8), (np.uint32, np.int32), (np.int16, np.uint64), (np.bool_, np.int32),
         (np.uint8, np.uint8), (np.int64, np.uint16)]


def _samples(dtype, rng, n=40):
    if dtype is np.bool_:
        return [np.bool_(b) for b in rng.integers(0, 2, size=n)]
    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, 1, info.min + 1, info.max - 1] + ([-1, -2] if info.min < 0 else [2, 3])
    vals = edges + list(rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True))
    vals += list(rng.integers(max(info.min, -9), min(info.max, 9) + 1, size=n))
    return [dtype(v) for v in vals]


def _njit_all_ops():
    src = "def f(a, b):\n    return (" + ", ".join(f"a {op} b" for op in OPS) + ",)\n"
    ns = {}
    exec(src, ns)
    return numba.njit(error_model="numpy")(ns["f"])


@pytest.mark.parametrize("ta,tb", PAIRS, ids=lambda t: t.__name__)
def test_integer_operators_match_numba_njit(ta, tb):
    rng = np.random.default_rng(7)
    f = _njit_all_ops()
    xs, ys = _samples(ta, rng), _samples(tb, rng)
    for a, b in zip(xs, ys[::-1]):
        want = f(a, b)
        for op, w in zip(OPS, want):
            got = S.binop(op, a, b)
            assert int(got) == int(w), (op, a, b, got, w)
    # Result types: Numba's compiled signature.
    rtypes = f.nopython_signatures[0].return_type.types
    a, b = xs[0], ys[0]
    for op, rt in zip(OPS, rtypes):
        assert S.nbt(S.binop(op, a, b)) == rt, (op, ta, tb)


@pytest.mark.parametrize("ta", [np.int8, np.int32, np.int64, np.uint32, np.uint64], ids=lambda t: t.__name__)
def test_shifts_match_numba_for_counts_below_the_width(ta):
    @numba.njit(error_model="numpy")
    def f(a, b):
        return a << b, a >> b

    rng = np.random.default_rng(3)
    for a in _samples(ta, rng, 20):
        for b in (0, 1, 5, 31, 63):
            b = np.int64(b)
            sig = S.binop_sig("<<", S.nbt(a), S.nbt(b))
            if b >= sig.return_type.bitwidth:
                continue
            want = f(a, b)
            assert int(S.binop("<<", a, b)) == int(want[0]), (a, b)
            assert int(S.binop(">>", a, b)) == int(want[1]), (a, b)


def test_shift_counts_are_taken_modulo_the_width():
    # numba-metal's documented rule (MSL's); Numba on the CPU leaves such shifts undefined.
    assert int(S.binop("<<", np.int64(1), np.int64(65))) == 2
    assert int(S.binop(">>", np.int64(-8), np.int64(66))) == -2
    assert int(S.binop("<<", np.int32(1), np.int64(-1))) == -(2 ** 63)


def test_integer_power_matches_numba_njit():
    @numba.njit(error_model="numpy")
    def f(a, b):
        return a ** b

    for a in (-3, -2, -1, 0, 1, 2, 3, 7, 2 ** 31, -(2 ** 40)):
        for b in (-3, -1, 0, 1, 2, 3, 5, 8, 62, 63, 64):
            want = f(np.int64(a), np.int64(b))
            assert int(S.binop("**", np.int64(a), np.int64(b))) == int(want), (a, b)


# No operand near the denormal range: there the device flushes to zero and Numba on the CPU does
# not (test_denormals_flush_to_zero covers that).
F32 = [0.0, -0.0, 1.0, -1.5, 0.1, 3.0, 1e-3, 7.25, -100.0, 1e20, -3e38, 3e38, math.inf,
       -math.inf, math.nan, 2.0 ** -20, 123456.789, -0.7, 5.0]


def _ftz(x):
    x = np.float32(x)
    if x != 0 and abs(x) < np.float32(S.FLT_MIN):
        return np.float32(math.copysign(0.0, x))
    return x


def _bits_equal(got, want):
    got, want = float(got), float(want)
    if want != want:
        return got != got
    return got == want and math.copysign(1, got) == math.copysign(1, want)


def test_float32_operators_match_numba_njit():
    @numba.njit(error_model="numpy")
    def f(a, b):
        return a + b, a - b, a * b, a / b, a // b, a % b

    for x in F32:
        for y in F32:
            a, b = np.float32(x), np.float32(y)
            want = f(a, b)
            for op, w in zip(["+", "-", "*", "/", "//", "%"], want):
                got = S.binop(op, a, b)
                assert S.nbt(got) == T.float32
                assert _bits_equal(got, _ftz(w)), (op, x, y, got, w)


def test_float64_operations_compute_in_float32():
    # 0.1 (float64) + 0.2 (float64): float32(0.1) + float32(0.2) rounded to float32.
    got = S.binop("+", 0.1, 0.2)
    assert type(got) is float and got == float(np.float32(0.1) + np.float32(0.2))
    # int64 / int64 is float64 in Numba: float32 division of the float32-converted operands.
    assert S.binop("/", np.int64(2 ** 24 + 1), np.int64(3)) == float(np.float32(2 ** 24) / np.float32(3))
    # A Python float literal is its float32 value wherever it is used.
    assert S.binop("*", 1e20, np.int64(3)) == float(np.float32(np.float32(1e20) * np.float32(3)))


def test_float_to_int_conversions():
    assert int(S.cast(np.float32(-3.9), T.int32)) == -3
    assert int(S.cast(np.float32(math.nan), T.int64)) == 0
    with pytest.raises(S.Unspecified):
        S.cast(np.float32(3e9), T.int32)
    with pytest.raises(S.Unspecified):
        S.cast(np.float32(-1.0), T.uint8)


def test_int_to_float_rounds_once():
    n = 2 ** 60 + 2 ** 36 + 1  # float(n) would round to 2**60 + 2**36, then float32 to 2**60
    assert S.int_to_f32(n) == float(np.float32(2.0 ** 60 + 2.0 ** 37))


def test_sqrt_of_an_integer_converts_it_to_float32_first():
    # numba-metal's contract: sqrt(int) computes in float32 in a kernel without float64 data, so an
    # integer beyond 2^24 rounds before the root (found by the long differential run, seed 2000232).
    for v in (np.int64(1944907997), np.int32(-2147483647), np.uint64(2 ** 64 - 1), np.int8(9)):
        r = R._MathNS().sqrt(abs(v) if v < 0 else v)
        assert float(r) == float(np.sqrt(np.float32(abs(int(v)))))


def test_uncertain_values_propagate_and_refuse_undecidable_branches():
    s = R._MathNS().sin(np.float32(0.5))
    assert type(s) is S.U and s.e > 0
    assert abs(s.v - math.sin(float(np.float32(0.5)))) < 1e-7
    y = S.binop("*", s, np.float32(2.0))
    assert type(y) is S.U and y.e >= 2 * s.e
    with pytest.raises(S.Unstable):
        S.binop("<", s, np.float32(s.v))     # within the error bound: undecidable
    assert bool(S.binop("<", s, np.float32(0.4))) is False
    with pytest.raises(S.Unstable):
        S.cast(S.U(2.0, 1e-6, T.float32), T.int32)  # 2 - 1e-6 truncates to 1


def test_min_max_follow_pythons_algorithm():
    nan = np.float32(math.nan)
    one = np.float32(1.0)
    assert math.isnan(R._min(nan, one)) and R._min(one, nan) == 1.0
    assert math.isnan(R._max(nan, one)) and R._max(one, nan) == 1.0


def test_round_is_half_to_even():
    assert int(R._round(np.float32(2.5))) == 2 and int(R._round(np.float32(3.5))) == 4
    assert int(R._round(np.float32(-0.5))) == 0


def test_denormals_flush_to_zero():
    # As on Apple GPUs and the CPU reference device (FTZ/DAZ): a float32 result below FLT_MIN is 0.
    tiny = np.float32(2.0 ** -100)
    got = S.binop("*", tiny, np.float32(2.0 ** -30))
    assert float(got) == 0.0
    got = S.binop("*", np.float32(-(2.0 ** -100)), np.float32(2.0 ** -30))
    assert float(got) == 0.0 and math.copysign(1.0, float(got)) == -1.0
    assert S.f32r(3.5e38) == math.inf and S.f32r(-1e39) == -math.inf


def test_round_with_ndigits_matches_numba_njit_including_signed_zero():
    @numba.njit
    def f(x, n):
        return round(x, n)

    for x in (-3.0, 3.0, -49.0, 150.0, 2.5, -0.125, 1234.5678, 1e30, -0.0):
        for n in (-2, -1, 0, 1, 2, 3):
            want = f(np.float32(x), n)
            got = R._round(np.float32(x), np.int64(n))
            assert _bits_equal(got, want), (x, n, got, want)


def test_uncertain_floor_division_that_overflows_is_undecidable():
    # (found by the long run: the quotient's interval overflowed to inf/nan and math.floor raised)
    u = S.U(3.0e38, 1e32, T.float32)
    for op in ("//", "%"):
        with pytest.raises(S.Unstable):
            S.binop(op, u, np.float32(1e-3))


def test_copysign_with_a_nan_sign_is_not_compared():
    """The sign bit of a NaN computed by arithmetic is unspecified (the CPU device's x86 default NaN is
    negative, CPython's math.nan positive), so copysign(x, NaN) is undecidable, not a mismatch
    (found by the long run, seed 2000979)."""
    ns = R._MathNS()
    with pytest.raises(S.Unstable):
        ns.copysign(np.float32(2.0), np.float32(math.nan))
    assert ns.copysign(np.float32(2.0), np.float32(-0.0)) == -2.0
    assert ns.copysign(np.float32(-2.0), np.float32(math.inf)) == 2.0


def test_the_reference_refuses_threads_that_race_on_an_element():
    """Two threads touching one element of a kernel argument, one of them writing, have no single answer on
    a device that runs threadgroups in parallel: the reference reports a generator bug instead of picking
    the answer of its own sequential order."""
    src = ("import numpy as np\nfrom numba_metal import metal\n\n@metal.jit\ndef kern(W, nx):\n"
           "    gx = metal.grid(1)\n    if gx >= nx:\n        return\n    W[0, gx] ^= 1\n")
    for griddim, racy in [((1, 1, 1), False), ((1, 2, 1), True)]:
        R.reset()
        ns = R.load(src, "kern", {}, None, 0)
        w = np.zeros((1, 4), np.int64)
        if racy:
            with pytest.raises(S.GeneratorError, match=r"data race: thread \(0, 1, 0\) reads element \[0, 0\]"):
                R.launch(ns["kern"], griddim, (4, 1, 1), [w, np.int64(4)])
        else:
            R.launch(ns["kern"], griddim, (4, 1, 1), [w, np.int64(4)])
            assert w.tolist() == [[1, 1, 1, 1]]
