"""The ``metal`` namespace: ``from numba_metal import metal``.

Host-side names (``jit``, ``to_device``, streams...) are defined on import; kernel-side names
(``grid``, ``threadIdx``, ``shared.array``, ``atomic.add``...) are loaded on first use, so importing
numba-metal does not import Numba's compiler.
"""

from __future__ import annotations

import importlib

import numpy as _np

from numba_metal.errors import (KernelBoundsError, KernelCompilationError, KernelLaunchError,  # noqa: F401
                                MetalRuntimeError, NumbaMetalError, UnsupportedFeatureError,
                                UnsupportedPlatformError)
from numba_metal.host.arrays import (DeviceNDArray, MappedNDArray, device_array,  # noqa: F401
                                     device_array_like, is_device_array, mapped_array, mapped_array_like,
                                     to_device)
from numba_metal.host.decorators import device_func, jit  # noqa: F401
from numba_metal.host.device import get_device_info, is_available, select_device  # noqa: F401
from numba_metal.host.dispatcher import DeviceFunction, Dispatcher  # noqa: F401
from numba_metal.host.streams import (Event, Stream, default_stream, event,  # noqa: F401
                                      event_elapsed_time, stream, synchronize)
from numba_metal.host.batch import batch  # noqa: F401
from numba_metal.reduction import Reduce, reduce, reduce_max, reduce_min, reduce_sum  # noqa: F401
from numba_metal import vectorize as _vectorize

_vectorize.install()  # target='metal' for numba.vectorize / numba.guvectorize


def compile_msl(pyfunc, signature, device=False, fastmath=False, debug=False) -> str:
    """The MSL numba-metal generates for ``pyfunc`` and ``signature`` (a Numba signature, a string such as
    ``"void(float32[:], float32[:])"`` or a tuple of argument types); needs no device. ``device=True``
    compiles a device function."""
    from numba_metal.compiler import driver
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    argtypes = driver.argument_types(signature)
    if device:
        return driver.compile_device_function(pyfunc, argtypes, fastmath=fastmath)
    return driver.compile_kernel(pyfunc, argtypes, debug=debug, fastmath=fastmath).source


# NumPy dtypes by their usual names, for shared/local array declarations.
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32 = _np.float16, _np.float32

#: Kernel-side names and the kernel_api module that defines each.
_KERNEL_API = {
    "grid": "indexing", "gridsize": "indexing", "threadgroup_position": "indexing",
    "thread_in_threadgroup": "indexing", "threads_per_threadgroup": "indexing",
    "threadgroups_per_grid": "indexing", "threadIdx": "indexing", "blockIdx": "indexing",
    "blockDim": "indexing", "gridDim": "indexing", "laneid": "indexing", "warpsize": "indexing",
    "simd_lane_id": "indexing", "simd_group_id": "indexing",
    "shared": "memory", "local": "memory", "const": "memory", "shared_array": "memory",
    "local_array": "memory",
    "syncthreads": "sync", "barrier": "sync", "syncthreads_count": "sync", "syncthreads_and": "sync",
    "syncthreads_or": "sync", "threadfence": "sync", "threadfence_block": "sync",
    "simdgroup_barrier": "sync", "syncwarp": "sync", "threadfence_system": "sync", "nanosleep": "sync",
    "cg": "sync",
    "atomic": "atomics", "atomic_add": "atomics", "atomic_sub": "atomics", "atomic_min": "atomics",
    "atomic_max": "atomics", "atomic_exchange": "atomics", "atomic_compare_exchange": "atomics",
    "simd_sum": "simd", "simd_product": "simd", "simd_max": "simd", "simd_min": "simd",
    "simd_prefix_exclusive_sum": "simd", "simd_prefix_inclusive_sum": "simd", "simd_shuffle": "simd",
    "simd_shuffle_up": "simd", "simd_shuffle_down": "simd", "simd_shuffle_xor": "simd",
    "simd_broadcast": "simd", "simd_all": "simd", "simd_any": "simd", "simd_ballot": "simd",
    "shfl_sync": "simd", "shfl_up_sync": "simd", "shfl_down_sync": "simd", "shfl_xor_sync": "simd",
    "all_sync": "simd", "any_sync": "simd", "ballot_sync": "simd", "activemask": "simd",
}


def __getattr__(name):
    module = _KERNEL_API.get(name)
    if module is None:
        raise AttributeError(f"module 'numba_metal.metal' has no attribute {name!r}")
    importlib.import_module("numba_metal.kernel_api")  # registers every family with the compiler
    value = getattr(importlib.import_module(f"numba_metal.kernel_api.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_KERNEL_API))
