"""The compiler's entry point: a Python function, argument types and options in; MSL and its ABI out.

A pure function of (function, argument types, options): no device is touched here, and nothing is
cached here (the disk cache belongs to the host's dispatcher).
"""

from __future__ import annotations

from numba.core import types

from numba_metal.errors import NumbaMetalError, typing_error

from . import linking, precision
from .abi import CompiledKernel
from .codegen import lower_device_function, lower_kernel_linked
from .devicefn import infer


def argument_types(signature) -> tuple:
    """The argument types of a signature: a Numba signature, a string (``"void(float32[:], int32)"``) or a
    tuple of Numba types."""
    if isinstance(signature, (tuple, list)) and all(isinstance(t, types.Type) for t in signature):
        return tuple(signature)
    from numba.core import sigutils
    try:
        argtypes, _ = sigutils.normalize_signature(signature)
    except Exception as e:  # noqa: BLE001 - Numba raises several kinds (NameError, SyntaxError, TypeError...)
        raise NumbaMetalError(f"invalid signature {signature!r}: {e}; write it as Numba does, e.g. "
                              "\"void(float32[:], int32)\" or (float32[:], int32)") from None
    return tuple(argtypes)


def compile_kernel(pyfunc, argtypes, *, debug: bool = False, float64: str | None = None,
                   link=(), sanitize=frozenset()) -> CompiledKernel:
    """Type and lower the kernel ``pyfunc`` for ``argtypes`` (``debug``: bounds-checked array accesses;
    ``float64``: ``"exact"`` computes float64 intermediates exactly in kernels without float64 data, see
    precision.py; ``link``: paths of hand-written MSL files the kernel links, see linking.py; ``sanitize``: the
    sanitizer's checks, see sanitize.py)."""
    argtypes = tuple(argtypes)
    linked = tuple((path,) + linking.read(path, "@metal.jit(link=...)") for path in linking.paths(link, "@metal.jit"))
    precision.check_option(float64)
    tf = _typed(pyfunc, argtypes)
    exact = precision.exact_float64(tf, float64)
    if exact:
        # Python literals next to float32 data stay float32 (NumPy 2's weak scalars): typed again with
        # them float32 until no more are found (a float32 result can make another literal weak).
        weak = frozenset()
        while True:
            more = precision.weak_literals(tf) - weak
            if not more:
                break
            weak |= more
            tf = _typed(pyfunc, argtypes, float32_constants=weak)
    source, kernel_abi, files = lower_kernel_linked(tf, debug=debug, exact_float64=exact, link=linked,
                                                    sanitize=frozenset(sanitize))
    return CompiledKernel(source, kernel_abi, tf, files)


def compile_device_function(pyfunc, argtypes, *, float64: str | None = None) -> str:
    """The MSL of the device function ``pyfunc`` for ``argtypes`` on its own (with the helpers it needs)."""
    argtypes = argument_types(argtypes)
    precision.check_option(float64)
    tf = _typed(pyfunc, argtypes)
    return lower_device_function(tf, exact_float64=precision.exact_float64(tf, float64))


def _typed(pyfunc, argtypes, **options):
    """``pyfunc`` typed; a function that fails to type raises a numba-metal error that is also Numba's
    ``TypingError``, as numba.cuda's. (Only here, at the top: inside Numba's type inference of a caller,
    a Numba error from a device function would read as "this template does not apply".)"""
    try:
        return infer(pyfunc, argtypes, **options)
    except NumbaMetalError as e:
        raise typing_error(e) from None
