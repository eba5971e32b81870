"""Regression: ``int(x)`` of an unsigned integer was typed int64, so ``int(np.uint64(2**64 - 1))``
became -1 (Python and Numba keep the value: Numba types ``int()`` of an integer as the same type).
Found by the differential tests (their type check: a generated ``int(A_u32[...])`` predicted uint32,
numba-metal typed int64)."""

import numpy as np

from numba_metal import metal


@metal.jit
def int_of(out, x, y, z):
    out[0] = int(x) > 0
    out[1] = int(y) == 4294967295
    out[2] = int(z) < 0
    out[3] = int(x) - x == 0


def test_int_of_an_integer_keeps_its_value():
    out = np.zeros(4, np.bool_)
    int_of[1, 1](out, np.uint64(2 ** 64 - 1), np.uint32(2 ** 32 - 1), np.int8(-5))
    assert out.tolist() == [True, True, True, True]


def test_int_of_an_integer_keeps_its_numba_type():
    from numba.core import types
    from numba_metal.compiler.frontend import infer_types

    def f(a, b, c, d):
        return int(a), int(b), int(c), int(d)

    tf = infer_types(f, (types.uint64, types.int8, types.float32, types.boolean))
    assert tf.return_type == types.Tuple((types.uint64, types.int8, types.int64, types.int64))
