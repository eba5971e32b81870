"""literal_unroll over heterogeneous tuples (compiler/unroll.py), as numba.cuda supports it: tuples
built in the kernel, global tuples, tuple arguments; break, continue, for-else, nesting; each iteration
typed with its own item's type. Oracle: the same function run by Python."""

import numpy as np
import pytest
from numba import literal_unroll

from numba_metal import metal

GLOBAL = (3, 1.5, np.float32(2.0), True)


def body(out, t3):
    t = (1, 2.5, np.int8(3))
    acc = 0.0
    for v in literal_unroll(t):
        acc += v
    out[0] = acc
    n = 0
    for v in literal_unroll(GLOBAL):
        n += 1
        out[n] = v * 2
    for w in literal_unroll(t3):
        out[5] += w
    for a in literal_unroll((1, 2)):
        for b in literal_unroll((10.5, np.int16(20))):
            out[6] += a * b
    else:
        out[7] = 9
    total = 0
    for x in literal_unroll((1, 2.0, 3, 4.0, 5)):
        if x == 2:
            continue
        if x > 3:
            break
        total += x
    else:
        total = -1
    out[8] = total


def test_unrolled_loops_match_python():
    kernel = metal.jit(body)
    t3 = (1, np.float32(2.5))
    out = np.zeros(9, np.float32)
    kernel[1, 1](out, t3)
    expected = np.zeros(9, np.float32)
    body(expected, t3)
    np.testing.assert_array_equal(out, expected)


def test_each_copy_of_the_body_has_its_items_type():
    def k(out):
        for v in literal_unroll((np.int8(100), np.float32(0.25))):
            # int8 arithmetic wraps in its own copy; the float copy keeps its fraction.
            out[0] += v + v
    # Numba's typing of int8 + int8 is int64, so 200; the float copy adds 0.5.
    kernel = metal.jit(k)
    out = np.zeros(1, np.float32)
    kernel[1, 1](out)
    assert out[0] == 200.5


def test_a_run_time_sequence_is_refused_clearly():
    def k(out, arr):
        for v in literal_unroll(arr):
            out[0] += v

    with pytest.raises(Exception, match="literal_unroll"):
        metal.compile_msl(k, "void(float32[:], float32[:])")
