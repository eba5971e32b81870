"""The error budgets float64.metal's division and square root rely on, checked exactly.

`recip32` and `rsqrt_seed` depend only on a 32-bit input, so checking them for every input (the long
run does, tools/float64_long_run.py) proves their bounds; the CI tests check samples. The quotient and
root estimates built on them are checked against exact integer arithmetic on random operands.
"""

from __future__ import annotations

import math

import numpy as np

U64 = np.uint64

# 2^63/D - y0 (D = bh + 1) must lie in [0, 29/8]: float64.metal's division budget uses 3.625.
RECIP32_SLACK = 3.625
# sqrt budget: s never above sqrt(mh) 2^16; short of sqrt(mh + 1) 2^16 by a relative eta <= 2^-28;
# |r sqrt(m) - 1| <= 2^-29.5 for r/2^32 ~ 1/sqrt(m), m = mh / 2^30.
RSQRT_ETA_LOG2 = -28
RSQRT_ERR_LOG2 = -29.5


def check_recip32(bh, y0):
    """Asserts the reciprocal seed's bound for every bh given; returns (min, max) of 2^63/D - y0."""
    bh = np.asarray(bh, dtype=np.uint64)
    y0 = np.asarray(y0, dtype=np.uint32).astype(np.uint64)
    d = bh + U64(1)
    p = y0 * d                                            # < 2^64: y0 < 2^32, D <= 2^32
    over = p > U64(1 << 63)
    assert not over.any(), f"recip32 above 2^63/D for bh = {[hex(int(v)) for v in bh[over][:4]]}"
    slack = U64(1 << 63) - p
    ratio = slack.astype(np.float64) / d.astype(np.float64)
    small = np.minimum(slack, U64(1 << 40))               # the exact test below cannot overflow
    bad = small * U64(8) > d * U64(29)
    assert not bad.any(), f"recip32 short by more than {RECIP32_SLACK} for bh = {[hex(int(v)) for v in bh[bad][:4]]}"
    return float(ratio.min()), float(ratio.max())


def check_rsqrt(mh, r, s):
    """Asserts the square-root seed's bounds for every mh given; returns (max eta, max |r error|) as
    log2 values."""
    mh = np.asarray(mh, dtype=np.uint64)
    r = np.asarray(r, dtype=np.uint32).astype(np.uint64)
    s = np.asarray(s, dtype=np.uint32).astype(np.uint64)
    s2 = s * s
    over = s2 > (mh << U64(32))
    assert not over.any(), f"rsqrt s above sqrt(mh) 2^16 for mh = {[hex(int(v)) for v in mh[over][:4]]}"
    # (1 - eta)^2 >= 1 - 2 eta: (mh + 1) 2^32 - s^2 <= (mh + 1) 2^(32 + eta_log2 + 1), exact modulo 2^64
    # (the difference is below 2^64)
    short = ((mh + U64(1)) << U64(32)) - s2
    limit = (mh + U64(1)) << U64(32 + RSQRT_ETA_LOG2 + 1)
    bad = short > limit
    assert not bad.any(), f"rsqrt s short by more than 2^{RSQRT_ETA_LOG2} for mh = {[hex(int(v)) for v in mh[bad][:4]]}"
    eta = 1.0 - np.sqrt(s2.astype(np.float64) / ((mh + U64(1)).astype(np.float64) * 2.0 ** 32))
    err = (r.astype(np.float64) / 2.0 ** 32) ** 2 * (mh.astype(np.float64) / 2.0 ** 30) - 1.0
    # (1 + e)^2 - 1 ~ 2e: the float64 evaluation errs by ~2^-50, far below the bound.
    bad = np.abs(err) > 2.0 * 2.0 ** RSQRT_ERR_LOG2
    assert not bad.any(), f"rsqrt r off by more than 2^{RSQRT_ERR_LOG2} for mh = {[hex(int(v)) for v in mh[bad][:4]]}"
    return math.log2(max(float(eta.max()), 2.0 ** -60)), math.log2(max(float(np.abs(err).max()) / 2, 2.0 ** -60))


def check_recip(b, y):
    """2^116/b - 87 < y <= 2^116/b for b in [2^52, 2^53), exactly."""
    for bi, yi in zip(np.asarray(b).tolist(), np.asarray(y).tolist()):
        assert yi * bi <= 1 << 116, f"recip({bi:#x}) = {yi:#x} is above 2^116/b"
        assert (1 << 116) - yi * bi < 87 * bi, f"recip({bi:#x}) = {yi:#x} is 87 or more below 2^116/b"


def check_div_estimate(a, b, q):
    """q in {Q - 1, Q} for Q = floor(a 2^55 / b), exactly; returns how many needed the correction."""
    short = 0
    for ai, bi, qi in zip(np.asarray(a).tolist(), np.asarray(b).tolist(), np.asarray(q).tolist()):
        exact = (ai << 55) // bi
        assert exact - 1 <= qi <= exact, f"div estimate of {ai:#x}/{bi:#x} = {qi:#x}, exact {exact:#x}"
        short += qi < exact
    return short


def check_sqrt_estimate(sig, odd, root):
    """root in {S - 1, S, S + 1} for S = floor(sqrt(sig 2^(58 + odd))), exactly; returns the counts of
    estimates below and above S."""
    below = above = 0
    for si, oi, ri in zip(np.asarray(sig).tolist(), np.asarray(odd).tolist(), np.asarray(root).tolist()):
        exact = math.isqrt(si << (58 + oi))
        assert exact - 1 <= ri <= exact + 1, f"sqrt estimate of {si:#x}<<{58 + oi} = {ri:#x}, exact {exact:#x}"
        below += ri < exact
        above += ri > exact
    return below, above
