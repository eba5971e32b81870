"""Arrays of other libraries: ``metal.from_dlpack``, ``as_metal_array``, ``is_metal_array``, and objects
exporting DLPack passed to kernels. numba.cuda's CUDA Array Interface names: ``as_cuda_array`` and
``is_cuda_array`` are ``as_metal_array`` and ``is_metal_array`` (Mac libraries exchange arrays through
DLPack), ``from_cuda_array_interface`` is refused (its pointer is CUDA device memory, which a Mac has not).

Importing follows the array API's ``from_dlpack``: the producer's ``__dlpack_device__`` says where the
memory is, its ``__dlpack__(stream=None, max_version=(1, 1))`` hands over a capsule after it has waited
for its own pending work (``stream=None``: the producer synchronises). Host memory (kDLCPU) becomes a
device array without a copy when Metal could wrap it (``makeBuffer(bytesNoCopy:)``: the lowest address
the tensor touches is page-aligned and the tensor is writable); otherwise it is copied, unless
``copy=False`` forbids it (DLPackError, a BufferError). Metal memory (kDLMetal: an MTLBuffer and a byte
offset, the convention of PyTorch's MPS and MLX) is wrapped on a Metal device; the CPU reference device
has no MTLBuffers. The wrapped memory stays the producer's: the device array keeps the producer's tensor
alive and calls its DLPack deleter when it is gone.
"""

from __future__ import annotations

import numpy as np

from numba_metal.errors import (DLPackError, KernelLaunchError, MetalDeviceLostError, MetalRuntimeError,
                                UnsupportedFeatureError, UnsupportedPlatformError)

from . import device as _device
from .allocation import device_array, to_device
from .arrays import DeviceNDArray, host_view


def _dl():
    """The DLPack module, loaded on the first exchange (with ctypes), not with numba-metal."""
    from . import dlpack
    return dlpack


_CUDA_MEMORY = ("{what} describes CUDA device memory (the CUDA Array Interface), which a Mac does not have; "
                "numba-metal takes arrays through DLPack: pass a NumPy array, a device array, or an array of a "
                "library exporting DLPack (PyTorch, MLX, JAX) to metal.from_dlpack or metal.as_metal_array")


def _capsule_of(obj, stream):
    """``obj.__dlpack__`` asked for a versioned capsule, or a legacy one from a producer that predates
    ``max_version`` (the array API's rule: retry without it on TypeError). A producer's refusal (e.g.
    PyTorch's for a tensor that requires grad) becomes a DLPackError quoting it."""
    try:
        try:
            return obj.__dlpack__(stream=stream, max_version=_dl().VERSION)
        except TypeError:
            return obj.__dlpack__(stream=stream)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise DLPackError(f"the {type(obj).__name__} refused to export DLPack: {e}") from e


def _device_of(obj) -> tuple[int, int]:
    try:
        dev = obj.__dlpack_device__()
        return int(dev[0]), int(dev[1])
    except AttributeError:
        if hasattr(obj, "__cuda_array_interface__"):
            raise DLPackError(_CUDA_MEMORY.format(what=f"a {type(obj).__name__}")) from None
        raise DLPackError(f"a {type(obj).__name__} does not export DLPack (it has no __dlpack_device__); "
                          "pass a NumPy array, a device array, or an array of a library that supports DLPack "
                          "(PyTorch, MLX, JAX, CuPy...)") from None


def from_dlpack(obj, *, device=None, copy=None) -> DeviceNDArray:
    """A device array of ``obj``'s data, from any object exporting DLPack (NumPy, PyTorch, MLX...).

    Zero-copy where the memory allows it (page-aligned writable host memory, Metal buffers on a Metal
    device); ``copy=None`` copies otherwise, ``copy=True`` always copies, ``copy=False`` never does
    (DLPackError when it would have to). ``device``: None or the current device. The producer's pending
    work is waited for first (it is asked with ``stream=None``).

    Raises:
        DLPackError: ``obj`` does not export DLPack or its export fails; its memory is on a device Metal cannot
            use (CUDA, or a Metal buffer on the CPU reference device); its dtype or strides have no device-array
            form; ``copy=False`` where a copy is needed; ``device`` is not the current device.
        UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    ctx = _device.current()
    if device is not None and device is not ctx and device != ctx.kind:
        raise DLPackError(f"from_dlpack(device={device!r}): numba-metal imports to the current device "
                          f"({ctx.info.name!r}); select the device first with metal.select_device()")
    if isinstance(obj, DeviceNDArray):
        if obj.context is not ctx:
            raise DLPackError(f"the device array lives on {obj.context.info.name!r}, not on the current device")
        return _copy(obj) if copy else obj
    kind, index = _device_of(obj)
    if kind not in (_dl().DeviceType.kDLCPU, _dl().DeviceType.kDLMetal) or index != 0:
        raise DLPackError(f"the {type(obj).__name__}'s memory is on {_dl().device_name(kind)} device {index}, "
                          "which a Metal device cannot use; move it to the CPU (or to Metal) first")
    if kind == _dl().DeviceType.kDLMetal and ctx.kind == "cpu":
        raise DLPackError(f"the {type(obj).__name__} is in a Metal buffer, which the CPU reference device "
                          "cannot use; move it to the CPU first (e.g. tensor.cpu())")
    tensor = _dl().consume(_capsule_of(obj, None))
    return _from_tensor(ctx, tensor, copy, type(obj).__name__)


def _copy(dev: DeviceNDArray) -> DeviceNDArray:
    out = device_array(dev.shape, dev.dtype, order="F" if dev.layout == "F" else "C")
    np.copyto(np.asarray(out), np.asarray(dev))
    return out


def _from_tensor(ctx, tensor: "dlpack.Imported", copy, what: str) -> DeviceNDArray:
    if tensor.device[0] == _dl().DeviceType.kDLMetal:
        if copy:
            return _copy(_wrap_metal(ctx, tensor))
        return _wrap_metal(ctx, tensor)
    if tensor.size == 0:
        tensor.release()
        return device_array(tensor.shape, tensor.dtype)
    low, span = tensor.extent()
    lowest = tensor.address + low
    page = ctx.info.page_size
    reason = None
    if not ctx.info.unified_memory:
        reason = "the device has no unified memory"
    elif lowest % page:
        reason = (f"its lowest address 0x{lowest:x} is not aligned to the page size ({page} bytes), which "
                  "Metal's makeBuffer(bytesNoCopy:) requires")
    elif tensor.read_only:
        reason = "the producer marked it read-only, and kernels could write a device array"
    if reason is None and not copy:
        # DLPack asks to share (copy None or False): any page-aligned memory is tried, and a refusal is
        # answered as any other reason to copy (host/wrapping.py says why Metal may refuse).
        length = (span + page - 1) // page * page
        try:
            buf = ctx.device.wrap_buffer(lowest, length, tensor)
            return DeviceNDArray.on_buffer(buf, -low, tensor.shape, tensor.strides, tensor.dtype, ctx)
        except UnsupportedPlatformError as e:
            reason = f"the device refused to use this memory in place ({e})"
    if copy is False:
        tensor.release()
        raise DLPackError(f"the {what} cannot be used without a copy: {reason}; metal.from_dlpack(x) (copy=None) "
                          "copies it, or allocate it page-aligned (e.g. metal.mapped_array) to share it")
    view = host_view(tensor, tensor.address, tensor.shape, tensor.strides, tensor.dtype, readonly=True)
    return to_device(view)


def _wrap_metal(ctx, tensor: "dlpack.Imported") -> DeviceNDArray:
    try:
        buf = ctx.device.wrap_native_buffer(tensor.data, tensor)
    except MetalDeviceLostError:
        raise
    except MetalRuntimeError as e:  # an MTLBuffer numba-metal cannot use: private storage, untracked hazards
        tensor.release()
        raise DLPackError(f"the kDLMetal tensor's MTLBuffer cannot be used: {e}") from None
    low, span = tensor.extent() if tensor.size else (0, 0)
    if tensor.byte_offset + low < 0 or tensor.byte_offset + low + span > buf.nbytes:
        raise DLPackError(f"the DLPack tensor (byte offset {tensor.byte_offset}, shape {tensor.shape}, strides "
                          f"{tensor.strides}) reaches outside its MTLBuffer of {buf.nbytes} bytes")
    return DeviceNDArray.on_buffer(buf, tensor.byte_offset, tensor.shape, tensor.strides, tensor.dtype, ctx)


def as_metal_array(obj, sync=True) -> DeviceNDArray:
    """``obj`` as a device array sharing its memory (numba.cuda's ``as_cuda_array``); DLPackError when that
    needs a copy. ``sync=False`` lets a Metal producer skip waiting for its work (DLPack's ``stream=-1``:
    the caller synchronises).

    Raises:
        DLPackError: as ``from_dlpack(obj, copy=False)``: no DLPack export, memory a Metal device cannot use, or
            memory that cannot be shared without a copy (not page-aligned, read-only).
        UnsupportedPlatformError, MetalRuntimeError: as ``device_array``.
    """
    if isinstance(obj, DeviceNDArray):
        return obj
    if not sync:
        ctx = _device.current()
        kind, _ = _device_of(obj)
        if kind == _dl().DeviceType.kDLMetal and ctx.kind != "cpu":
            return _from_tensor(ctx, _dl().consume(_capsule_of(obj, -1)), False, type(obj).__name__)
    return from_dlpack(obj, copy=False)


def is_metal_array(obj) -> bool:
    """True for a device array and for objects whose DLPack device is Metal (numba.cuda's
    ``is_cuda_array``): the objects kernels use in place on a Metal device.

    Raises:
        nothing: any failure answers False.
    """
    if isinstance(obj, DeviceNDArray):
        return True
    try:
        return int(obj.__dlpack_device__()[0]) == _dl().DeviceType.kDLMetal
    except Exception:  # noqa: BLE001 - "is it" must not raise for any object
        return False


def kernel_arguments(args) -> tuple:
    """A launch's arguments with objects exporting DLPack turned into arrays a kernel takes: host memory
    becomes a NumPy view (then used in place or copied in and back, as NumPy arrays are; read-only only
    when a versioned capsule says so), Metal memory a device array. Other arguments are returned as they
    are."""
    if not any(_exports_dlpack(a) for a in args):
        return args
    return tuple(_kernel_argument(a, i) if _exports_dlpack(a) else a for i, a in enumerate(args))


def _exports_dlpack(value) -> bool:
    return (not isinstance(value, (np.ndarray, DeviceNDArray, np.generic))
            and hasattr(type(value), "__dlpack__"))


def _kernel_argument(value, position):
    try:
        kind, index = _device_of(value)
        if kind == _dl().DeviceType.kDLCPU:
            # Our own view rather than np.from_dlpack's: NumPy makes legacy (unversioned) capsules read-only,
            # and a kernel's writes into a read-only argument would go to a copy nobody sees.
            tensor = _dl().consume(_capsule_of(value, None))
            return host_view(tensor, tensor.address, tensor.shape, tensor.strides, tensor.dtype,
                             readonly=tensor.read_only)
        return from_dlpack(value, copy=False)
    except (DLPackError, BufferError, RuntimeError, TypeError, ValueError) as e:
        raise KernelLaunchError(f"argument {position} ({type(value).__name__}) exports DLPack but cannot be "
                                f"passed to a kernel: {e}") from None


#: numba.cuda's names for the same operations: a numba.cuda program renamed to ``metal.`` takes the
#: arrays of Mac libraries, which export DLPack, not the CUDA Array Interface (docs/porting-from-numba-cuda.md).
as_cuda_array = as_metal_array
is_cuda_array = is_metal_array


def from_cuda_array_interface(desc, owner=None, sync=True):
    """numba.cuda's ``from_cuda_array_interface``: always raises :class:`UnsupportedFeatureError`. The
    interface's ``data`` pointer is CUDA device memory, which a Mac does not have; numba-metal imports
    arrays through DLPack (``metal.from_dlpack``, ``metal.as_metal_array``).

    Raises:
        UnsupportedFeatureError: always (the advice names ``metal.from_dlpack``).
    """
    raise UnsupportedFeatureError(_CUDA_MEMORY.format(what="from_cuda_array_interface(): the interface"))
