"""Regression: a call with more than 30 arguments was refused as "calls with *args or **kwargs are
not supported", although the kernel has no *args: CPython 3.11 compiles such a call as
``f(*tuple)`` (CALL_FUNCTION_EX), which Numba types with the tuple's items appended.

Found by the differential tests (a kernel calling generated device functions with 35 arguments).
"""

import numpy as np

from numba_metal import metal

N = 32
_PARAMS = ", ".join(f"p{i}" for i in range(N))
_SRC = f"""
@metal.jit(device=True)
def dev({_PARAMS}):
    return p0 * 1000 + p{N - 1} * 10 + p{N // 2}


@metal.jit
def many(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = dev({", ".join(["i"] * (N - 1) + ["7"])})


@metal.jit
def star(out, t):
    i = metal.grid(1)
    if i < out.size:
        out[i] = dev(*t) + i


@metal.jit
def wide_max(out):
    i = metal.grid(1)
    if i < out.size:
        out[i] = max({", ".join(["i"] * 31 + ["3"])})
"""
_NS = {"metal": metal}
exec(compile(_SRC, __file__ + ":generated", "exec"), _NS)


def test_device_function_call_with_32_arguments():
    out = np.zeros(5, np.int64)
    _NS["many"][1, 8](out)
    assert out.tolist() == [i * 1000 + 70 + i for i in range(5)]


def test_call_with_star_tuple():
    out = np.zeros(3, np.int64)
    t = tuple(range(N))
    _NS["star"][1, 4](out, t)
    assert out.tolist() == [0 * 1000 + (N - 1) * 10 + N // 2 + i for i in range(3)]


def test_builtin_max_with_32_arguments():
    out = np.zeros(6, np.int64)
    _NS["wide_max"][1, 8](out)
    assert out.tolist() == [max(i, 3) for i in range(6)]
