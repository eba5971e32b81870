"""float64 test vectors as uint64 bit patterns: every class (zeros, subnormals, normals near the
underflow and overflow thresholds, halfway and near-halfway rounding cases, NaN payloads, infinities),
a TestFloat-style table of edge values, and per-operation generators that make the hard cases
(cancellation, ties, exact quotients and roots) frequent rather than rare.

Generators take a numpy Generator and a count and return uint64 arrays; they are deterministic in the
seed, so a failure is reproduced by its seed.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
SIGN = U64(1 << 63)
FRAC = U64((1 << 52) - 1)


def pack(sign, exp, frac) -> np.ndarray:
    sign = np.asarray(sign, dtype=np.uint64)
    exp = np.asarray(exp, dtype=np.uint64)
    frac = np.asarray(frac, dtype=np.uint64)
    return (sign << U64(63)) | ((exp & U64(0x7FF)) << U64(52)) | (frac & FRAC)


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.uint64)


def floats(b) -> np.ndarray:
    return np.asarray(b, dtype=np.uint64).view(np.float64)


# --------------------------------------------------------------------------------------------------
# The edge table (TestFloat's idea: every exponent boundary times every significand boundary).

_EDGE_EXPONENTS = (0, 1, 2, 0x3FD, 0x3FE, 0x3FF, 0x400, 0x401, 0x433, 0x434, 0x43E, 0x43F, 0x7FD, 0x7FE)
_EDGE_FRACTIONS = (0, 1, 2, 3, (1 << 51) - 1, 1 << 51, (1 << 51) + 1, (1 << 52) - 2, (1 << 52) - 1,
                   0x5555555555555, 0xAAAAAAAAAAAAA)
_NAN_FRACTIONS = (1, 2, 0x123, (1 << 50) + 7, 1 << 51, (1 << 51) + 1, (1 << 51) | 0xABCDE, (1 << 52) - 1)


def edge_values() -> np.ndarray:
    """Zeros, subnormals, boundaries of every exponent range, infinities and NaNs (quiet and
    signalling, several payloads), both signs."""
    vals = []
    for e in _EDGE_EXPONENTS:
        for f in _EDGE_FRACTIONS:
            vals.append((e << 52) | f)
    vals += [0x7FF << 52] + [(0x7FF << 52) | f for f in _NAN_FRACTIONS]
    pos = np.array(sorted(set(vals)), dtype=np.uint64)
    return np.concatenate([pos, pos | SIGN])


def edge_values_small() -> np.ndarray:
    """A smaller edge table for triples (fma)."""
    vals = []
    for e in (0, 1, 0x3FE, 0x3FF, 0x400, 0x433, 0x7FE):
        for f in (0, 1, (1 << 51), (1 << 52) - 1):
            vals.append((e << 52) | f)
    vals += [0x7FF << 52, (0x7FF << 52) | 1, (0x7FF << 52) | (1 << 51) | 5]
    pos = np.array(sorted(set(vals)), dtype=np.uint64)
    return np.concatenate([pos, pos | SIGN])


# --------------------------------------------------------------------------------------------------
# Values of every class.

def _interesting_exponents(rng, n):
    picks = np.array([0, 0, 1, 2, 3, 52, 53, 54, 0x3FD, 0x3FE, 0x3FF, 0x400, 0x401, 0x432, 0x433, 0x434,
                      0x43D, 0x43E, 0x43F, 0x440, 0x7FC, 0x7FD, 0x7FE, 0x7FE, 0x7FF], dtype=np.uint64)
    return picks[rng.integers(0, len(picks), n)]


def _bits_below(rng, n):
    """2^k for random k in [0, 52)."""
    return U64(1) << rng.integers(0, 52, n).astype(np.uint64)


def _fractions(rng, n):
    """Random fractions mixed with structured ones: zero, all ones, single bits, short significands
    (exact products), long runs of ones or zeros below a random point (ties and carries)."""
    out = rng.integers(0, 1 << 52, n, dtype=np.uint64)
    kind = rng.integers(0, 8, n, dtype=np.uint8)
    out[kind == 0] = 0
    out[kind == 1] = FRAC
    m = kind == 2
    out[m] = _bits_below(rng, int(m.sum()))
    m = kind == 3
    out[m] &= ~(_bits_below(rng, int(m.sum())) - U64(1))
    m = kind == 4
    out[m] |= _bits_below(rng, int(m.sum())) - U64(1)
    m = kind == 5
    out[m] = rng.integers(0, 1 << 20, int(m.sum()), dtype=np.uint64) << U64(32)
    return out


def special_values(rng, n) -> np.ndarray:
    """Zeros, infinities, NaNs with random payloads (quiet and signalling), extreme finite values."""
    table = np.array([0, 1, FRAC, 1 << 52, (0x7FE << 52) | FRAC, 0x7FF << 52, 0x3FF << 52], dtype=np.uint64)
    v = table[rng.integers(0, len(table), n)]
    m = rng.random(n) < 0.3
    v[m] = (U64(0x7FF) << U64(52)) | rng.integers(1, 1 << 52, int(m.sum()), dtype=np.uint64)
    return v | (rng.integers(0, 2, n, dtype=np.uint64) << U64(63))


def _signs(rng, n):
    return rng.integers(0, 2, n, dtype=np.uint64)


def values(rng, n) -> np.ndarray:
    """A mix of all classes, weighted towards the ones where arithmetic is hard."""
    kind = rng.integers(0, 10, n, dtype=np.uint8)
    out = rng.integers(0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)   # kind 0: any pattern
    m = (kind == 1) | (kind == 2)                                                        # boundary exponents
    k = int(m.sum())
    out[m] = pack(_signs(rng, k), _interesting_exponents(rng, k), _fractions(rng, k))
    m = (kind >= 3) & (kind <= 5)                                                        # moderate normals
    k = int(m.sum())
    out[m] = pack(_signs(rng, k), (0x3FF + rng.integers(-80, 80, k)).astype(np.uint64), _fractions(rng, k))
    m = kind == 6                                                                        # subnormals
    k = int(m.sum())
    out[m] = pack(_signs(rng, k), 0, _fractions(rng, k) >> rng.integers(0, 52, k).astype(np.uint64))
    m = kind == 7                                                                        # any exponent
    k = int(m.sum())
    out[m] = pack(_signs(rng, k), rng.integers(0, 0x7FF, k), _fractions(rng, k))
    m = kind == 8                                                                        # small integers, halves
    k = int(m.sum())
    out[m] = bits(rng.integers(-(1 << 20), 1 << 20, k).astype(np.float64) / (1 << rng.integers(0, 4, k)))
    m = kind == 9
    out[m] = special_values(rng, int(m.sum()))
    return out


def neighbours(rng, x) -> np.ndarray:
    """x moved by a few units in the last place, or scaled by a power of two, or negated: operands
    that cancel, tie or line up with x."""
    n = len(x)
    kind = rng.integers(0, 4, n, dtype=np.uint8)
    out = (x.view(np.int64) + rng.integers(-3, 4, n)).view(np.uint64)      # kinds 0 and 3: moved
    m = kind == 1                                                           # scaled
    k = int(m.sum())
    exp = ((x[m] >> U64(52)) & U64(0x7FF)).astype(np.int64) + rng.integers(-60, 61, k)
    out[m] = (x[m] & ~(U64(0x7FF) << U64(52))) | (np.clip(exp, 1, 0x7FE).astype(np.uint64) << U64(52))
    m = kind == 2
    out[m] = x[m]
    out[kind >= 2] ^= SIGN                                                  # negated
    return out


def pairs(rng, n):
    """Operand pairs: independent values half of the time, related values (neighbours, cancellation,
    alignment within the significand) the other half."""
    a = values(rng, n)
    b = values(rng, n)
    related = rng.random(n) < 0.5
    b = np.where(related, neighbours(rng, a), b)
    swap = rng.random(n) < 0.5
    return np.where(swap, b, a), np.where(swap, a, b)


# --------------------------------------------------------------------------------------------------
# Hard rounding cases by construction.

def add_ties(rng, n):
    """a + b where b is half an ulp of a (times 1, or a little more or less): ties and near-ties."""
    a = pack(rng.integers(0, 2, n), rng.integers(54, 0x7FE, n), _fractions(rng, n))
    exp_a = ((a >> U64(52)) & U64(0x7FF)).astype(np.int64)
    exp_b = np.maximum(exp_a - 53 - rng.integers(0, 2, n), 0)
    frac_b = np.where(rng.random(n) < 0.5, U64(0), rng.integers(0, 4, n, dtype=np.uint64))
    sign_b = rng.integers(0, 2, n)
    b = pack(sign_b, exp_b, frac_b)
    return a, b


def mul_ties(rng, n):
    """Products of two 27-bit odd integers (scaled): 53- or 54-bit exact products, i.e. exact results
    and exact ties; occasionally scaled into the subnormal or overflow range."""
    ia = (rng.integers(1 << 25, 1 << 27, n) | 1).astype(np.float64)
    ib = (rng.integers(1 << 25, 1 << 27, n) | 1).astype(np.float64)
    ea = rng.integers(-540, 500, n)
    eb = rng.integers(-540, 500, n)
    extreme = rng.random(n) < 0.2
    ea = np.where(extreme, rng.integers(-1074, 960, n), ea)
    eb = np.where(extreme, rng.integers(-1074, 960, n) - ea // 2, eb)
    with np.errstate(all="ignore"):
        a = np.ldexp(ia, ea - 26)
        b = np.ldexp(ib, eb - 26)
    sign = rng.integers(0, 2, (2, n)).astype(np.uint64) << U64(63)
    return bits(a) ^ sign[0], bits(b) ^ sign[1]


def div_near_ties(rng, n):
    """a / b whose exact quotient lies within a tiny distance of a rounding boundary: a is q b rounded,
    q a 54-bit odd integer (a midpoint of two doubles) or a 53-bit one (a double)."""
    out_a = np.empty(n, dtype=np.uint64)
    out_b = np.empty(n, dtype=np.uint64)
    seeds = rng.integers(0, 1 << 62, (n, 3))
    for k in range(n):
        s0, s1, s2 = (int(v) for v in seeds[k])
        b = (1 << 52) | (s0 & ((1 << 52) - 1))
        width = 54 if s2 & 1 else 53
        q = (1 << (width - 1)) | (s1 & ((1 << (width - 1)) - 1)) | 1
        prod = q * b
        shift = prod.bit_length() - 53
        a = (prod + (1 << (shift - 1))) >> shift          # round to 53 bits, half up
        if a >> 53:
            a >>= 1
            shift += 1
        ea = 0x3FF + (s2 >> 8) % 64 - 32
        eb = 0x3FF + (s2 >> 16) % 64 - 32
        out_a[k] = ((s2 >> 30) & 1) << 63 | ea << 52 | (a & ((1 << 52) - 1))
        out_b[k] = ((s2 >> 31) & 1) << 63 | eb << 52 | (b & ((1 << 52) - 1))
    return out_a, out_b


def sqrt_near_ties(rng, n):
    """x whose square root lies very close to a rounding boundary (a midpoint or a double), and exact
    squares; both exponent parities, some subnormal."""
    out = np.empty(n, dtype=np.uint64)
    seeds = rng.integers(0, 1 << 62, (n, 2))
    for k in range(n):
        s0, s1 = (int(v) for v in seeds[k])
        kind = s1 % 3
        if kind == 0:                      # exact square of a 26-bit integer
            r = (1 << 25) | (s0 & ((1 << 25) - 1))
            m = r * r
        else:                              # r a midpoint (54-bit odd) or a double (53-bit): x = r^2 rounded
            width = 54 if kind == 1 else 53
            r = (1 << (width - 1)) | (s0 & ((1 << (width - 1)) - 1)) | 1
            m = r * r
        shift = m.bit_length() - 53
        frac = ((m + (1 << (shift - 1))) >> shift) if shift > 0 else m << -shift
        if frac >> 53:
            frac >>= 1
        exp = 1 + (s1 >> 4) % 0x7FD
        out[k] = exp << 52 | (frac & ((1 << 52) - 1))
    sub = rng.random(n) < 0.05
    out[sub] = (out[sub] & FRAC) >> rng.integers(0, 52, int(sub.sum())).astype(np.uint64)
    return out


def fma_triples(rng, n):
    """a, b, c with c independent, or c close to -(a b) (massive cancellation), or c far below or
    above a b (sticky bits, c dominating)."""
    a, b = pairs(rng, n)
    c = values(rng, n)
    kind = rng.integers(0, 4, n)
    with np.errstate(all="ignore"):
        p = floats(a) * floats(b)
    near = neighbours(rng, bits(-p))
    with np.errstate(all="ignore"):
        tiny = bits(floats(c) * 2.0 ** -80)
    c = np.where(kind == 1, near, np.where(kind == 2, bits(-p), np.where(kind == 3, tiny, c)))
    return a, b, c


def near_integers(rng, n):
    """Integers, half-integers and their neighbours (a few ulps away), over the whole range where
    rounding to an integer is not trivial (|x| < 2^53), both signs: floor/ceil/trunc/rint and
    float -> int boundaries."""
    k = np.floor(np.ldexp(rng.random(n), rng.integers(0, 54, n)))
    half = rng.random(n) < 0.5
    x = np.where(half, k + 0.5, k)
    x = np.where(x >= 2.0 ** 53, k, x)
    step = rng.integers(-2, 3, n).astype(np.int64)
    out = (bits(x).view(np.int64) + np.where(x == 0, 0, step)).view(np.uint64)
    return out | (rng.integers(0, 2, n).astype(np.uint64) << U64(63))


def int_boundaries(rng, n):
    """Values around every integer type's range limits: +-2^k and their neighbours (k = 7, 8, 15, 16,
    31, 32, 63, 64) and out-of-range magnitudes, both signs."""
    k = np.array([7, 8, 15, 16, 31, 32, 63, 64, 65, 100, 1023], dtype=np.int64)[rng.integers(0, 11, n)]
    x = np.ldexp(1.0, k)
    step = rng.integers(-3, 4, n).astype(np.int64)
    out = (bits(x).view(np.int64) + step).view(np.uint64)
    return out | (rng.integers(0, 2, n).astype(np.uint64) << U64(63))


def narrow_ties(rng, n, frac_bits, min_exp, max_exp):
    """float64 values at, next to and between rounding boundaries of a narrower format (frac_bits
    fraction bits, normal exponents min_exp..max_exp unbiased), its subnormal range, and its overflow
    threshold."""
    drop = 52 - frac_bits
    exp = rng.integers(min_exp - frac_bits - 3, max_exp + 2, n) + 0x3FF
    keep = rng.integers(0, 1 << frac_bits, n, dtype=np.uint64) << U64(drop)
    tail = np.array([0, 1, (1 << (drop - 1)) - 1, 1 << (drop - 1), (1 << (drop - 1)) + 1, (1 << drop) - 1],
                    dtype=np.uint64)[rng.integers(0, 6, n)]
    frac = keep | tail
    return pack(rng.integers(0, 2, n), np.clip(exp, 1, 0x7FE), frac)


def int_values(rng, n, dtype):
    """Integers of a type: uniform, small, near the limits, and (64-bit) values whose rounding to
    float64 is a tie or a near-tie."""
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    kind = rng.integers(0, 4, n)
    small = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)
    v = np.where(kind == 1, small, v)
    edges = np.array([info.min, info.min + 1, info.max, info.max - 1, 0, 1], dtype=dtype)
    v = np.where(kind == 2, edges[rng.integers(0, 6, n)], v)
    if info.bits == 64:
        # 54..64 significant bits ending in a tie pattern 100..0 (or a neighbour) below bit 53.
        width = rng.integers(54, 64 if info.min < 0 else 65, n)
        top = rng.integers(1 << 52, 1 << 53, n, dtype=np.uint64)
        drop = (width - 53).astype(np.uint64)
        tie = (top << drop) | (U64(1) << (drop - U64(1)))
        tie = tie + rng.integers(-1, 2, n).astype(np.int64).view(np.uint64)
        tie = tie.astype(dtype) if info.min >= 0 else (tie & U64((1 << 63) - 1)).view(np.int64)
        if info.min < 0:
            tie = np.where(rng.random(n) < 0.5, -tie, tie)
        v = np.where(kind == 3, tie.astype(dtype), v)
    return v.astype(dtype)
