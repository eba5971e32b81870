"""One row per float64.metal entry point: how its test inputs are made, its reference result and its NaN
payload rule. The CI tests (test_f64_*.py) and the long run (tools/float64_long_run.py) both run these rows.

Inputs are uint64 bit patterns for float64 operands, uint32/uint16 patterns for float32/float16, and
integer arrays for integer operands. A row's `expected` gives NumPy's result (or the model of the
documented rule where NumPy's is platform-dependent); `nan` gives the documented NaN result.
"""

from __future__ import annotations

import os
from typing import Callable, NamedTuple

import numpy as np

import f64_reference as R
import f64_vectors as V
from numba_metal.compiler.float64_ops import FUNCTIONS

LONG = os.environ.get("NUMBA_METAL_LONG_TESTS", "") not in ("", "0")
# Vectors per operation: basic operations get the big count in CI, the rest a smaller one.
CI_BASIC = 1 << 20
CI_OTHER = 1 << 16
LONG_COUNT = 100_000_000
BATCH = 1 << 20

BASIC = ("nm_f64_add", "nm_f64_sub", "nm_f64_mul", "nm_f64_div", "nm_f64_sqrt", "nm_f64_fma",
         "nm_f64_eq", "nm_f64_lt", "nm_f64_le", "nm_f64_to_f32", "nm_f64_from_f32", "nm_f64_to_f16",
         "nm_f64_to_i64", "nm_f64_to_i32", "nm_f64_from_i64", "nm_f64_from_u64", "nm_f64_floor",
         "nm_f64_rint", "nm_f64_fmod", "nm_f64_pymod", "nm_f64_floordiv")


class Case(NamedTuple):
    name: str
    make: Callable          # (rng, n) -> list of input arrays
    expected: Callable      # (*inputs) -> result array, or a tuple for two results
    nan: Callable | None    # (*inputs) -> documented NaN results (same shape as expected), or None
    float_result: bool = True
    numpy_payloads: bool = True


f = R.f
_np = R._np


def _mix(base, *hard):
    """Inputs from `base` with consecutive slices replaced by hard cases: each (generator, share, cap)
    fills n/share of the vectors (at most cap of them)."""
    def make(rng, n):
        ins = base(rng, n)
        at = 0
        for gen, share, cap in hard:
            k = min(n // share, cap, n - at)
            if k > 0:
                for a, x in zip(ins, gen(rng, k)):
                    a[at:at + k] = x
                at += k
        return ins
    return make


ALL = 1 << 62   # no cap


def _pairs(rng, n):
    return list(V.pairs(rng, n))


def _values(rng, n):
    return [V.values(rng, n)]


def _one(gen):
    return lambda rng, n: [gen(rng, n)]


def _np2(op):
    return lambda a, b: _np(op, a, b)


def _np1(op):
    return lambda a: _np(op, a)


def _cmp(op):
    def expected(a, b):
        with np.errstate(all="ignore"):
            return op(f(a), f(b))
    return expected


def _fminmax(op, model):
    """NumPy's np.fmin/np.fmax, except where NumPy answers differently depending on where the element
    falls in its loop (the SIMD body, or libm's fmin/fmax in the scalar tail): a +0/-0 pair (either
    zero) and a signalling NaN operand (the number, or a quiet NaN as IEEE 754-2008's minNum). There
    the documented rule is the reference: b for equal values, the number beside a NaN."""
    def expected(a, b):
        signalling = lambda u: R.isnan(u) & ((u & R.QUIET) == 0)  # noqa: E731
        unsettled = (((a | b) & R.ABS) == 0) | signalling(a) | signalling(b)
        return np.where(unsettled, model(a, b), _np(op, a, b))
    return expected


def _divmod(a, b):
    with np.errstate(all="ignore"):
        q, m = np.divmod(f(a), f(b))
    return R.b(q), R.b(m)


def _frexp(a):
    m, e = np.frexp(f(a))
    return R.b(m), e.astype(np.int32)


def _ldexp_inputs(rng, n):
    x = V.values(rng, n)
    k = rng.integers(-2200, 2201, n)
    k = np.where(rng.random(n) < 0.6, rng.integers(-70, 71, n), k)
    # push normal values across the subnormal and overflow thresholds
    e = ((x >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    near = rng.random(n) < 0.3
    k = np.where(near, np.where(rng.random(n) < 0.5, -e - rng.integers(-3, 55, n), 0x7FF - e + rng.integers(-3, 3, n)), k)
    return [x, k.astype(np.int32)]


def _ldexp(x, k):
    with np.errstate(all="ignore"):
        return R.b(np.ldexp(f(x), k))


def _to_int(dtype):
    return lambda x: R.to_int_aarch64(x, dtype)


def _from_int(dtype):
    def make(rng, n):
        return [V.int_values(rng, n, dtype)]
    return make


def _f32_inputs(rng, n):
    u = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    kind = rng.integers(0, 4, n)
    sub = rng.integers(0, 1 << 23, n, dtype=np.uint64).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << 31)
    u = np.where(kind == 1, sub, u)                                       # subnormals and zeros
    nan = np.uint32(0x7F800000) | rng.integers(0, 1 << 23, n, dtype=np.uint64).astype(np.uint32)
    u = np.where(kind == 2, nan | (rng.integers(0, 2, n).astype(np.uint32) << 31), u)   # NaN, infinities
    return [u]


def _f32_from(u):
    with np.errstate(all="ignore"):
        return R.b(np.asarray(u, dtype=np.uint32).view(np.float32).astype(np.float64))


def _f32_nan(u):
    u = np.asarray(u, dtype=np.uint32).astype(np.uint64)
    return ((u >> np.uint64(31)) << np.uint64(63)) | np.uint64(0x7FF8 << 48) | ((u & np.uint64(0x7FFFFF)) << np.uint64(29))


def _f16_inputs(rng, n):
    return [rng.integers(0, 1 << 16, n, dtype=np.uint64).astype(np.uint16)]


def _f16_from(u):
    return R.b(np.asarray(u, dtype=np.uint16).view(np.float16).astype(np.float64))


def _f16_nan(u):
    u = np.asarray(u, dtype=np.uint16).astype(np.uint64)
    return ((u >> np.uint64(15)) << np.uint64(63)) | np.uint64(0x7FF << 52) | ((u & np.uint64(0x3FF)) << np.uint64(42))


def _to_f32(x):
    with np.errstate(all="ignore"):
        return f(x).astype(np.float32).view(np.uint32)


def _to_f16(x):
    with np.errstate(all="ignore"):
        return f(x).astype(np.float16).view(np.uint16)


def _truth(x):
    return (f(x) != 0) | np.isnan(f(x))


_first = R.nan_first
_binary = _mix(_pairs)

CASES: dict[str, Case] = {c.name: c for c in [
    Case("nm_f64_from_bits", _one(V.values), lambda x: x, None, float_result=False),
    Case("nm_f64_to_bits", _values, lambda x: x, None, float_result=False),
    Case("nm_f64_from_words", lambda rng, n: [V.values(rng, n) & np.uint64(0xFFFFFFFF), V.values(rng, n) >> np.uint64(32)],
         lambda lo, hi: (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64), None, float_result=False),
    Case("nm_f64_lo_word", _values, lambda x: (x & np.uint64(0xFFFFFFFF)).astype(np.uint32), None, float_result=False),
    Case("nm_f64_hi_word", _values, lambda x: (x >> np.uint64(32)).astype(np.uint32), None, float_result=False),
    Case("nm_f64_isnan", _values, lambda x: np.isnan(f(x)), None, float_result=False),
    Case("nm_f64_isinf", _values, lambda x: np.isinf(f(x)), None, float_result=False),
    Case("nm_f64_isfinite", _values, lambda x: np.isfinite(f(x)), None, float_result=False),
    Case("nm_f64_signbit", _values, lambda x: np.signbit(f(x)), None, float_result=False),
    Case("nm_f64_truth", _values, _truth, None, float_result=False),
    Case("nm_f64_neg", _values, _np1(np.negative), lambda x: x ^ R.SIGN),
    Case("nm_f64_abs", _values, _np1(np.abs), lambda x: x & R.ABS),
    Case("nm_f64_copysign", _binary, _np2(np.copysign), lambda x, y: (x & R.ABS) | (y & R.SIGN)),
    Case("nm_f64_add", _mix(_pairs, (V.add_ties, 4, ALL)), _np2(np.add), _first),
    Case("nm_f64_sub", _mix(_pairs, (V.add_ties, 4, ALL)), _np2(np.subtract), _first),
    Case("nm_f64_mul", _mix(_pairs, (V.mul_ties, 4, ALL)), _np2(np.multiply), _first),
    Case("nm_f64_div", _mix(_pairs, (V.mul_ties, 4, ALL), (V.div_near_ties, 8, 4096)),
         _np2(np.divide), _first),
    Case("nm_f64_sqrt", _mix(_values, (_one(V.sqrt_near_ties), 8, 4096)),
         _np1(np.sqrt), _first),
    Case("nm_f64_fma", lambda rng, n: list(V.fma_triples(rng, n)), R.fma_libm, _first),
    Case("nm_f64_eq", _binary, _cmp(np.equal), None, float_result=False),
    Case("nm_f64_ne", _binary, _cmp(np.not_equal), None, float_result=False),
    Case("nm_f64_lt", _binary, _cmp(np.less), None, float_result=False),
    Case("nm_f64_le", _binary, _cmp(np.less_equal), None, float_result=False),
    Case("nm_f64_gt", _binary, _cmp(np.greater), None, float_result=False),
    Case("nm_f64_ge", _binary, _cmp(np.greater_equal), None, float_result=False),
    Case("nm_f64_py_min", _binary, R.py_min, R.py_min),
    Case("nm_f64_py_max", _binary, R.py_max, R.py_max),
    Case("nm_f64_np_minimum", _binary, _np2(np.minimum), R.np_minimum_model),
    Case("nm_f64_np_maximum", _binary, _np2(np.maximum), R.np_maximum_model),
    Case("nm_f64_np_fmin", _binary, _fminmax(np.fmin, R.np_fmin_model), R.np_fmin_model),
    Case("nm_f64_np_fmax", _binary, _fminmax(np.fmax, R.np_fmax_model), R.np_fmax_model),
    Case("nm_f64_from_i8", _from_int(np.int8), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_u8", _from_int(np.uint8), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_i16", _from_int(np.int16), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_u16", _from_int(np.uint16), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_i32", _from_int(np.int32), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_u32", _from_int(np.uint32), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_i64", _from_int(np.int64), lambda v: R.b(v.astype(np.float64)), None),
    Case("nm_f64_from_u64", _from_int(np.uint64), lambda v: R.b(v.astype(np.float64)), None),
] + [
    Case(f"nm_f64_to_{dt[0] if dt[0] == 'u' else 'i'}{dt.split('int')[1]}",
         _mix(_values, (_one(V.near_integers), 4, ALL), (_one(V.int_boundaries), 4, ALL)),
         _to_int(dt), None, float_result=False)
    for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
] + [
    Case("nm_f64_from_f32", _f32_inputs, _f32_from, _f32_nan),
    Case("nm_f64_to_f32", _mix(_values, (lambda rng, n: [V.narrow_ties(rng, n, 23, -126, 127)], 2, ALL)),
         _to_f32, R.f32_nan_model),
    Case("nm_f64_from_f16", _f16_inputs, _f16_from, _f16_nan),
    Case("nm_f64_to_f16", _mix(_values, (lambda rng, n: [V.narrow_ties(rng, n, 10, -14, 15)], 2, ALL)),
         _to_f16, R.f16_nan_model),
    Case("nm_f64_floor", _mix(_values, (_one(V.near_integers), 2, ALL)), _np1(np.floor), _first),
    Case("nm_f64_ceil", _mix(_values, (_one(V.near_integers), 2, ALL)), _np1(np.ceil), _first),
    Case("nm_f64_trunc", _mix(_values, (_one(V.near_integers), 2, ALL)), _np1(np.trunc), _first),
    Case("nm_f64_rint", _mix(_values, (_one(V.near_integers), 2, ALL)), _np1(np.rint), _first),
    Case("nm_f64_fmod", _binary, _np2(np.fmod), _first),
    Case("nm_f64_pymod", _binary, _np2(np.remainder), _first),
    Case("nm_f64_floordiv", _binary, _np2(np.floor_divide), _first),
    Case("nm_f64_divmod", _binary, _divmod, lambda a, b: (_first(a, b), _first(a, b))),
    Case("nm_f64_frexp", _values, _frexp, lambda x: (x, None)),
    Case("nm_f64_ldexp", _ldexp_inputs, _ldexp, lambda x, k: x, numpy_payloads=False),
    Case("nm_f64_nextafter", _binary, _np2(np.nextafter), _first),
]}

#: The SIMD-group reductions and scans combine the lanes of a SIMD group, not one element's operands: they
#: are tested in kernels (test_f64_compiler.py::test_simd_reductions_and_scans_of_float64_...).
CROSS_LANE = {fn.name for fn in FUNCTIONS if fn.section == "f64_simd"}
assert set(CASES) == {fn.name for fn in FUNCTIONS} - CROSS_LANE, set(CASES) ^ ({fn.name for fn in FUNCTIONS} - CROSS_LANE)
_PARAMS = {fn.name: fn.params for fn in FUNCTIONS}


def count(name: str) -> int:
    if LONG:
        return LONG_COUNT
    return CI_BASIC if name in BASIC else CI_OTHER


def check(lib, case: Case, inputs) -> int:
    """Runs one batch of `case` and compares it; returns the number of vectors checked."""
    got = lib.call(case.name, *inputs)
    expected = case.expected(*inputs)
    nan = case.nan(*inputs) if case.nan is not None else None
    if isinstance(expected, tuple):
        for k, (g, e) in enumerate(zip(got, expected)):
            model = nan[k] if nan is not None else None
            R.compare(f"{case.name}[{k}]", g, e, inputs, model, float_result=g.dtype == np.uint64,
                      numpy_payloads=case.numpy_payloads)
    else:
        R.compare(case.name, got, expected, inputs, nan, case.float_result, case.numpy_payloads)
    return len(inputs[0])


def run(lib, case: Case, seed: int, n: int, batch: int = BATCH) -> int:
    """Checks n generated vectors of `case` in batches; returns the number checked."""
    done = 0
    k = 0
    while done < n:
        m = min(batch, n - done)
        rng = np.random.default_rng([seed, k])
        done += check(lib, case, case.make(rng, m))
        k += 1
    return done


# --------------------------------------------------------------------------------------------------
# The edge table applied to each entry point: every pair (triple for fma) of edge values.

def edge_inputs(name: str):
    params = _PARAMS[name]
    e = V.edge_values()
    if name == "nm_f64_fma":
        s = V.edge_values_small()
        return [g.ravel() for g in np.meshgrid(s, s, s, indexing="ij")]
    if params == ("nm_f64", "nm_f64"):
        return [g.ravel() for g in np.meshgrid(e, e, indexing="ij")]
    if params == ("nm_f64",):
        return [e]
    if params == ("nm_f64", "int"):
        ks = np.array([-2200, -1100, -1075, -1074, -1023, -1022, -53, -52, -1, 0, 1, 52, 53, 1023, 1024, 2046, 2200],
                      dtype=np.int32)
        return [g.ravel() for g in np.meshgrid(e, ks, indexing="ij")]
    if params == ("float",):
        table = [0, 1, 0x7FFFFF, 0x800000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x3F800000]
        t = np.array(table, dtype=np.uint32)
        return [np.concatenate([t, t | np.uint32(1 << 31)])]
    if params == ("half",):
        return [np.arange(1 << 16, dtype=np.uint16)]       # every float16
    if params == ("uint", "uint"):
        w = np.array([0, 1, 0x7FF00000, 0x7FF80000, 0x80000000, 0xFFFFFFFF], dtype=np.uint32)
        return [g.ravel() for g in np.meshgrid(w, w, indexing="ij")]
    if name == "nm_f64_from_bits":
        return [e]
    dtype = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
             "uint": np.uint32, "long": np.int64, "ulong": np.uint64}[params[0]]
    info = np.iinfo(dtype)
    vals = {info.min, info.min + 1, -1 if info.min < 0 else 2, 0, 1, info.max - 1, info.max}
    if info.bits == 64:
        vals |= {(1 << 53) + 1, (1 << 53) + 2, (1 << 53) + 3, (1 << 54) + 2, (1 << 62) + (1 << 9),
                 (1 << 62) + (1 << 9) + 1, (1 << 62) + (3 << 9)}
        if info.min < 0:
            vals |= {-(1 << 53) - 1, -(1 << 62) - (1 << 9)}
    return [np.array(sorted(vals), dtype=dtype)]
