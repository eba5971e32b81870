"""The ``metal`` namespace: ``from numba_metal import metal``.

Host-side names (``jit``, ``to_device``, streams...) are defined on import; kernel-side names
(``grid``, ``threadIdx``, ``shared.array``, ``atomic.add``...) and the scalar types (``int32``,
``float32``, ``void``: Numba's type objects, as numba.cuda's) are the kernel API's, loaded on first
use, so importing numba-metal does not import Numba's compiler.
"""

from __future__ import annotations

from numba_metal.errors import (CopyRequiredError, DeviceRaceWarning, DispatcherStateError, DLPackError,  # noqa: F401
                                KernelBarrierError, KernelBoundsError, KernelCompilationError, KernelRaceError,
                                KernelSanitizerBoundsError, KernelSanitizerError, KernelSyncError,
                                KernelUninitializedError,
                                KernelLaunchError, KernelRaisedError, LaunchArgumentError,
                                LaunchConfigurationError, MetalDeviceLostError, MetalOutOfMemoryError, MetalRuntimeError,
                                MetalTypeError, MetalValueError,
                                NumbaMetalError, UnsupportedFeatureError, UnsupportedPlatformError)
from numba_metal.host.arguments import In, InOut, Out  # noqa: F401
from numba_metal.host.allocation import (defer_cleanup, device_array, device_array_like,  # noqa: F401
                                         managed_array, mapped, mapped_array, mapped_array_like, open_ipc_array,
                                         pinned, pinned_array, pinned_array_like, to_device)
from numba_metal.host.arrays import DeviceNDArray, is_device_array  # noqa: F401
from numba_metal.host.mapped import MappedNDArray  # noqa: F401
from numba_metal.host import devicearray  # noqa: F401  (numba.cuda's ``cuda.devicearray`` names)
from numba_metal.host import launchconfig  # noqa: F401  (numba.cuda's ``cuda.launchconfig``)
from numba_metal.host.decorators import device_func, jit  # noqa: F401
from numba_metal.host.device import (close, current_context, detect, get_current_device,  # noqa: F401
                                     get_device_info, get_kernel_time_limit, gpus, is_available, is_bfloat16_supported,
                                     is_float16_supported, list_devices, require_context, select_device,
                                     set_kernel_time_limit)
from numba_metal.host.dispatcher import DeviceFunction, Dispatcher  # noqa: F401
from numba_metal.host.dispatcher import normalize_signature as _normalize_signature
from numba_metal.host.streams import (Event, Stream, default_stream, event,  # noqa: F401
                                      event_elapsed_time, external_stream, legacy_default_stream,
                                      per_thread_default_stream, stream, synchronize)
from numba_metal.host.profiling import profile_start, profile_stop, profiling  # noqa: F401
from numba_metal.host.batch import batch  # noqa: F401
from numba_metal.host.kernel_output import PrintOutputTruncated  # noqa: F401
from numba_metal.host.interop import (as_cuda_array, as_metal_array, from_cuda_array_interface,  # noqa: F401
                                      from_dlpack, is_cuda_array, is_metal_array)
from numba_metal.compiler.linking import LINKABLE_CODE as _LINKABLE_CODE
from numba_metal.libraries.reduction import Reduce, reduce, reduce_max, reduce_min, reduce_sum  # noqa: F401
from numba_metal.libraries import vectorize as _vectorize
from numba_metal.libraries.vectorize import guvectorize, vectorize  # noqa: F401

_vectorize.install()  # target='metal' for numba.vectorize / numba.guvectorize

# numba.cuda's linkable code in memory (CUSource, PTXSource, Fatbin, Cubin, Archive, Object, LTOIR): NVIDIA's
# code, held as numba.cuda holds it and refused when linked (compiler/linking.py)
CUSource = _LINKABLE_CODE["CUSource"]
PTXSource = _LINKABLE_CODE["PTXSource"]
Fatbin = _LINKABLE_CODE["Fatbin"]
Cubin = _LINKABLE_CODE["Cubin"]
Archive = _LINKABLE_CODE["Archive"]
Object = _LINKABLE_CODE["Object"]
LTOIR = _LINKABLE_CODE["LTOIR"]


def compile_msl(pyfunc, signature, device=False, fastmath=False, debug=False, float64=None, link=None) -> str:
    """The MSL numba-metal generates for ``pyfunc`` and ``signature`` (a Numba signature, a string such as
    ``"void(float32[:], float32[:])"`` or a tuple of argument types); needs no device. ``device=True``
    compiles a device function. (``fastmath`` is a device-compiler option: the MSL is the same.)
    ``float64="exact"`` and ``link`` (hand-written ``.metal`` files; by default those of a
    ``@metal.jit(link=...)`` kernel): see ``jit``.

    Raises:
        UnsupportedFeatureError: the kernel uses a construct Metal cannot express, named with its ``file:line``.
        KernelCompilationError: Numba's typing fails (its explanation kept; also Numba's ``TypingError``) or the
            device compiler rejects the MSL.
        NumbaMetalError: ``signature`` is not a signature; a ``link`` file cannot be read.
        UnsupportedFeatureError: ``float64=`` is not one of its values; ``link`` holds CUDA code.
    """
    from numba_metal.compiler import driver
    if link is None:
        link = getattr(getattr(pyfunc, "options", None), "link", ())
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    argtypes, _ = _normalize_signature(signature)
    if device:
        return driver.compile_device_function(pyfunc, argtypes, float64=float64)
    return driver.compile_kernel(pyfunc, argtypes, debug=debug, float64=float64, link=link).source


def _refuse_nvidia_code(name: str, output: str):
    raise UnsupportedFeatureError(
        f"metal.{name}: numba.cuda's {name} produces {output}, NVIDIA's code; Metal compiles MSL: "
        "metal.compile_msl(pyfunc, signature) gives the MSL numba-metal generates (Dispatcher.inspect_msl() "
        "that of a compiled kernel)")


#: numba.cuda's compilers to NVIDIA's code: name -> what it produces. Each is refused naming compile_msl.
_NVIDIA_COMPILERS = {
    "compile_ptx": "PTX",
    "compile_ptx_for_current_device": "PTX",
    "compile": "PTX or LTO-IR",
    "compile_for_current_device": "PTX or LTO-IR",
    "compile_all": "PTX, LTO-IR or cubin",
}


def _nvidia_compiler(name: str):
    output = _NVIDIA_COMPILERS[name]

    def refused(pyfunc, sig, **options):
        _refuse_nvidia_code(name, output)
    refused.__name__ = refused.__qualname__ = name
    refused.__module__ = __name__
    refused.__doc__ = (f"numba.cuda's ``{name}`` ({output}): refused, NVIDIA's code; :func:`compile_msl` gives "
                       "the MSL.\n\n    Raises:\n        UnsupportedFeatureError: always, naming "
                       "``metal.compile_msl``.\n    ")
    return refused


compile_ptx = _nvidia_compiler("compile_ptx")
compile_ptx_for_current_device = _nvidia_compiler("compile_ptx_for_current_device")
compile = _nvidia_compiler("compile")
compile_for_current_device = _nvidia_compiler("compile_for_current_device")
compile_all = _nvidia_compiler("compile_all")


def math_functions() -> frozenset[str]:
    """The names of the functions of Python's ``math`` module kernels can call (each with its types and
    accuracy in docs/supported-features.md and docs/math-accuracy.md).

    Raises:
        nothing: it reads the math table.
    """
    from numba_metal.kernel_api.functions import MATH
    return frozenset(f.name for f in MATH)


def numpy_ufuncs() -> frozenset[str]:
    """The names of NumPy's ufuncs kernels can call (``np.sin(x[i])``, ``np.sin(x, out)``), aliases included
    (each with its loops and accuracy in docs/supported-features.md).

    Raises:
        nothing: it reads the ufunc table.
    """
    from numba_metal.kernel_api.ufunc_table import names
    return frozenset(names())


def __getattr__(name):
    # Kernel-side names (``grid``, ``shared``, ``atomic``...) and the scalar types (``int32``, Numba's
    # type objects, as numba.cuda's) come from the kernel API's index of its
    # families' ``__all__``, loaded on first use: importing numba-metal does not import Numba.
    if not name.startswith("__"):
        from numba_metal import kernel_api
        value = kernel_api.index().get(name, _MISSING)
        if value is not _MISSING:
            globals()[name] = value
            return value
    raise AttributeError(f"module 'numba_metal.metal' has no attribute {name!r}")


_MISSING = object()


def __dir__():
    from numba_metal import kernel_api
    return sorted(set(globals()) | set(kernel_api.index()))
