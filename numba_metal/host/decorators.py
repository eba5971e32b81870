"""``@metal.jit`` and ``@metal.jit(device=True)``: the options they take and the object each makes.

``jit`` validates its options once, here, and makes a :class:`~numba_metal.host.dispatcher.Dispatcher`
(a kernel) or a :class:`~numba_metal.host.dispatcher.DeviceFunction`.
"""

from __future__ import annotations

from numba_metal.compiler import linking, precision
from numba_metal.compiler import sanitize as _sanitize
from numba_metal.errors import MetalValueError, NumbaMetalError, UnsupportedFeatureError

from . import settings
from .dispatcher import DeviceFunction, Dispatcher, JitOptions

#: Options of numba.cuda's ``jit`` numba-metal accepts (``inline``, ``forceinline``, ``opt`` and
#: ``lineinfo`` change nothing: device functions are always inlined, the MSL compiler always optimises).
KNOWN_OPTIONS = frozenset(["device", "fastmath", "debug", "cache", "inline", "forceinline", "opt", "lineinfo",
                           "float64", "link", "sanitize"])
#: Options of numba.cuda's ``jit`` that Metal has no equivalent of, and what each is.
UNSUPPORTED_OPTIONS = {
    "max_registers": "a register cap", "launch_bounds": "launch bounds",
    "lto": "link-time optimisation", "extensions": "compiler extensions", "boundscheck":
    "the boundscheck option (use debug=True for bounds-checked kernels)",
}


def jit(func_or_sig=None, device=False, **options):
    """Compile a Python function as a Metal kernel (or, with ``device=True``, a device function).

    Options: ``device``, ``fastmath`` (fast math and fast math functions), ``debug`` (bounds-checked
    array accesses, violations raised at the next wait), ``cache`` (a disk cache that is never stale),
    ``float64="exact"`` (float64 intermediates of a kernel without float64 data, such as ``i / n`` of
    integers, computed exactly in the emulated float64 instead of float32; docs/limitations.md),
    ``link`` (hand-written ``.metal`` files linked into the kernel, defining the functions it calls
    through ``metal.declare_device``; numba.cuda's PTX and CUDA C are refused), ``sanitize`` (the kernel
    sanitizer's checks on the CPU reference device: ``True``/``"all"`` or names from ``race``, ``sync``,
    ``init``, ``bounds``; default ``NUMBA_METAL_SANITIZE``; docs/sanitizer.md).
    Signatures compile eagerly and then only those argument types are accepted: a string, a Numba
    signature (``void(float32[:], int32)``), a tuple of argument types (``(float32[:], int32)``), or a
    list of any of these (numba.cuda's forms).

    Raises:
        UnsupportedFeatureError: an option Metal has no equivalent of (``max_registers``, ``lto``...), CUDA
            code (``.cu``, ``.ptx``...) in ``link``, or a ``float64=`` value that is not one of its values;
            with eager signatures, a construct Metal cannot express.
        MetalValueError: ``link`` with ``device=True`` (numba.cuda's ``ValueError``).
        NumbaMetalError: an unknown option; ``@metal.jit`` applied twice; an eager signature that is not a
            signature, or a kernel's that does not return void.
        KernelCompilationError: with eager signatures, Numba's typing fails for one (also Numba's
            ``TypingError``). Without signatures, nothing compiles until the first launch, which raises what
            ``Dispatcher`` lists.
    """
    for name in options:
        if name in UNSUPPORTED_OPTIONS:
            raise UnsupportedFeatureError(f"@metal.jit({name}=...): Metal has no equivalent of "
                                          f"{UNSUPPORTED_OPTIONS[name]}")
        if name not in KNOWN_OPTIONS:
            raise NumbaMetalError(f"@metal.jit got an unknown option {name!r}; options are: "
                                  f"{', '.join(sorted(KNOWN_OPTIONS))}")
    float64 = options.get("float64")
    precision.check_option(float64)
    link = options.get("link")
    if link and device:
        # numba.cuda's rule: a device function's MSL goes in the kernels that call it.
        raise MetalValueError("link keyword invalid for device function: pass link=[...] to the kernels "
                              "(@metal.jit) that call it, or to metal.declare_device")
    try:
        sanitize_checks = (_sanitize.parse(options["sanitize"], "@metal.jit(sanitize=...)") if "sanitize" in options
                           else settings.sanitize_checks())
    except ValueError as e:
        raise NumbaMetalError(str(e)) from None
    if device and options.get("sanitize"):
        raise NumbaMetalError("@metal.jit(device=True, sanitize=...): device functions are sanitized in the "
                              "kernels that call them; pass sanitize= to those kernels (@metal.jit)")
    jit_options = JitOptions(fastmath=bool(options.get("fastmath", False)),
                             debug=bool(options.get("debug", False)),
                             cache=bool(options.get("cache", False)),
                             float64=float64,
                             link=linking.paths(link, "@metal.jit(link=...)"),
                             sanitize=() if device else tuple(c for c in _sanitize.CHECKS if c in sanitize_checks))
    sigs = None
    if func_or_sig is not None and not callable(func_or_sig):
        sigs = func_or_sig if isinstance(func_or_sig, list) else [func_or_sig]
        func_or_sig = None

    def decorate(pyfunc):
        if device:
            return DeviceFunction(pyfunc, sigs, jit_options)
        return Dispatcher(pyfunc, sigs, jit_options)

    if func_or_sig is not None:
        if isinstance(func_or_sig, (Dispatcher, DeviceFunction)):
            raise NumbaMetalError("@metal.jit applied twice")
        return decorate(func_or_sig)
    return decorate


def device_func(pyfunc=None, **options):
    """Decorator for a device function (the earlier numba-metal's spelling of ``jit(device=True)``).

    Raises:
        UnsupportedFeatureError: as ``jit``: an option Metal has no equivalent of.
        NumbaMetalError: as ``jit``: an unknown option or an invalid signature.
    """
    if pyfunc is None:
        return lambda f: jit(f, device=True, **options)
    return jit(pyfunc, device=True, **options)


__all__ = ["jit", "device_func", "declare_device", "KNOWN_OPTIONS", "UNSUPPORTED_OPTIONS"]
