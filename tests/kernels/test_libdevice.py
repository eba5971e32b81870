"""metal.libdevice (kernel_api/libdevice.py): numba.cuda's cuda.libdevice integer functions, every row of
functions.LIBDEVICE whose types are all integers against a Python model of CUDA's libdevice definitions
(the oracle; numba.cuda types the unsigned ones with signed types, so the model's results are compared
as bit patterns of numba.cuda's result type), on edge and random values, with numba.cuda's result
types."""

import numpy as np
import pytest
from numba.core import types

from numba_metal import metal
from numba_metal.compiler.frontend import infer_types
from numba_metal.kernel_api import functions as F
from numba_metal.kernel_api.pymath import numba_type


def _wrap(v, bits, signed):
    v = int(v) & ((1 << bits) - 1)
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _s24(v):
    return _wrap(v, 24, True)


def _width(v, bits):
    return int(v) & ((1 << bits) - 1)


MODEL = {
    "popc": lambda x: bin(_width(x, 32)).count("1"),
    "popcll": lambda x: bin(_width(x, 64)).count("1"),
    "clz": lambda x: 32 - _width(x, 32).bit_length(),
    "clzll": lambda x: 64 - _width(x, 64).bit_length(),
    "ffs": lambda x: (_width(x, 32) & -_width(x, 32)).bit_length(),
    "ffsll": lambda x: (_width(x, 64) & -_width(x, 64)).bit_length(),
    "brev": lambda x: int(format(_width(x, 32), "032b")[::-1], 2),
    "brevll": lambda x: int(format(_width(x, 64), "064b")[::-1], 2),
    "mulhi": lambda x, y: (int(x) * int(y)) >> 32,
    "umulhi": lambda x, y: (int(x) * int(y)) >> 32,
    "mul64hi": lambda x, y: (int(x) * int(y)) >> 64,
    "umul64hi": lambda x, y: (int(x) * int(y)) >> 64,
    "mul24": lambda x, y: _wrap(_s24(int(x)) * _s24(int(y)), 32, True),
    "umul24": lambda x, y: _wrap((int(x) & 0xFFFFFF) * (int(y) & 0xFFFFFF), 32, False),
    "sad": lambda x, y, z: _wrap(abs(int(x) - int(y)) + int(z), 32, False),
    "usad": lambda x, y, z: _wrap(abs(_width(x, 32) - _width(y, 32)) + _width(z, 32), 32, False),
    "abs": lambda x: abs(int(x)),
    "llabs": lambda x: abs(int(x)),
    "max": max, "min": min, "llmax": max, "llmin": min,
    "umax": lambda x, y: max(_width(x, 32), _width(y, 32)), "umin": lambda x, y: min(_width(x, 32), _width(y, 32)),
    "ullmax": lambda x, y: max(_width(x, 64), _width(y, 64)), "ullmin": lambda x, y: min(_width(x, 64), _width(y, 64)),
    "hadd": lambda x, y: (int(x) + int(y)) >> 1, "rhadd": lambda x, y: (int(x) + int(y) + 1) >> 1,
    "uhadd": lambda x, y: (_width(x, 32) + _width(y, 32)) >> 1,
    "urhadd": lambda x, y: (_width(x, 32) + _width(y, 32) + 1) >> 1,
    # CUDA's __byte_perm: byte k of the result is byte (s >> 4k) & 7 of the 64-bit value y:x.
    "byte_perm": lambda x, y, s: sum((((_width(y, 32) << 32 | _width(x, 32)) >> (8 * ((_width(s, 32) >> (4 * k)) & 7)))
                                      & 0xFF) << (8 * k) for k in range(4)),
}
MODEL["umulhi"] = lambda x, y: (_width(x, 32) * _width(y, 32)) >> 32
MODEL["umul64hi"] = lambda x, y: (_width(x, 64) * _width(y, 64)) >> 64
MODEL["umul24"] = lambda x, y: (_width(x, 32) & 0xFFFFFF) * (_width(y, 32) & 0xFFFFFF)


def _is_integer_row(function):
    sig = function.signatures[0]
    return all(t.startswith(("int", "uint")) for t in (F.result_type(sig), *F.argument_types(sig)))


INTEGER_ROWS = [f for f in F.LIBDEVICE if _is_integer_row(f)]


def _values(name, dtype, n=48):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(sum(map(ord, name)) + info.bits)
    edges = [0, 1, 2, info.max, info.min, info.max - 1, 0xFFFFFF & info.max, 0x800000]
    if info.min < 0:
        edges += [-1, -2, -0x800000]
    vals = np.array(edges, dtype=np.int64 if info.min < 0 else np.uint64).astype(dtype)
    return np.concatenate([vals, rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)])


def _kernel(fn, arity):
    if arity == 1:
        def k(x, y, z, out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = fn(x[i])
    elif arity == 2:
        def k(x, y, z, out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = fn(x[i], y[i])
    else:
        def k(x, y, z, out):
            i = metal.grid(1)
            if i < out.size:
                out[i] = fn(x[i], y[i], z[i])
    return metal.jit(k)


def test_every_integer_row_has_a_model():
    assert {f.name for f in INTEGER_ROWS} == set(MODEL)


@pytest.mark.parametrize("function", INTEGER_ROWS, ids=lambda f: f.name)
def test_libdevice_integer_function_against_cudas_definition(function):
    sig = function.signatures[0]
    argtypes = [np.dtype(str(numba_type(t))) for t in F.argument_types(sig)]
    result = np.dtype(str(numba_type(F.result_type(sig))))
    args = [_values(function.name + str(k), t) for k, t in enumerate(argtypes)]
    n = min(len(a) for a in args)
    args = [a[:n] for a in args] + [np.zeros(n, np.uint32)] * (3 - len(args))
    out = np.zeros(n, result)
    fn = getattr(metal.libdevice, function.name)
    _kernel(fn, function.arity)[1, n](*args, out)
    bits = result.itemsize * 8
    expected = [_wrap(MODEL[function.name](*(a[i] for a in args[:function.arity])), bits, result.kind == "i")
                for i in range(n)]
    np.testing.assert_array_equal(out, np.array(expected, dtype=object).astype(result))
    # numba.cuda's (libdevice's) result type
    call = {1: lambda x: fn(x), 2: lambda x, y: fn(x, y), 3: lambda x, y, z: fn(x, y, z)}[function.arity]
    assert infer_types(call, tuple(numba_type(t) for t in F.argument_types(sig))).return_type \
        == numba_type(F.result_type(sig))


def test_libdevice_popc_of_int64_counts_64_bits():
    assert infer_types(lambda x: metal.libdevice.popcll(x), (types.int64,)).return_type == types.int32
