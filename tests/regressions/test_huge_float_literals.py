"""Regression: a Python float literal beyond float32's range (``1e39``, ``1e308``, or just above
FLT_MAX) crashed code generation with ``OverflowError: float too large to pack with f format``.
As float32 values they are +-inf (or FLT_MAX, for literals that round down to it). Found by the
compiler fuzzer (tests/robustness/test_compiler_fuzz.py, seed 7000038)."""

import math

import numpy as np

from numba_metal import metal

FLT_MAX = float(np.finfo(np.float32).max)


@metal.jit
def literals(out):
    out[0] = 1e39
    out[1] = -1e308
    out[2] = 3.4028235e38      # above FLT_MAX, rounds down to it
    out[3] = 3.40282357e38     # rounds up to infinity
    out[4] = 1e38


def test_float_literals_outside_float32_range_round_like_float32():
    out = np.zeros(5, np.float32)
    literals[1, 1](out)
    assert out[0] == math.inf and out[1] == -math.inf
    assert out[2] == FLT_MAX and out[3] == math.inf
    assert out[4] == np.float32(1e38)
