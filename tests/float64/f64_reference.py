"""Reference results for float64.metal's entry points, and the comparison the tests apply.

The reference is NumPy's float64 on the CPU (IEEE hardware arithmetic) wherever NumPy defines the
result, glibc's correctly rounded fma for fma (cross-checked against exact rational arithmetic), and a
model of the documented rule where NumPy's own answer is platform-dependent: NaN payloads, float to
integer conversion out of range (Numba's njit on Apple silicon), signed zeros in np.minimum and
friends. `compare` demands identical bits for every non-NaN result, NaN where NumPy gives NaN with
exactly the documented payload, and, on x86-64 hosts (whose NumPy follows the same payload rules),
NumPy's exact bits everywhere but where two operands are NaN.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from fractions import Fraction

import numpy as np

U64 = np.uint64
SIGN = U64(1 << 63)
ABS = U64((1 << 63) - 1)
EXP = U64(0x7FF << 52)
QUIET = U64(1 << 51)
DEFAULT_NAN = U64(0xFFF8000000000000)
X86 = platform.machine().lower() in ("x86_64", "amd64")


def f(b):
    return np.asarray(b, dtype=np.uint64).view(np.float64)


def b(x):
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64)).view(np.uint64)


def isnan(u):
    return (np.asarray(u, dtype=np.uint64) & ABS) > EXP


# Bit-pattern dtype of a float result -> (magnitude mask, infinity's pattern).
_FORMATS = {np.dtype(np.uint64): (int(ABS), int(EXP)), np.dtype(np.uint32): (0x7FFFFFFF, 0x7F800000),
            np.dtype(np.uint16): (0x7FFF, 0x7C00)}


def isnan_pattern(u):
    u = np.asarray(u)
    mag, inf = _FORMATS[u.dtype]
    return (u & u.dtype.type(mag)) > u.dtype.type(inf)


# --------------------------------------------------------------------------------------------------
# NaN payload rules (float64.metal's header).

def nan_first(*operands):
    """First NaN operand, quieted; the default NaN when no operand is NaN (an invalid operation)."""
    out = np.full(len(operands[0]), DEFAULT_NAN, dtype=np.uint64)
    for u in reversed(operands):
        out = np.where(isnan(u), u | QUIET, out)
    return out


# --------------------------------------------------------------------------------------------------
# Reference results.

def _np(op, *args):
    with np.errstate(all="ignore"):
        return b(op(*[f(a) for a in args]))


_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_libm.fma.restype = ctypes.c_double
_libm.fma.argtypes = (ctypes.c_double, ctypes.c_double, ctypes.c_double)


def fma_libm(a, b_, c):
    fa, fb, fc = f(a).tolist(), f(b_).tolist(), f(c).tolist()
    fn = _libm.fma
    return b(np.array([fn(x, y, z) for x, y, z in zip(fa, fb, fc)], dtype=np.float64))


def fma_exact(x: float, y: float, z: float) -> float:
    """fma by exact rational arithmetic, rounded once to nearest even by Python's float(Fraction)
    (correctly rounded). Finite non-NaN operands and a nonzero exact result only."""
    return float(Fraction(x) * Fraction(y) + Fraction(z))


def to_int_aarch64(x_bits, dtype):
    """Numba's njit conversion float64 -> dtype on Apple silicon: fcvtzs/fcvtzu saturate and give 0
    for NaN; 8- and 16-bit targets take the low bits of the saturated int32 (LLVM promotes them)."""
    x = f(x_bits)
    t = np.trunc(np.where(np.isnan(x), 0.0, x))
    dt = np.dtype(dtype)
    if dt.itemsize < 4:
        wide = _saturate(t, np.int32)
        return wide.astype(dt)     # low bits
    return _saturate(t, dt)


def _saturate(t, dtype):
    info = np.iinfo(dtype)
    lo, hi = float(info.min), float(info.max)
    # info.max of a 64-bit type is not a float64; 2^63 / 2^64 are the first values out of range.
    top = 2.0 ** (info.bits - (1 if info.min < 0 else 0))
    with np.errstate(invalid="ignore"):
        inside = (t >= lo) & (t < top)
        out = np.where(inside, t, 0.0).astype(dtype)
    out = np.where(t >= top, info.max, out)
    out = np.where(t < lo, info.min, out)
    return out.astype(dtype)


def py_min(a, b_):
    """Python's min(a, b) as Numba computes it: b if b < a else a."""
    return np.where(f(b_) < f(a), b_, a)


def py_max(a, b_):
    return np.where(f(b_) > f(a), b_, a)


def np_minimum_model(a, b_):
    """np.minimum as NumPy computes it on x86: a if a < b or a is NaN, else b."""
    return np.where((f(a) < f(b_)) | isnan(a), a, b_)


def np_maximum_model(a, b_):
    return np.where((f(a) > f(b_)) | isnan(a), a, b_)


def np_fmin_model(a, b_):
    """np.fmin as NumPy's array loop computes it on x86: a if a < b or b is NaN, else b."""
    return np.where((f(a) < f(b_)) | isnan(b_), a, b_)


def np_fmax_model(a, b_):
    return np.where((f(a) > f(b_)) | isnan(b_), a, b_)


def f32_nan_model(x_bits):
    """float64 NaN -> float32: sign, quiet bit, top 22 payload bits (x86 cvtsd2ss)."""
    x = np.asarray(x_bits, dtype=np.uint64)
    return (((x >> U64(32)) & U64(0x80000000)) | U64(0x7FC00000) | ((x & U64((1 << 52) - 1)) >> U64(29))
            ).astype(np.uint32)


def f16_nan_model(x_bits):
    """float64 NaN -> float16 as NumPy converts: payload's top 10 bits kept as they are, 1 if zero."""
    x = np.asarray(x_bits, dtype=np.uint64)
    payload = ((x & U64((1 << 52) - 1)) >> U64(42)).astype(np.uint16)
    payload = np.where(payload == 0, np.uint16(1), payload)
    return (((x >> U64(48)) & U64(0x8000)).astype(np.uint16) | np.uint16(0x7C00) | payload).astype(np.uint16)


# --------------------------------------------------------------------------------------------------
# Comparison.

def _fmt(v):
    v = np.asarray(v)
    if v.dtype == np.uint64:
        return f"0x{int(v):016x} ({float(v.view(np.float64))!r})"
    return repr(v.item())


def compare(name, got, expected, inputs, nan_model=None, float_result=True, numpy_payloads=True):
    """Asserts `got` equals `expected` bit for bit, NaN results aside: where `expected` is NaN, `got` must
    be a NaN equal to `nan_model` (the documented payload); on x86-64 hosts also equal to `expected`
    unless two operands are NaN or `numpy_payloads` is false (an operation where Numba's payload
    differs from NumPy's and the library follows Numba)."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (name, got.shape, expected.shape)
    if float_result:
        exp_nan = isnan_pattern(expected)
        ok = np.where(exp_nan, isnan_pattern(got), got == expected)
        if nan_model is not None:
            ok &= np.where(exp_nan, got == np.asarray(nan_model, dtype=got.dtype), True)
        if X86 and numpy_payloads:
            # Which of two NaN operands NumPy returns depends on the operand order its compiled loop
            # happens to use (commutative operations get swapped): only the documented model applies.
            nans = sum(isnan(a).astype(np.int64) for a in inputs if np.asarray(a).dtype == np.uint64)
            ok &= (got == expected) | (np.asarray(nans) >= 2)
    else:
        ok = got == expected
    bad = np.flatnonzero(~ok)
    if len(bad):
        lines = [f"{name}: {len(bad)} of {len(got)} results differ; first ones:"]
        for i in bad[:8]:
            ins = ", ".join(_fmt(a[i]) for a in inputs)
            lines.append(f"  {name}({ins}) = {_fmt(got[i])}, expected {_fmt(expected[i])}")
        raise AssertionError("\n".join(lines))
    return len(got)
