"""Device arrays: ``DeviceNDArray``, ``to_device``, ``device_array``, ``mapped_array``.

All numba-metal memory is shared storage (Apple silicon has unified memory; the CPU reference device
is host memory), so every buffer has a host address. Host-side views, copies and slicing therefore
go through NumPy views of that memory, after waiting for the device work that may use it. Kernels
bind a buffer at a byte offset; shape and strides travel in the argument block.
"""

from __future__ import annotations

import numpy as np

from numba_metal import profiling
from numba_metal.errors import DLPackError, KernelLaunchError, NumbaMetalError, UnsupportedFeatureError

from . import device as _device
from . import streams as _streams


def _as_dtype(dtype) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise NumbaMetalError(f"{dtype!r} is not a NumPy dtype: {e}") from None


def _normalize_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise NumbaMetalError(f"shape must be an int or a tuple of ints, not {shape!r}") from None
    if any(s < 0 for s in shape):
        raise NumbaMetalError(f"negative dimensions are not allowed: {shape}")
    return shape


def _contiguous_strides(shape, itemsize, order) -> tuple[int, ...]:
    strides = [0] * len(shape)
    acc = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for k in dims:
        strides[k] = acc
        acc *= max(shape[k], 1)
    return tuple(strides)


def layout_of(shape, strides, itemsize) -> str:
    """Numba's layout letter for an array geometry: 'C', 'F' or 'A'."""
    if strides == _contiguous_strides(shape, itemsize, "C") or _is_contig(shape, strides, itemsize, "C"):
        return "C"
    if _is_contig(shape, strides, itemsize, "F"):
        return "F"
    return "A"


def _is_contig(shape, strides, itemsize, order) -> bool:
    if any(s == 0 for s in shape):
        return True
    acc = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for k in dims:
        if shape[k] != 1 and strides[k] != acc:
            return False
        acc *= shape[k]
    return True


class ArrayKey:
    """The key of arrays of one dtype, number of dimensions, layout and writability: what a launch looks a
    specialisation up by. Interned (:func:`array_key`), so it compares and hashes by identity: the launch
    path hashes keys on every launch, and hashing a NumPy dtype is slow."""

    __slots__ = ("dtype", "ndim", "layout", "readonly", "__weakref__")

    def __init__(self, dtype: np.dtype, ndim: int, layout: str, readonly: bool):
        self.dtype = dtype
        self.ndim = ndim
        self.layout = layout
        self.readonly = readonly

    def __repr__(self) -> str:
        return f"ArrayKey({self.dtype}, {self.ndim}, {self.layout!r}{', readonly' if self.readonly else ''})"

    def __reduce__(self):
        return (array_key, (self.dtype, self.ndim, self.layout, self.readonly))


_array_keys: dict = {}


def array_key(dtype, ndim: int, layout: str, readonly: bool = False) -> ArrayKey:
    """The (interned) key of arrays of this dtype, number of dimensions and layout."""
    spec = (np.dtype(dtype), int(ndim), layout, bool(readonly))
    key = _array_keys.get(spec)
    if key is None:
        key = _array_keys.setdefault(spec, ArrayKey(*spec))
    return key


_array_types: dict = {}


def array_type(dtype, ndim: int, layout: str, readonly: bool = False):
    """The Numba array type for a dtype, number of dimensions and layout (cached; imports Numba)."""
    key = (np.dtype(dtype), ndim, layout, readonly)
    ty = _array_types.get(key)
    if ty is None:
        from numba.core import types
        from numba.np.numpy_support import from_dtype
        try:
            nbdtype = from_dtype(key[0])
        except Exception:  # noqa: BLE001 - any dtype Numba cannot represent
            raise KernelLaunchError(f"arrays of dtype {key[0]} are not supported") from None
        ty = types.Array(nbdtype, ndim, layout, readonly=readonly)
        _array_types[key] = ty
    return ty


def element_binding(offset, shape, strides, itemsize) -> tuple:
    """(bind offset, element strides, origin) of an array at byte ``offset`` of its buffer as a kernel
    argument: the buffer is bound at the lowest address the array touches (negative strides reach below
    its first element), and the kernel finds element [0, ..., 0] at ``origin`` elements from there."""
    estrides = []
    low = 0
    for n, s in zip(shape, strides):
        if s % itemsize:
            raise KernelLaunchError(f"array strides {strides} are not multiples of its item size {itemsize}")
        estrides.append(s // itemsize)
        if s < 0 and n > 0:
            low += (n - 1) * s
    return offset + low, tuple(estrides), (-low) // itemsize


class DeviceNDArray:
    """An array in device memory, as numba.cuda's ``DeviceNDArray``.

    Slicing returns views that share memory; ``reshape``/``ravel`` work on contiguous arrays.
    ``buffer`` (the runtime buffer), ``offset`` (the byte offset of the first element in it), ``context``
    (the device context it lives on) and ``layout`` (Numba's 'C', 'F' or 'A') are what launches bind.
    """

    __slots__ = ("buffer", "offset", "shape", "strides", "dtype", "context", "layout", "key", "_nbtype",
                 "_binding", "__weakref__")

    def __init__(self, buffer, offset, shape, strides, dtype, context):
        self.buffer = buffer
        self.offset = int(offset)
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.dtype = np.dtype(dtype)
        self.context = context
        self.layout = layout_of(self.shape, self.strides, self.dtype.itemsize)
        self.key = None        # argument_key(), made by the first launch (read on every launch)
        self._nbtype = None
        self._binding = None   # binding(), made by the first launch

    def argument_key(self) -> "ArrayKey":
        """The (interned) key a launch looks this array's specialisation up by."""
        key = self.key
        if key is None:
            key = self.key = array_key(self.dtype, self.ndim, self.layout)
        return key

    def binding(self) -> tuple:
        """(bind offset, element strides, origin) of this array as a kernel argument, computed once (its
        geometry never changes): see :func:`element_binding`."""
        binding = self._binding
        if binding is None:
            binding = self._binding = element_binding(self.offset, self.shape, self.strides, self.itemsize)
        return binding

    # -- numba.cuda-compatible attributes ---------------------------------------------------

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def is_c_contiguous(self) -> bool:
        return self.layout == "C"

    def is_f_contiguous(self) -> bool:
        return self.layout == "F" or (self.ndim <= 1 and self.layout == "C")

    @property
    def flags(self) -> dict:
        return {"C_CONTIGUOUS": self.is_c_contiguous(), "F_CONTIGUOUS": self.is_f_contiguous()}

    def __repr__(self) -> str:
        return (f"<numba_metal DeviceNDArray shape={self.shape} dtype={self.dtype} "
                f"on {self.context.info.name!r}>")

    # -- host views of the shared memory ----------------------------------------------------

    def _host_view(self) -> np.ndarray:
        """A NumPy view of this array's memory (no wait; callers wait first)."""
        return _view_of(self.buffer, self.offset, self.shape, self.strides, self.dtype)

    # -- copies -----------------------------------------------------------------------------

    def copy_to_host(self, ary=None, stream=0):
        """Copy to a host NumPy array (a new one, or ``ary``), after the work that may write this array."""
        _streams.wait_for_host_access(self.context, stream)
        src = self._host_view()
        start = profiling.now_ns() if profiling.listeners else 0
        if ary is None:
            out = src.copy(order="K" if self.layout != "A" else "C")
            if start:
                profiling.emit("copy", direction="d2h", nbytes=self.nbytes, start_ns=start, end_ns=profiling.now_ns())
            return out
        if not isinstance(ary, np.ndarray):
            raise NumbaMetalError(f"copy_to_host(ary=...) needs a NumPy array, not {type(ary).__name__}")
        if ary.shape != self.shape or ary.dtype != self.dtype:
            raise NumbaMetalError(f"copy_to_host: destination has shape {ary.shape} and dtype {ary.dtype}, "
                                  f"but the device array has shape {self.shape} and dtype {self.dtype}")
        if ary.ctypes.data == src.ctypes.data and ary.strides == src.strides:
            return ary  # the destination is this very memory (unified memory): nothing to copy
        np.copyto(ary, src)
        if start:
            profiling.emit("copy", direction="d2h", nbytes=self.nbytes, start_ns=start, end_ns=profiling.now_ns())
        return ary

    def copy_to_device(self, ary, stream=0):
        """Copy a host array (or another device array) into this array."""
        _streams.wait_for_host_access(self.context, stream)
        if isinstance(ary, DeviceNDArray):
            src = ary._host_view()
        else:
            src = np.asarray(ary)
        if src.shape != self.shape:
            raise NumbaMetalError(f"copy_to_device: source shape {src.shape} does not match {self.shape}")
        if src.dtype != self.dtype:
            raise NumbaMetalError(f"copy_to_device: source dtype {src.dtype} does not match {self.dtype}")
        start = profiling.now_ns() if profiling.listeners else 0
        np.copyto(self._host_view(), src)
        if start:
            profiling.emit("copy", direction="d2d" if isinstance(ary, DeviceNDArray) else "h2d",
                       nbytes=self.nbytes, start_ns=start, end_ns=profiling.now_ns())

    # -- views --------------------------------------------------------------------------------

    def __getitem__(self, index):
        view = self._host_view()
        sub = view[index]
        if not isinstance(sub, np.ndarray) or (sub.ndim == 0 and _is_scalar_index(index, self.ndim)):
            _streams.wait_for_host_access(self.context, 0)
            return sub[()] if isinstance(sub, np.ndarray) else sub
        if not np.shares_memory(sub, view) and sub.size:
            raise UnsupportedFeatureError("advanced (fancy) indexing of device arrays is not supported; "
                                          "use slices and integers, which give views")
        return self._derived(sub)

    def _derived(self, sub: np.ndarray) -> "DeviceNDArray":
        base = self.buffer.address
        offset = sub.ctypes.data - base if sub.size else self.offset
        return DeviceNDArray(self.buffer, offset, sub.shape, sub.strides, sub.dtype, self.context)

    def reshape(self, *newshape, order="C"):
        if len(newshape) == 1 and not isinstance(newshape[0], (int, np.integer)):
            newshape = tuple(newshape[0])
        if self.layout == "A" and self.size > 1:
            raise UnsupportedFeatureError("reshape() of a non-contiguous device array would need a copy; "
                                          "copy it to a contiguous array first")
        view = self._host_view()
        try:
            sub = view.reshape(newshape, order=order)
        except ValueError as e:
            raise NumbaMetalError(f"cannot reshape {self.shape} to {newshape}: {e}") from None
        if sub.size and not np.shares_memory(sub, view):
            raise UnsupportedFeatureError("this reshape would need a copy of the device array")
        return self._derived(sub)

    def ravel(self, order="C"):
        return self.reshape(self.size, order=order)

    def view(self, dtype):
        sub = self._host_view().view(_as_dtype(dtype))
        return self._derived(sub)

    @property
    def T(self):
        return self._derived(self._host_view().T)

    def transpose(self, *axes):
        return self._derived(self._host_view().transpose(*axes))

    def get_numba_type(self):
        return self._numba_type()

    # -- interoperability: NumPy's array protocol, DLPack, pickling ---------------------------

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(d)``: a NumPy view of the array's memory (unified memory), after waiting for the work
        on every stream; it keeps the memory alive. ``copy=True``, or another ``dtype``, gives a copy."""
        _streams.wait_for_host_access(self.context, 0)
        view = _owning_view(self, self.buffer.address + self.offset)
        if dtype is not None and np.dtype(dtype) != self.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(copy=False) of a {self.dtype} device array as {np.dtype(dtype)} "
                                 "needs a copy")
            return view.astype(dtype)
        return view.copy() if copy else view

    def __dlpack_device__(self) -> tuple:
        """(kDLCPU, 0) on the CPU reference device; (kDLMetal, 0) on a Metal device (DLPack's device types)."""
        from . import dlpack as _dlpack   # deferred: ctypes and DLPack's structures load on first exchange
        kind = _dlpack.DeviceType.kDLCPU if self.context.kind == "cpu" else _dlpack.DeviceType.kDLMetal
        return (kind, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array (the array API's ``__dlpack__``; see docs/scaling.md).

        ``max_version``: a versioned capsule (DLPack 1.x) when its major version is 1 or more, else the
        legacy one. ``dl_device``: this array's device, or (kDLCPU, 0) on a Metal device (its shared
        memory is host memory). ``copy``: True exports a copy, False and None never copy. ``stream``:
        None waits for the work on every stream of the device first; on a Metal device -1 waits for
        nothing (the consumer synchronises) and a ``metal.stream()`` makes that stream's later work wait
        for the others' instead of the host.
        """
        from . import dlpack as _dlpack
        own = self.__dlpack_device__()
        target = own if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
        if target[1] != 0 or target[0] not in (own[0], _dlpack.DeviceType.kDLCPU):
            raise DLPackError(f"a device array on {self.context.info.name!r} cannot be exported to "
                              f"{_dlpack.device_name(target[0])} device {target[1]}; it can be exported "
                              f"to {_dlpack.device_name(own[0])} 0 or kDLCPU 0")
        _synchronize_for_export(self.context, stream, on_host=target[0] == _dlpack.DeviceType.kDLCPU)
        src = self
        if copy:   # a new buffer on this array's device (which need not be the current one)
            strides = _contiguous_strides(self.shape, self.itemsize, "F" if self.layout == "F" else "C")
            src = DeviceNDArray(_new_buffer(self.context, self.nbytes), 0, self.shape, strides, self.dtype,
                                self.context)
            np.copyto(src._host_view(), self._host_view())
        versioned = max_version is not None and int(max_version[0]) >= 1
        version = min(_dlpack.VERSION, (int(max_version[0]), int(max_version[1]))) if versioned else None
        if target[0] == _dlpack.DeviceType.kDLCPU:
            data, byte_offset = src.buffer.address + src.offset, 0
        else:
            data, byte_offset = src.buffer.native_handle(), src.offset
        return _dlpack.export(data, byte_offset, src.shape, src.strides, src.dtype, target, src,
                              versioned=versioned, version=version or _dlpack.VERSION, copied=bool(copy))

    def __reduce__(self):
        # As numba.cuda's: a device array pickles as its host data and unpickles onto the current device.
        return (to_device, (self.copy_to_host(),))

    def _numba_type(self):
        ty = self._nbtype
        if ty is None:
            ty = self._nbtype = array_type(self.dtype, self.ndim, self.layout)
        return ty


def _is_scalar_index(index, ndim) -> bool:
    if isinstance(index, (int, np.integer)):
        return ndim == 1
    if isinstance(index, tuple):
        return len(index) == ndim and all(isinstance(i, (int, np.integer)) for i in index)
    return False


def _view_of(buffer, offset, shape, strides, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if any(s == 0 for s in shape):
        return np.empty(shape, dtype)
    # (0-d views too are at their offset: ``d[3, ...]`` is element 3.)
    return np.ndarray(shape, dtype, buffer=buffer.memory(), offset=offset, strides=strides)


class _MemoryOwner:
    """What a NumPy view handed out of numba-metal keeps alive: the buffer (or any owner), with the view's
    geometry as NumPy's array interface."""

    def __init__(self, owner, address, shape, strides, dtype, readonly=False):
        self.owner = owner
        self.__array_interface__ = {"version": 3, "shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                    "descr": np.dtype(dtype).descr, "data": (address, readonly),
                                    "strides": tuple(strides)}


def _owning_view(dev: DeviceNDArray, address: int) -> np.ndarray:
    """A NumPy view of ``dev``'s elements (element 0 at ``address``) that keeps its buffer alive."""
    if dev.size == 0:
        return np.empty(dev.shape, dev.dtype)
    return np.asarray(_MemoryOwner(dev.buffer, address, dev.shape, dev.strides, dev.dtype))


def host_view(owner, address, shape, strides, dtype, readonly=False) -> np.ndarray:
    """A NumPy view of host memory at ``address`` that keeps ``owner`` alive."""
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype)
    return np.asarray(_MemoryOwner(owner, address, shape, strides, dtype, readonly))


def _synchronize_for_export(ctx, stream, on_host: bool) -> None:
    """The wait DLPack asks of a producer before it hands its memory over (see ``__dlpack__``)."""
    if stream is None:
        _streams.wait_for_host_access(ctx, 0)
        return
    if on_host:
        raise DLPackError(f"stream={stream!r}: a kDLCPU export takes stream=None (the array API: device types "
                          "without streams accept only None); numba-metal then waits for the device's work")
    if isinstance(stream, int) and not isinstance(stream, bool) and stream == -1:
        return
    if isinstance(stream, _streams.Stream):
        # The consumer will use the memory on ``stream``: its later work waits for every other queue's
        # work so far, on the device, without blocking the host.
        target = _streams.resolve(stream, ctx)
        for queue in ctx.all_queues():
            if queue is not target:
                target.wait_for(queue, queue.marker())
                queue.flush()
        return
    raise DLPackError(f"stream={stream!r} is not a stream numba-metal knows: pass None (wait for the work), "
                      "-1 (no synchronisation: the consumer synchronises) or a metal.stream()")


def broadcast_to(dev: DeviceNDArray, shape) -> DeviceNDArray:
    """A view of ``dev`` broadcast to ``shape`` (stride 0 along broadcast axes)."""
    if dev.shape == tuple(shape):
        return dev
    return dev._derived(np.broadcast_to(dev._host_view(), shape))


def with_unit_axis(dev: DeviceNDArray) -> DeviceNDArray:
    """``dev`` viewed with a trailing axis of length 1."""
    view = dev._host_view()
    return dev._derived(view.reshape(view.shape + (1,)) if view.flags.c_contiguous else view[..., None])


def copy_into_host(dev: DeviceNDArray, host: np.ndarray) -> None:
    """Copy ``dev`` into the host array ``host`` now, without waiting (the caller has waited)."""
    np.copyto(host, dev._host_view())


class MappedNDArray(np.ndarray):
    """A NumPy array in unified memory: kernels use it directly, with no copies (``mapped_array``).

    ``device_buffer`` is the runtime buffer holding it and ``device_context`` the device it is on (None for
    arrays NumPy derives from it by computing, which keep the class but not the memory).
    """

    def __array_finalize__(self, obj):
        self.device_buffer = getattr(obj, "device_buffer", None)
        self.device_context = getattr(obj, "device_context", None)


# ---------------------------------------------------------------------------------------------


def _new_buffer(ctx, nbytes):
    if not profiling.listeners:
        return ctx.device.new_buffer(max(int(nbytes), 1))
    start = profiling.now_ns()
    buf = ctx.device.new_buffer(max(int(nbytes), 1))
    profiling.emit("alloc", nbytes=int(nbytes), start_ns=start, end_ns=profiling.now_ns())
    return buf


def device_array(shape, dtype=np.float32, strides=None, order="C", stream=0) -> DeviceNDArray:
    """An uninitialised (zero-filled) array on the device. (numba.cuda defaults to float64; Apple GPUs
    have no float64, so the default here is float32.)"""
    ctx = _device.current()
    dtype = _as_dtype(dtype)
    shape = _normalize_shape(shape)
    if order not in ("C", "F"):
        raise NumbaMetalError(f"order must be 'C' or 'F', not {order!r}")
    if strides is None:
        strides = _contiguous_strides(shape, dtype.itemsize, order)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    else:
        strides = tuple(int(s) for s in strides)
        if len(strides) != len(shape) or any(s < 0 for s in strides):
            raise NumbaMetalError(f"strides {strides} do not fit shape {shape}")
        nbytes = (sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize) if all(shape) else 0
    buf = _new_buffer(ctx, nbytes)
    return DeviceNDArray(buf, 0, shape, strides, dtype, ctx)


def device_array_like(ary, stream=0) -> DeviceNDArray:
    """A device array with the shape and dtype (and C/F order) of ``ary``."""
    order = "F" if (getattr(ary, "ndim", 1) > 1 and _flag(ary, "F_CONTIGUOUS")
                    and not _flag(ary, "C_CONTIGUOUS")) else "C"
    return device_array(ary.shape, ary.dtype, order=order, stream=stream)


def _flag(ary, name) -> bool:
    flags = ary.flags
    return bool(flags[name]) if isinstance(flags, dict) else bool(getattr(flags, name.lower(), False) or
                                                                  flags[name])


def to_device(obj, stream=0, copy=True, to=None) -> DeviceNDArray:
    """Copy a host array to the device (``to``: an existing device array to copy into).

    A non-contiguous array is stored as a C-contiguous copy.
    """
    if isinstance(obj, DeviceNDArray):
        return obj
    ary = np.asarray(obj)
    if to is not None:
        to.copy_to_device(ary, stream=stream)
        return to
    if not (ary.flags.c_contiguous or ary.flags.f_contiguous):
        ary = np.ascontiguousarray(ary)
    order = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    dev = device_array(ary.shape, ary.dtype, order=order, stream=stream)
    if copy and ary.size:
        start = profiling.now_ns() if profiling.listeners else 0
        np.copyto(dev._host_view(), ary)
        if start:
            profiling.emit("copy", direction="h2d", nbytes=ary.nbytes, start_ns=start, end_ns=profiling.now_ns())
    return dev


def mapped_array(shape, dtype=np.float32, strides=None, order="C", stream=0, portable=False, wc=False):
    """A NumPy array in unified memory that kernels read and write directly, with no copies.

    Launches that use it are asynchronous: synchronize before reading results on the host.
    """
    ctx = _device.current()
    dev = device_array(shape, dtype, strides=strides, order=order)
    host = dev._host_view().view(MappedNDArray)
    host.device_buffer = dev.buffer
    host.device_context = ctx
    return host


def mapped_array_like(ary, stream=0):
    order = "F" if ary.ndim > 1 and ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    return mapped_array(ary.shape, ary.dtype, order=order, stream=stream)


def is_device_array(obj) -> bool:
    return isinstance(obj, DeviceNDArray)


def check_same_device(ctx, arr, what: str) -> None:
    if arr.context is not ctx:
        raise KernelLaunchError(f"{what} lives on {arr.context.info.name!r}, but the kernel runs on "
                                f"{ctx.info.name!r}; copy it with copy_to_host()/to_device()")
