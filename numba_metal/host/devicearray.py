"""numba.cuda's ``numba.cuda.cudadrv.devicearray`` names over numba-metal's arrays: ``DeviceNDArray``,
``is_cuda_ndarray``, ``is_contiguous``, ``array_core``, ``sentry_contiguous`` and ``auto_device``, with
numba.cuda's meanings (numba-cuda's ``numba/cuda/cudadrv/devicearray.py``), reachable as
``numba_metal.metal.devicearray`` and ``numba_metal.metal.cudadrv.devicearray``.
"""

from __future__ import annotations

import numpy as np

from numba_metal.errors import MetalValueError

from .arrays import DeviceNDArray, is_device_array

__all__ = ["DeviceNDArray", "array_core", "auto_device", "from_array_like", "is_contiguous", "is_cuda_ndarray", "require_cuda_ndarray",
           "sentry_contiguous", "verify_cuda_ndarray_interface"]

#: numba.cuda's name for ``is_device_array``
is_cuda_ndarray = is_device_array

#: the message of :func:`sentry_contiguous` (numba.cuda keeps it as this module-level name)
errmsg_contiguous_buffer = ("Array contains non-contiguous buffer and cannot be transferred as a single memory "
                            "region. Please ensure contiguous buffer with numpy .ascontiguousarray()")


def require_cuda_ndarray(obj) -> None:
    """Check that ``obj`` is a device array (numba.cuda's name).

    Raises:
        MetalValueError: it is not (also a ValueError, numba.cuda's class).
    """
    if not is_device_array(obj):
        raise MetalValueError(f"a device array is required, not {type(obj).__name__}; copy host data with "
                              "metal.to_device()")


def verify_cuda_ndarray_interface(obj) -> None:
    """Check that ``obj`` is a device array with numba.cuda's array attributes: ``shape`` and ``strides``
    tuples, a NumPy ``dtype`` and an int ``size``.

    Raises:
        MetalValueError: ``obj`` is not a device array.
        AttributeError: one of those attributes is missing or of another type (numba.cuda's class).
    """
    require_cuda_ndarray(obj)
    for attr, kind in (("shape", tuple), ("strides", tuple), ("dtype", np.dtype), ("size", int)):
        if not isinstance(getattr(obj, attr, None), kind):
            raise AttributeError(f"a device array's {attr} must be a {kind.__name__}, not "
                                 f"{type(getattr(obj, attr, None)).__name__}")


def is_contiguous(ary) -> bool:
    """True if ``ary`` (a device or NumPy array) is C-contiguous once its broadcast (zero-stride) and size-1
    axes are ignored: numba.cuda's test, from the shape and strides alone.

    Raises:
        AttributeError: ``ary`` has no ``shape``, ``strides`` or ``dtype``.
    """
    expected = ary.dtype.itemsize
    for extent, stride in zip(reversed(ary.shape), reversed(ary.strides)):
        if extent > 1 and stride != 0:
            if stride != expected:
                return False
            expected *= extent
    return True


def array_core(ary):
    """``ary`` without its broadcast axes (each zero-stride axis indexed at 0): the memory it really spans.

    Raises:
        AttributeError: ``ary`` has no ``strides`` or ``size``.
    """
    if not ary.strides or not ary.size:
        return ary
    return ary[tuple(0 if stride == 0 else slice(None) for stride in ary.strides)]


def sentry_contiguous(ary) -> None:
    """Check that ``ary``'s memory (its :func:`array_core`) is one C- or F-contiguous region.

    Raises:
        MetalValueError: it is not (also a ValueError, numba.cuda's class; the message is
            ``errmsg_contiguous_buffer``, numba.cuda's text).
    """
    core = array_core(ary)
    if not core.flags["C_CONTIGUOUS"] and not core.flags["F_CONTIGUOUS"]:
        raise MetalValueError(errmsg_contiguous_buffer)


def auto_device(obj, stream=0, copy=True, user_explicit=False):
    """``(device array, converted)``: ``obj`` itself and False if it is a device array; else a new device
    array of ``obj`` (a NumPy array, a scalar or a sequence, as ``np.asarray`` makes it), holding its
    values when ``copy`` (on ``stream``), and True. numba.cuda's function; ``user_explicit`` is accepted
    and unused (numba.cuda uses it only to decide a performance warning).

    Raises:
        MetalValueError: ``obj`` is a non-contiguous NumPy array (:func:`sentry_contiguous`; copy it with
            ``np.ascontiguousarray`` first).
        NumbaMetalError, UnsupportedPlatformError, MetalRuntimeError: as ``to_device``.
    """
    from .allocation import to_device
    if is_device_array(obj):
        return obj, False
    ary = np.asarray(obj)
    sentry_contiguous(ary)
    if copy:
        return to_device(ary, stream=stream), True
    return DeviceNDArray(ary.shape, ary.strides if ary.ndim else (), ary.dtype, stream=stream), True


def from_array_like(ary, stream=0, gpu_data=None) -> DeviceNDArray:
    """A new device array like ``ary``: its shape, strides and dtype (numba.cuda's function, which
    ``cuda.device_array_like`` differs from by making a contiguous array), uninitialised (zero-filled).

    Raises:
        UnsupportedFeatureError: ``gpu_data`` is given (numba.cuda's existing CUDA allocation; numba-metal
            arrays own their Metal buffers).
        NumbaMetalError, UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    if gpu_data is not None:
        from numba_metal.errors import UnsupportedFeatureError
        raise UnsupportedFeatureError("from_array_like(gpu_data=...): numba.cuda's CUDA allocation has no Metal "
                                      "counterpart; leave gpu_data out to allocate a new array")
    return DeviceNDArray(ary.shape, tuple(ary.strides) if ary.ndim else (), np.dtype(ary.dtype), stream=stream)
