"""The error budgets behind float64.metal's division, square root and fmod: the 32-bit seeds (sampled
here; tools/float64_long_run.py checks every input), the 64-bit reciprocal, and the quotient and root estimates that
the exact remainder corrects (at most one unit off)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import f64_bounds as B
import f64_suite as S

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import float64_long_run as long_run  # noqa: E402  (the long run's exhaustive checks, in tools/)


def _normalized(rng, n):
    """Significands in [2^52, 2^53) with the boundary ones included."""
    s = rng.integers(1 << 52, 1 << 53, n, dtype=np.uint64)
    s[:6] = [1 << 52, (1 << 52) + 1, (1 << 53) - 1, (1 << 53) - 2, 3 << 51, (1 << 52) | 0x5555555555555]
    return s


def test_reciprocal_seed_bound_on_a_sample(f64lib):
    rng = np.random.default_rng(1)
    starts = [1 << 31, (1 << 32) - (1 << 16)] + (rng.integers(1 << 15, 1 << 16, 30) << 16).tolist()
    for start in starts:
        y0 = f64lib.probe("recip32", n=1 << 16, start=int(start))
        B.check_recip32(np.arange(start, start + (1 << 16), dtype=np.uint64), y0)


def test_square_root_seed_bound_on_a_sample(f64lib):
    rng = np.random.default_rng(2)
    starts = [1 << 30, (1 << 31) - (1 << 16), 1 << 31, (1 << 32) - (1 << 16)]
    starts += (rng.integers(1 << 14, 1 << 16, 60) << 16).tolist()
    for start in starts:
        r, s = f64lib.probe("rsqrt_seed", n=1 << 16, start=int(start))
        B.check_rsqrt(np.arange(start, start + (1 << 16), dtype=np.uint64), r, s)


def test_reciprocal_is_within_87_below_two_to_the_116_over_b(f64lib):
    b = _normalized(np.random.default_rng(3), 1 << 15)
    B.check_recip(b, f64lib.probe("recip", b))


def test_division_estimate_is_at_most_one_short(f64lib):
    rng = np.random.default_rng(4)
    b = _normalized(rng, 1 << 15)
    a = _normalized(rng, 1 << 15)
    a = np.where(a < b, a << np.uint64(1), a)      # a in [b, 2b), as nm_f64_div arranges
    q = f64lib.probe("div_estimate", a, b)
    B.check_div_estimate(a, b, q)


def test_square_root_estimate_is_within_one(f64lib):
    rng = np.random.default_rng(5)
    sig = _normalized(rng, 1 << 15)
    odd = rng.integers(0, 2, 1 << 15).astype(np.uint64)
    root = f64lib.probe("sqrt_estimate", sig, odd)
    B.check_sqrt_estimate(sig, odd, root)


@pytest.mark.skipif(not S.LONG, reason="every input: the long profile (NUMBA_METAL_LONG_TESTS=1)")
def test_reciprocal_seed_bound_for_every_input(f64lib):
    assert long_run.exhaustive_recip32(f64lib)["inputs"] == 1 << 31


@pytest.mark.skipif(not S.LONG, reason="every input: the long profile (NUMBA_METAL_LONG_TESTS=1)")
def test_square_root_seed_bound_for_every_input(f64lib):
    assert long_run.exhaustive_rsqrt(f64lib)["inputs"] == 3 << 30
