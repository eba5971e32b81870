"""Making arrays: ``device_array``, ``to_device``, ``mapped_array`` and numba.cuda's other constructors
(pinned and managed arrays are mapped ones: Apple silicon's memory is unified), the ``mapped`` and
``pinned`` blocks, ``defer_cleanup`` and ``open_ipc_array``. The array classes are :mod:`.arrays`'s,
as numba-cuda keeps ``api.py`` apart from ``devicearray.py``.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from numba_metal.errors import MetalTypeError, MetalValueError, NumbaMetalError, UnsupportedFeatureError

from . import device as _device
from . import init_shadow as _init_shadow
from . import streams as _streams
from .arrays import (MAX_ARRAY_BYTES, DeviceNDArray, as_dtype, contiguous_strides, copy_into_host, from_host,
                     new_buffer, normalize_shape, as_mapped)
from .wrapping import wrap_host_memory


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0) -> DeviceNDArray:
    """An uninitialised (zero-filled) array on the device. The default dtype is float64, as numba.cuda's
    and NumPy's (float64 kernels compute exactly, in software on an Apple GPU: pass ``np.float32`` for
    the hardware's speed).

    Raises:
        UnsupportedPlatformError: the first use of a device finds none to use: no Metal GPU and the CPU
            reference device not chosen (``NUMBA_METAL_DEVICE=cpu`` or ``select_device('cpu')``), or
            ``NUMBA_METAL_DEVICE`` naming no device kind.
        MetalTypeError: ``shape`` is not an int or a sequence of ints.
        MetalValueError: a dimension is negative; the array would span more than ``2**63 - 1`` bytes.
        NumbaMetalError: ``dtype`` is not a NumPy dtype or is an object dtype; ``order`` is not ``'C'`` or
            ``'F'``; ``strides`` do not fit ``shape``.
        MetalRuntimeError: the runtime library cannot be loaded, or the device cannot allocate the memory (the
            message names the size).
    """
    return _new_array(shape, dtype, strides, order, stream, True)


def _new_array(shape, dtype, strides, order, stream, uninitialised: bool) -> DeviceNDArray:
    """``device_array``'s work; ``uninitialised``: the sanitizer's init check may track it."""
    ctx = _device.current()
    dtype = as_dtype(dtype)
    shape = normalize_shape(shape)
    if order not in ("C", "F"):
        raise NumbaMetalError(f"order must be 'C' or 'F', not {order!r}")
    if strides is None:
        strides = contiguous_strides(shape, dtype.itemsize, order)
        nbytes = math.prod(shape) * dtype.itemsize   # Python integers: sizes never wrap
    else:
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape) or any(s < 0 for s in strides):
            raise NumbaMetalError(f"strides {strides} do not fit shape {shape}")
        nbytes = (sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize) if all(shape) else 0
    if nbytes > MAX_ARRAY_BYTES:
        raise MetalValueError(f"an array of shape {shape} and dtype {dtype} would take {nbytes} bytes, more than "
                              f"the {MAX_ARRAY_BYTES} bytes any array can have (sizes and indices are 64-bit "
                              "signed integers)")
    buf = new_buffer(ctx, nbytes)
    if uninitialised and _init_shadow.ARMED:   # the sanitizer's init check: uninitialised memory (init_shadow.py)
        _init_shadow.track(buf, nbytes)
    return DeviceNDArray.on_buffer(buf, 0, shape, strides, dtype, ctx, stream)


def device_array_like(ary, stream=0) -> DeviceNDArray:
    """A device array with the shape and dtype of ``ary``, laid out like it (C or F; a strided view as NumPy's
    ``zeros_like``, its axes in the order of their strides).

    Raises:
        UnsupportedPlatformError, MetalTypeError, MetalValueError, NumbaMetalError, MetalRuntimeError: as
            ``device_array``.
        AttributeError: ``ary`` has no ``shape`` or ``dtype``.
    """
    order = "F" if (getattr(ary, "ndim", 1) > 1 and _flag(ary, "F_CONTIGUOUS")
                    and not _flag(ary, "C_CONTIGUOUS")) else "C"
    return device_array(ary.shape, ary.dtype, strides=_strides_like(ary), order=order, stream=stream)


def _strides_like(ary):
    """The strides of a new contiguous array laid out like the non-contiguous ``ary`` (its axes in the order
    of their strides, smallest fastest: NumPy's ``order='K'``, as numba.cuda's ``*_like`` functions do);
    None for a contiguous or 1-d ``ary``, whose order says it."""
    if len(ary.shape) <= 1 or _flag(ary, "C_CONTIGUOUS") or _flag(ary, "F_CONTIGUOUS"):
        return None
    strides, step = [0] * len(ary.shape), ary.dtype.itemsize
    for axis in sorted(range(len(ary.shape)), key=lambda k: ary.strides[k]):
        strides[axis] = step
        step *= ary.shape[axis]
    return tuple(strides)


def _flag(ary, name) -> bool:
    flags = ary.flags
    return bool(flags[name]) if isinstance(flags, dict) else bool(getattr(flags, name.lower(), False) or
                                                                  flags[name])


def to_device(obj, stream=0, copy=True, to=None) -> DeviceNDArray:
    """Copy a host array to the device (``to``: an existing device array to copy into).

    A non-contiguous array is stored as a C-contiguous copy.

    Raises:
        NumbaMetalError: ``obj`` is None or becomes a NumPy array of Python objects.
        MetalTypeError: ``to`` is a device array of another dtype.
        MetalValueError: ``to`` is a device array of another shape.
        UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    if isinstance(obj, DeviceNDArray):
        return obj
    if obj is None:
        raise NumbaMetalError("to_device(None): there is nothing to copy; pass a NumPy array (or a sequence "
                              "of numbers), or use metal.device_array(shape, dtype) for an uninitialised one")
    ary = np.asarray(obj)
    if ary.dtype.hasobject:
        raise NumbaMetalError(f"to_device: {type(obj).__name__} becomes a NumPy array of Python objects, "
                              "which cannot go to the device; pass an array or sequence of numbers")
    if to is not None:
        to.copy_to_device(ary, stream=stream)
        return to
    return from_host(ary, stream=stream, copy=copy)


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0, portable=False, wc=False):
    """A NumPy array in unified memory that kernels read and write directly, with no copies.

    Launches that use it are asynchronous: synchronize before reading results on the host.

    Raises:
        UnsupportedPlatformError, MetalTypeError, MetalValueError, NumbaMetalError, MetalRuntimeError: as
            ``device_array``.
    """
    # not tracked by the sanitizer's init check: the host writes mapped memory directly, unseen
    return as_mapped(_new_array(shape, dtype, strides, order, 0, False))


def mapped_array_like(ary, stream=0):
    """A mapped array with the shape and dtype of ``ary``, laid out like it (as ``device_array_like``).

    Raises:
        UnsupportedPlatformError, MetalTypeError, MetalValueError, NumbaMetalError, MetalRuntimeError: as
            ``device_array``.
        AttributeError: ``ary`` is not an array (no ``shape``, ``dtype`` or ``flags``).
    """
    order = "F" if ary.ndim > 1 and ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    return mapped_array(ary.shape, ary.dtype, strides=_strides_like(ary), order=order, stream=stream)


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """numba.cuda's page-locked host array. Apple silicon's memory is unified, so this is
    :func:`mapped_array`: host memory that kernels also use without copies.

    Raises:
        UnsupportedPlatformError, MetalTypeError, MetalValueError, NumbaMetalError, MetalRuntimeError: as
            ``device_array``.
    """
    return mapped_array(shape, dtype, strides=strides, order=order)


def pinned_array_like(ary):
    """numba.cuda's ``pinned_array_like``: on unified memory, the same as :func:`mapped_array_like`.

    Raises:
        UnsupportedPlatformError, MetalTypeError, MetalValueError, NumbaMetalError, MetalRuntimeError: as
            ``device_array``.
        AttributeError: ``ary`` is not an array.
    """
    return mapped_array_like(ary)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0, attach_global=True):
    """numba.cuda's managed (unified) memory: on Apple silicon all memory is unified, so this is
    :func:`mapped_array`.

    Raises:
        UnsupportedPlatformError, MetalTypeError, MetalValueError, NumbaMetalError, MetalRuntimeError: as
            ``device_array``.
    """
    return mapped_array(shape, dtype, strides=strides, order=order, stream=stream)


@contextlib.contextmanager
def pinned(*arylist):
    """numba.cuda's context manager that page-locks host arrays for faster copies. Metal has no
    page-locking to do (memory is unified), so this does nothing.

    Raises:
        nothing: the block does nothing.
    """
    yield


@contextlib.contextmanager
def mapped(*arylist, stream=0, portable=False, wc=False):
    """Device arrays over host NumPy arrays for the block (numba.cuda's ``mapped``): one device array,
    or a list of them for several. A page-aligned writeable array in mapped memory (``np.memmap``, an
    ``mmap.mmap``; any page-aligned memory with ``NUMBA_METAL_WRAP_ALIGNED_HOST_MEMORY=1``) is used in
    place, with no copy, when the device accepts it; any other is copied in, and copied back when the block
    ends (after the work of ``stream``): read its results after the block. Memory used in place is kept
    alive until the work queued on it completes, even if the arrays are dropped first.

    Raises:
        MetalTypeError: an argument is not a NumPy array.
        UnsupportedPlatformError: as ``get_current_device``.
        MetalRuntimeError: a copy cannot be allocated, or, when the block ends, the work waited for before
            copying back failed.
        KernelBoundsError, KernelRaisedError: as ``synchronize``.
    """
    ctx = _device.current()
    devices, copies = [], []
    for ary in arylist:
        if not isinstance(ary, np.ndarray):
            raise MetalTypeError(f"mapped() takes NumPy arrays, not {type(ary).__name__}")
        wrapped = wrap_host_memory(ctx, ary)
        if wrapped is not None:
            dev = DeviceNDArray.on_buffer(wrapped[0], wrapped[1], ary.shape, ary.strides, ary.dtype, ctx)
        else:
            dev = to_device(ary, stream=stream)
            copies.append((dev, ary))
        devices.append(dev)
    try:
        yield devices[0] if len(devices) == 1 else devices
    finally:
        if copies:
            _streams.wait_for_host_access(ctx, stream)
            for dev, ary in copies:
                if ary.flags.writeable:
                    copy_into_host(dev, ary)


def open_ipc_array(handle, shape, dtype, strides=None, offset=0):
    """numba.cuda's ``open_ipc_array``: always raises :class:`UnsupportedFeatureError` (no Metal equivalent).

    Raises:
        UnsupportedFeatureError: always: CUDA IPC handles have no Metal equivalent.
    """
    raise UnsupportedFeatureError(
        "open_ipc_array(): CUDA IPC handles have no Metal equivalent; to share data between processes use "
        "multiprocessing.shared_memory (or a file) on the host and metal.to_device() in each process")


@contextlib.contextmanager
def defer_cleanup():
    """numba.cuda's block that defers freeing device memory. A Metal buffer is freed only once no
    queued work uses it, whenever it is released, so there is nothing to defer.

    Raises:
        nothing: the block does nothing.
    """
    yield


