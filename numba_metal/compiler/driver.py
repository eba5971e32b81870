"""The compiler's entry point: a Python function, argument types and options in; MSL and its ABI out.

A pure function of (function, argument types, options): no device is touched here, and nothing is
cached here (the disk cache belongs to the host's dispatcher).
"""

from __future__ import annotations

import inspect

from numba.core import types

from numba_metal.errors import NumbaMetalError, UnsupportedFeatureError, typing_error

from .abi import CompiledKernel
from .codegen import lower_device_function, lower_kernel
from .frontend import infer_types, source_location


def check_argument_types(pyfunc, argtypes) -> None:
    """Refuse argument types Metal cannot take, before typing, naming the argument."""
    try:
        names = list(inspect.signature(pyfunc).parameters)
    except (TypeError, ValueError):
        names = []
    for i, ty in enumerate(argtypes):
        name = names[i] if i < len(names) else "#" + str(i)
        for t in _leaves(ty):
            if isinstance(t, types.Array) and t.dtype == types.float64:
                raise UnsupportedFeatureError(
                    f"argument '{name}' is a float64 array, but Apple GPUs have no float64; convert it "
                    "with .astype(np.float32)", source_location(pyfunc))
            if t == types.float64:
                raise UnsupportedFeatureError(
                    f"argument '{name}' is float64, but Apple GPUs have no float64; pass np.float32(x) "
                    "(Python floats are passed as float32)", source_location(pyfunc))
            if isinstance(t, types.Complex) or (isinstance(t, types.Array) and isinstance(t.dtype, types.Complex)):
                raise UnsupportedFeatureError(f"argument '{name}' is complex, which Metal kernels do not "
                                              "support", source_location(pyfunc))


def _leaves(ty):
    if isinstance(ty, types.BaseTuple):
        for t in ty.types:
            yield from _leaves(t)
    else:
        yield ty


def argument_types(signature) -> tuple:
    """The argument types of a signature: a Numba signature, a string (``"void(float32[:], int32)"``) or a
    tuple of Numba types."""
    if isinstance(signature, (tuple, list)) and all(isinstance(t, types.Type) for t in signature):
        return tuple(signature)
    from numba.core import sigutils
    argtypes, _ = sigutils.normalize_signature(signature)
    return tuple(argtypes)


def compile_kernel(pyfunc, argtypes, *, debug: bool = False) -> CompiledKernel:
    """Type and lower the kernel ``pyfunc`` for ``argtypes`` (``debug``: bounds-checked array accesses)."""
    argtypes = tuple(argtypes)
    check_argument_types(pyfunc, argtypes)
    tf = _typed(pyfunc, argtypes)
    source, kernel_abi = lower_kernel(tf, debug=debug)
    return CompiledKernel(source, kernel_abi, tf)


def compile_device_function(pyfunc, argtypes) -> str:
    """The MSL of the device function ``pyfunc`` for ``argtypes`` on its own (with the helpers it needs)."""
    argtypes = argument_types(argtypes)
    check_argument_types(pyfunc, argtypes)
    return lower_device_function(_typed(pyfunc, argtypes))


def _typed(pyfunc, argtypes):
    """``pyfunc`` typed; a function that fails to type raises a numba-metal error that is also Numba's
    ``TypingError``, as numba.cuda's. (Only here, at the top: inside Numba's type inference of a caller,
    a Numba error from a device function would read as "this template does not apply".)"""
    try:
        return infer_types(pyfunc, argtypes)
    except NumbaMetalError as e:
        raise typing_error(e) from None
