"""Choosing among a kernel's explicit signatures, and converting a launch's scalars to the chosen one.

A kernel given explicit signatures (``@metal.jit(["void(int32[:])", "void(float32[:])"])``, or made by
``specialize``) compiles nothing else. A launch whose argument types are not exactly one of them takes the
signature Numba's dispatcher would take: each signature is rated by the conversions its parameters need
(Numba's typing context: exact, promotion, safe, unsafe; unsafe conversions allowed, since nothing can be
compiled instead), the best wins, a tie between the best is refused as ambiguous (numba.cuda's
``TypeError``: "Ambiguous overloading for ..."), and no signature at all is refused with numba.cuda's "No
matching definition for argument type(s) ...". numba-cuda 0.30's ``CUDADispatcher`` does the same through
its C dispatcher's type-conversion rules and ``_explain_ambiguous``/``_explain_matching_error``
(numba_cuda/numba/cuda/dispatcher.py).

The chosen signature's scalars then get the launch's values converted as numba.cuda's ``_prepare_args``
converts them (with ctypes): an integer parameter takes an integer value modulo 2**bits (a uint32 value above
2**31 where the signature says int32 is its two's-complement int32), a float parameter any real number, a
complex parameter any number. A float value where the signature says an integer is truncated toward zero,
as Numba's CPU dispatcher converts it (numba.cuda's ctypes refuse it; numba-cuda's tests mark that an
expected failure to be lifted), and a complex value where it says a real number is refused (``TypeError``),
as both do.
"""

from __future__ import annotations

import math

import numpy as np

from numba_metal.errors import LaunchArgumentError


def choose(dispatcher, signatures, argtypes):
    """The signature (a tuple of argument types, one of ``signatures``) a launch with ``argtypes`` takes.

    Raises:
        LaunchArgumentError: (also ``TypeError``) no signature accepts the argument types, or two or more
            accept them equally well.
    """
    from numba.core import types, typing

    from numba_metal.compiler.typing import typing_context
    cases = [typing.signature(types.none, *sig) for sig in signatures]
    try:
        best = typing_context().resolve_overload(dispatcher.py_func, cases, tuple(argtypes), {},
                                                 allow_ambiguous=False, unsafe_casting=True)
    except TypeError as e:
        # Numba's message first (code matching numba.cuda's keeps working), then what to do.
        raise LaunchArgumentError(f"{e}\nkernel {dispatcher.__name__}() was launched with argument types that "
                                  "two of its signatures accept equally well; pass arguments of one signature's "
                                  "exact types (np.float64(x), np.int32(n)...)") from None
    if best is None:
        sigs = ", ".join("(" + ", ".join(map(str, s)) + ")" for s in signatures)
        raise LaunchArgumentError(
            f"No matching definition for argument type(s) {', '.join(map(str, argtypes))}: kernel "
            f"{dispatcher.__name__}() has no signature matching argument types "
            f"({', '.join(map(str, argtypes))}); its signatures are: {sigs}")
    return tuple(best.args)


def converter(formal, actual):
    """A function converting a launch's arguments of types ``actual`` to the signature ``formal`` (None when
    no value needs converting: arrays of another layout, exact types)."""
    steps = [_converter(f, a) for f, a in zip(formal, actual)]
    if not any(steps):
        return None
    steps = tuple(steps)

    def convert(args):
        return tuple(step(v) if step is not None else v for step, v in zip(steps, args)) + tuple(args[len(steps):])
    return convert


def _converter(formal, actual):
    from numba.core import types
    if formal == actual:
        return None
    if isinstance(formal, types.BaseTuple) and isinstance(actual, types.BaseTuple):
        steps = tuple(_converter(f, a) for f, a in zip(formal, actual))
        if not any(steps):
            return None
        return lambda value: tuple(s(v) if s is not None else v for s, v in zip(steps, value))
    if isinstance(formal, types.Boolean):
        return bool
    if isinstance(formal, types.Integer):
        return _to_integer(formal.bitwidth, formal.signed, str(formal))
    if isinstance(formal, types.Float):
        return _to_real(str(formal))
    if isinstance(formal, types.Complex):
        return complex
    return None


def _to_integer(bits: int, signed: bool, name: str):
    modulus = 1 << bits
    half = modulus >> 1

    def convert(value):
        if isinstance(value, (complex, np.complexfloating)):
            raise LaunchArgumentError(f"a complex argument ({value!r}) cannot be passed where the signature says "
                                      f"{name}: pass its .real explicitly")
        if isinstance(value, (float, np.floating)):
            if not math.isfinite(value):
                raise LaunchArgumentError(f"{value!r} cannot be passed where the signature says {name}: it is not a "
                                          "finite number")
            value = math.trunc(value)
        value = int(value) % modulus
        return value - modulus if signed and value >= half else value
    return convert


def _to_real(name: str):
    def convert(value):
        if isinstance(value, (complex, np.complexfloating)):
            raise LaunchArgumentError(f"a complex argument ({value!r}) cannot be passed where the signature says "
                                      f"{name}: pass its .real explicitly")
        return float(value)
    return convert


__all__ = ["choose", "converter"]
