"""The compiler's entry points: a Python function and argument types in, MSL and a launch plan out.

Pure functions of (function, argument types, options): no device is touched here.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba.core import types

from numba_metal.errors import UnsupportedFeatureError

from .frontend import TypedFunction, infer_types, source_location
from .plan import LaunchPlan


@dataclass
class CompiledKernel:
    source: str
    plan: LaunchPlan
    typed: TypedFunction | None


def check_argument_types(pyfunc, argtypes) -> None:
    """Refuse argument types Metal cannot take, before typing, naming the argument."""
    import inspect
    try:
        names = list(inspect.signature(pyfunc).parameters)
    except (TypeError, ValueError):
        names = []
    for i, ty in enumerate(argtypes):
        name = names[i] if i < len(names) else f"#{i}"
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


def compile_kernel(pyfunc, argtypes, *, debug=False, fastmath=False, cache=False) -> CompiledKernel:
    """Type and lower a kernel for ``argtypes``."""
    from .codegen import lower_kernel
    argtypes = tuple(argtypes)
    check_argument_types(pyfunc, argtypes)
    if cache:
        from numba_metal.host.cache import cached_compile
        return cached_compile(pyfunc, argtypes, debug=debug, fastmath=fastmath)
    tf = infer_types(pyfunc, argtypes)
    source, plan = lower_kernel(tf, debug=debug, fastmath=fastmath)
    return CompiledKernel(source, plan, tf)


def compile_msl(pyfunc, signature, device=False, fastmath=False, debug=False) -> str:
    """The MSL numba-metal generates for ``pyfunc`` with ``signature`` (no device needed).

    ``signature`` is a Numba signature or string (``"void(float32[:], float32[:])"``) or a tuple of
    argument types. ``device=True`` compiles a device function.
    """
    from .codegen import lower_device_function, lower_kernel
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    if isinstance(signature, (tuple, list)) and all(isinstance(t, types.Type) for t in signature):
        argtypes = tuple(signature)
    else:
        from numba.core import sigutils
        argtypes, _ = sigutils.normalize_signature(signature)
        argtypes = tuple(argtypes)
    check_argument_types(pyfunc, argtypes)
    tf = infer_types(pyfunc, argtypes)
    if device:
        return lower_device_function(tf, fastmath=fastmath)
    source, _ = lower_kernel(tf, debug=debug, fastmath=fastmath)
    return source
