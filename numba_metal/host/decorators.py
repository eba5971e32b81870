"""``@metal.jit`` and ``@metal.jit(device=True)``: the options they take and the object each makes.

``jit`` validates its options once, here, and makes a :class:`~numba_metal.host.dispatcher.Dispatcher`
(a kernel) or a :class:`~numba_metal.host.dispatcher.DeviceFunction`.
"""

from __future__ import annotations

from numba_metal.compiler import linking, precision
from numba_metal.errors import MetalTypeError, MetalValueError, NumbaMetalError, UnsupportedFeatureError

from . import settings
from .dispatcher import DeviceFunction, Dispatcher, JitOptions

#: Options of numba.cuda's ``jit`` numba-metal accepts (``inline``, ``forceinline``, ``opt`` and
#: ``lineinfo`` change nothing: device functions are always inlined, the MSL compiler always optimises).
#: ``launch_bounds`` sets Metal's ``[[max_total_threads_per_threadgroup]]``; ``shared_memory_carveout`` is
#: validated as numba.cuda validates it and changes nothing (see :func:`_carveout`).
KNOWN_OPTIONS = frozenset(["device", "fastmath", "debug", "cache", "inline", "forceinline", "opt", "lineinfo",
                           "float64", "link", "launch_bounds", "shared_memory_carveout", "sanitize"])
#: Options of numba.cuda's ``jit`` that Metal has no equivalent of, and what each is.
UNSUPPORTED_OPTIONS = {
    "max_registers": "a register cap",
    "lto": "link-time optimisation", "extensions": "compiler extensions", "boundscheck":
    "the boundscheck option (use debug=True for bounds-checked kernels)",
}


def jit(func_or_sig=None, device=False, **options):
    """Compile a Python function as a Metal kernel (or, with ``device=True``, a device function).

    Options: ``device``, ``fastmath`` (fast math and fast math functions), ``debug`` (bounds-checked
    array accesses and Python's error model, the launch waiting and raising what the kernel met, as numba.cuda's),
    ``cache`` (a disk cache that is never stale),
    ``float64="exact"`` (float64 intermediates of a kernel without float64 data, such as ``i / n`` of
    integers, computed exactly in the emulated float64 instead of float32; docs/limitations.md),
    ``link`` (hand-written ``.metal`` files linked into the kernel, defining the functions it calls
    through ``metal.declare_device``; numba.cuda's PTX and CUDA C are refused), ``launch_bounds`` (numba.cuda's
    ``max_threads_per_block`` or a tuple of 1 to 3 bounds: the first becomes Metal's
    ``[[max_total_threads_per_threadgroup]]`` and a launch of more threads per threadgroup is refused; the
    minimum blocks per multiprocessor and maximum blocks per cluster have no Metal counterpart and are
    accepted as the hints they are), ``shared_memory_carveout`` (validated as numba.cuda does, then ignored:
    Metal's threadgroup memory is not carved out of a cache), ``sanitize`` (the kernel
    sanitizer's checks on the CPU reference device: ``True``/``"all"`` or names from ``race``, ``sync``,
    ``init``, ``bounds``; default ``NUMBA_METAL_SANITIZE``; docs/sanitizer.md).
    Signatures compile eagerly and then only those argument types are accepted: a string, a Numba
    signature (``void(float32[:], int32)``), a tuple of argument types (``(float32[:], int32)``), or a
    list of any of these (numba.cuda's forms).

    Raises:
        UnsupportedFeatureError: an option Metal has no equivalent of (``max_registers``, ``lto``...), CUDA
            code (``.cu``, ``.ptx``...) in ``link``, or a ``float64=`` value that is not one of its values;
            with eager signatures, a construct Metal cannot express.
        MetalValueError: ``link`` with ``device=True`` (numba.cuda's ``ValueError``); more than three
            ``launch_bounds`` or one that is not a positive integer; a ``shared_memory_carveout`` outside -1 to
            100 or not one of ``"default"``, ``"MaxL1"``, ``"MaxShared"``.
        MetalTypeError: a ``shared_memory_carveout`` that is neither a string nor an integer.
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
    _carveout(options.get("shared_memory_carveout"))
    try:
        if "sanitize" in options:
            from numba_metal.compiler import sanitize as _sanitize   # only then: a plain jit imports no MSL code
            sanitize_checks = _sanitize.parse(options["sanitize"], "@metal.jit(sanitize=...)")
        else:
            sanitize_checks = settings.sanitize_checks()
    except ValueError as e:
        raise NumbaMetalError(str(e)) from None
    if "init" in sanitize_checks and not device:
        from . import init_shadow   # device_array memory is tracked from now on
        init_shadow.arm()
    if device and options.get("sanitize"):
        raise NumbaMetalError("@metal.jit(device=True, sanitize=...): device functions are sanitized in the "
                              "kernels that call them; pass sanitize= to those kernels (@metal.jit)")
    jit_options = JitOptions(fastmath=bool(options.get("fastmath", False)),
                             debug=bool(options.get("debug", False)),
                             cache=bool(options.get("cache", False)),
                             float64=float64,
                             link=linking.paths(link, "@metal.jit(link=...)"),
                             launch_bound=_launch_bound(options.get("launch_bounds")),
                             sanitize=() if device or not sanitize_checks else _sanitize_order(sanitize_checks))
    sigs = None
    specialized = False
    if func_or_sig is not None and not callable(func_or_sig):
        # numba.cuda: one signature makes a specialized kernel, a list of them does not
        specialized = not isinstance(func_or_sig, list)
        sigs = func_or_sig if isinstance(func_or_sig, list) else [func_or_sig]
        func_or_sig = None

    def decorate(pyfunc):
        if device:
            return DeviceFunction(pyfunc, sigs, jit_options)
        disp = Dispatcher(pyfunc, sigs, jit_options, specialized=specialized)
        disp.sanitize_from_env = bool(jit_options.sanitize) and "sanitize" not in options
        return disp

    if func_or_sig is not None:
        if isinstance(func_or_sig, (Dispatcher, DeviceFunction)):
            raise NumbaMetalError("@metal.jit applied twice")
        return decorate(func_or_sig)
    return decorate


def _launch_bound(bounds) -> int:
    """The maximum threads per threadgroup of numba.cuda's ``launch_bounds`` (0 for none): a positive integer,
    or a tuple of 1 to 3 (max threads per block, min blocks per multiprocessor, max blocks per cluster) whose
    first is that maximum. The other two are occupancy hints to NVIDIA's compiler (CUDA C++ Programming Guide,
    "Launch Bounds") and a bound on thread-block clusters, which Metal does not have: a Metal threadgroup is
    never in a cluster, so that bound always holds; both are checked and change nothing."""
    if bounds is None:
        return 0
    items = (bounds,) if isinstance(bounds, int) else tuple(bounds) if isinstance(bounds, (tuple, list)) else None
    if items is None:
        raise MetalValueError(f"launch_bounds must be an integer or a tuple of 1 to 3 integers, got {bounds!r}")
    if len(items) > 3:
        # numba.cuda's wording first
        raise MetalValueError(f"Got {len(items)} launch bounds: {bounds}. A maximum of three are supported: "
                              "(max_threads_per_block, min_blocks_per_sm, max_blocks_per_cluster)")
    for item in items:
        if not isinstance(item, int) or isinstance(item, bool) or item <= 0:
            raise MetalValueError(f"launch_bounds must be positive integers, got {bounds!r}")
    return items[0] if items else 0


#: numba.cuda's carveout names (compared in lower case), each with its percentage
CARVEOUT_NAMES = {"default": -1, "maxl1": 0, "maxshared": 100}


def _carveout(carveout) -> None:
    """Check ``shared_memory_carveout`` as numba.cuda does (numba_cuda/numba/cuda/decorators.py); the value then
    changes nothing. numba.cuda documents it as a preference for how the CUDA driver partitions an SM's
    unified L1 cache and shared memory, "only effective on devices with a unified L1/shared memory
    architecture", i.e. a hint the driver may not honour; Metal has no such partition to prefer
    (threadgroup memory is sized per dispatch), so accepting and ignoring it keeps a ported program's meaning."""
    if carveout is None:
        return
    if isinstance(carveout, str):
        if carveout.lower() not in CARVEOUT_NAMES:
            raise MetalValueError(f"Invalid carveout value: {carveout}. Must be -1 to 100 or one of "
                                  f"{list(CARVEOUT_NAMES)} (shared_memory_carveout)")
    elif isinstance(carveout, int) and not isinstance(carveout, bool):
        if not -1 <= carveout <= 100:
            raise MetalValueError(f"shared_memory_carveout={carveout}: Carveout must be between -1 and 100")
    else:
        raise MetalTypeError(f"shared_memory_carveout must be str or int, got {type(carveout).__name__}")


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


def _sanitize_order(checks) -> tuple:
    """The sanitizer's checks in their canonical order (part of the specialisation's options)."""
    from numba_metal.compiler import sanitize
    return tuple(c for c in sanitize.CHECKS if c in checks)
