"""Device arrays: ``DeviceNDArray`` (``MappedNDArray`` is :mod:`.mapped`'s, the constructors
:mod:`.allocation`'s).

All numba-metal memory is shared storage (Apple silicon has unified memory; the CPU reference device
is host memory), so every buffer has a host address. Host-side views, copies and slicing therefore
go through NumPy views of that memory, after waiting for the device work that may use it. Kernels
bind a buffer at a byte offset; shape and strides travel in the argument block.
"""

from __future__ import annotations

import numpy as np

from numba_metal.host import profiling
from numba_metal.errors import (CopyRequiredError, DLPackError, KernelLaunchError, MetalTypeError, MetalValueError,
                                NumbaMetalError, UnsupportedFeatureError)

from . import device as _device, init_shadow as _shadow
from . import streams as _streams
from .array_flags import ArrayFlags, contiguity_flags, index32
from .array_keys import ArrayKey, array_key, array_type  # noqa: F401 - re-exported: the keys of these arrays
from .mapped import MappedNDArray


def as_dtype(dtype) -> np.dtype:
    try:
        dtype = np.dtype(dtype)
    except TypeError as e:
        raise NumbaMetalError(f"{dtype!r} is not a NumPy dtype: {e}") from None
    if dtype.hasobject:  # references to Python objects mean nothing on the device (and copied back, crash)
        raise NumbaMetalError(f"device arrays cannot hold Python objects (dtype {dtype}); use a numeric dtype")
    return dtype


def normalize_shape(shape) -> tuple[int, ...]:
    dims = (shape,) if not isinstance(shape, (tuple, list, np.ndarray)) else shape   # numba.cuda takes arrays
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in dims):
        raise MetalTypeError(f"shape must be an int or a sequence of ints, not {shape!r}")
    dims = tuple(int(n) for n in dims)
    if any(n < 0 for n in dims):
        raise MetalValueError(f"negative dimensions are not allowed: {dims}")
    return dims


def contiguous_strides(shape, itemsize, order) -> tuple[int, ...]:
    strides = [0] * len(shape)
    acc = itemsize
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for k in dims:
        strides[k] = acc
        acc *= max(shape[k], 1)
    return tuple(strides)


def layout_of(shape, strides, itemsize) -> str:
    """Numba's layout letter for an array geometry: 'C', 'F' or 'A'."""
    if strides == contiguous_strides(shape, itemsize, "C") or _is_contig(shape, strides, itemsize, "C"):
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

    Raises:
        MetalTypeError: a copy, ``setitem`` or ``reshape`` given an array of another dtype, or not an array
            (``copy_to_host(ary=...)``), or a shape that is not integers; the constructor's ``gpu_data`` is
            not a device array.
        MetalValueError: shapes that do not fit (copies, ``setitem``, ``reshape``, ``view``, ``squeeze``,
            ``split``, ``transpose``; the constructor's ``strides``, or past its ``gpu_data``).
        CopyRequiredError: ``reshape`` or ``ravel`` of a non-contiguous array that would need a copy (also
            numba.cuda's ``NotImplementedError``).
        UnsupportedFeatureError: advanced (fancy) indexing; ``get_ipc_handle()``.
        DLPackError: ``__dlpack__`` asked for a device or stream it cannot export to.
        TypeError: ``len()`` of a 0-d array; ``reshape`` with unknown keyword arguments.
        ValueError: ``np.asarray(arr, dtype, copy=False)`` that would need a conversion.
        MetalRuntimeError: a copy to the host waits for the work before it, and that work failed.
        KernelBoundsError: that wait finds a ``debug=True`` kernel's out-of-bounds index.
        KernelRaisedError: that wait finds an exception a ``debug=True`` kernel raised.
        AttributeError: ``__cuda_array_interface__`` (no CUDA memory on a Mac; the message names DLPack), so
            that ``hasattr`` is False for libraries that probe for it.
    """

    __slots__ = ("buffer", "offset", "shape", "strides", "dtype", "context", "layout", "key", "_nbtype",
                 "_binding", "stream", "_view", "__weakref__")
    #: Kernels that name a device array from their scope capture it by reference (host/captures.py).
    _metal_captured_by_reference_ = True

    def __init__(self, shape, strides, dtype, stream=0, gpu_data=None):
        """numba.cuda's constructor: a new array on the current device (``gpu_data=None``) or a view of
        ``gpu_data``'s memory (a device array); see ``devicearray.construct``, which says what it raises."""
        self._init(*_construct(shape, strides, dtype, gpu_data), stream)

    @classmethod
    def on_buffer(cls, buffer, offset, shape, strides, dtype, context, stream=0) -> "DeviceNDArray":
        """The array of ``shape``/``strides`` at byte ``offset`` of the runtime ``buffer`` on ``context``: how
        numba-metal makes its arrays (the constructor has numba.cuda's signature). Nothing is checked.

        Raises:
            TypeError: ``dtype`` is not a NumPy dtype (NumPy's error).
        """
        self = object.__new__(cls)
        self._init(buffer, offset, shape, strides, dtype, context, stream)
        return self

    def _init(self, buffer, offset, shape, strides, dtype, context, stream):
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
        self.stream = stream   # the default stream of its copies, views and assignments (``bind``)
        self._view = None      # _host_view(), made once

    def argument_key(self) -> "ArrayKey":
        """The (interned) key a launch looks this array's specialisation up by."""
        key = self.key
        if key is None:
            key = self.key = array_key(self.dtype, self.ndim, self.layout, False,
                                       index32(self.shape, self.strides, self.dtype.itemsize))
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
        return self.flags["C_CONTIGUOUS"]

    def is_f_contiguous(self) -> bool:
        return self.flags["F_CONTIGUOUS"]

    @property
    def flags(self) -> ArrayFlags:
        """``C_CONTIGUOUS`` and ``F_CONTIGUOUS`` by numba.cuda's rules (NumPy's, except that a broadcast
        array, with a zero stride, is neither): a dict that also reads as NumPy's flags (``.c_contiguous``)."""
        return ArrayFlags(contiguity_flags(self.shape, self.strides, self.itemsize))

    def __repr__(self) -> str:
        return (f"<numba_metal DeviceNDArray shape={self.shape} dtype={self.dtype} "
                f"on {self.context.info.name!r}>")

    # -- host views of the shared memory ----------------------------------------------------

    def _host_view(self) -> np.ndarray:
        """A NumPy view of this array's memory without waiting: for its geometry (views, reshapes) and for
        memory no queued work can use (a new array). The host reads and writes through :meth:`_memory`."""
        view = self._view
        if view is None:
            view = self._view = _view_of(self.buffer, self.offset, self.shape, self.strides, self.dtype)
        return view

    def _memory(self, stream=0) -> np.ndarray:
        """A NumPy view of this array's memory for the host to read or write: after the device work that may
        use it (``streams.wait_for_host_access``). Every host access of a device array's elements goes
        through here (``__array__``, which must keep the buffer alive, calls the same wait)."""
        _streams.wait_for_host_access(self.context, stream)
        return self._host_view()

    # -- copies -----------------------------------------------------------------------------

    def copy_to_host(self, ary=None, stream=0):
        """Copy to a host NumPy array (a new one, or ``ary``), after the work of ``stream`` (0: of every
        stream) that may write this array. ``ary`` must have this array's dtype and, size-1 axes aside,
        its shape (numba.cuda's rule)."""
        stream = self._stream(stream)
        if ary is not None:
            if not isinstance(ary, np.ndarray):
                raise MetalTypeError(f"copy_to_host(ary=...) needs a NumPy array, not {type(ary).__name__}")
            _check_compatible(self, ary, "copy_to_host")
        src = self._memory(stream)
        start = profiling.now_ns() if profiling.listeners else 0
        if ary is None:
            out = src.copy(order="K" if self.layout != "A" else "C")
        else:
            if ary.ctypes.data == src.ctypes.data and ary.strides == src.strides:
                return ary  # the destination is this very memory (unified memory): nothing to copy
            np.copyto(ary, src.reshape(ary.shape))
            out = ary
        if start:
            profiling.emit("copy", direction="d2h", nbytes=self.nbytes, start_ns=start, end_ns=profiling.now_ns())
        return out

    def copy_to_device(self, ary, stream=0):
        """Copy a host array (or another device array) into this array, after the work of ``stream``
        (0: of every stream). ``ary`` must have this array's dtype and, size-1 axes aside, its shape."""
        stream = self._stream(stream)
        if isinstance(ary, DeviceNDArray):
            check_same_device(self.context, ary, "the source of copy_to_device()")
            _check_compatible(self, ary, "copy_to_device")
            src = ary._memory(stream)
        else:
            src = np.asarray(ary)
            _check_compatible(self, src, "copy_to_device")
        dst = self._memory(stream)
        if not self.size:
            return
        start = profiling.now_ns() if profiling.listeners else 0
        np.copyto(dst, src.reshape(self.shape))
        _shadow.mark(self)   # the sanitizer's init check: these elements are written (init_shadow.py)
        if start:
            profiling.emit("copy", direction="d2d" if isinstance(ary, DeviceNDArray) else "h2d",
                           nbytes=self.nbytes, start_ns=start, end_ns=profiling.now_ns())

    # -- numba.cuda's item access: views, elements, assignment ---------------------------------

    def __getitem__(self, index):
        return self.getitem(index)

    def getitem(self, index, stream=0):
        """``self[index]`` (numba.cuda's ``getitem``): a view sharing memory for slices (any step) and
        partial indices, a host scalar for one element (after the work of ``stream``)."""
        stream = self._stream(stream)
        view = self._host_view()
        sub = view[index]   # for its geometry: an element read here may predate the work that writes it
        if not isinstance(sub, np.ndarray) or (sub.ndim == 0 and _is_scalar_index(index, self.ndim)):
            sub = self._memory(stream)[index]
            return sub[()] if isinstance(sub, np.ndarray) else sub
        if not np.shares_memory(sub, view) and sub.size:
            raise UnsupportedFeatureError("advanced (fancy) indexing of device arrays is not supported; "
                                          "use slices and integers, which give views")
        return _derived_from(self, sub, stream)

    def __setitem__(self, index, value):
        self.setitem(index, value)

    def setitem(self, index, value, stream=0):
        """``self[index] = value`` (numba.cuda's ``setitem``): a scalar, host array or device array,
        broadcast along the leading and size-1 axes of the target as numba.cuda does, converted to this
        array's dtype. The memory is shared, so the host writes it after the work of ``stream`` (0: of
        every stream); the assignment is complete when this returns."""
        stream = self._stream(stream)
        target_shape = np.shape(self._host_view()[index])
        if isinstance(value, DeviceNDArray):
            check_same_device(self.context, value, "the value assigned to a device array")
            rhs = value._memory(stream)
        else:
            rhs = np.asarray(value)
        view = self._memory(stream)
        if rhs.ndim > len(target_shape):
            raise MetalValueError(f"Can't assign {rhs.ndim}-D array to {len(target_shape)}-D self")
        shape = (1,) * (len(target_shape) - rhs.ndim) + rhs.shape
        for axis, (have, want) in enumerate(zip(shape, target_shape)):
            if have != 1 and have != want:
                raise MetalValueError(f"Can't copy sequence with size {have} to array axis {axis} with "
                                      f"dimension {want}")
        view[index] = rhs.reshape(shape)
        _shadow.mark(self, index)

    # -- numba.cuda's views -------------------------------------------------------------------

    def bind(self, stream=0):
        """This array with ``stream`` as the default stream of its copies, views and assignments."""
        return DeviceNDArray.on_buffer(self.buffer, self.offset, self.shape, self.strides, self.dtype, self.context,
                                       stream)

    def split(self, section, stream=0):
        """Views of consecutive ``section``-element parts of a 1-d unit-stride array (the last one may
        be shorter), as a generator (numba.cuda's ``split``)."""
        stream = self._stream(stream)
        if self.ndim != 1:
            raise MetalValueError("only support 1d array")
        if self.strides[0] != self.itemsize:
            raise MetalValueError("only support unit stride")
        return self._sections(int(section), stream)

    def _sections(self, section, stream):
        for begin in range(0, self.size, section):
            end = min(begin + section, self.size)
            yield DeviceNDArray.on_buffer(self.buffer, self.offset + begin * self.itemsize, (end - begin,),
                                          self.strides, self.dtype, self.context, stream)

    def reshape(self, *newshape, **kws):
        """A view with another shape (numba.cuda's rules): a contiguous array gets the C (``order='C'``)
        or Fortran (``order='F'``; ``'A'``: the array's own) strides of the new shape over the same memory;
        any other array only a reshape NumPy could make without copying, else ``CopyRequiredError``
        (a ``NotImplementedError``)."""
        if len(newshape) == 1 and isinstance(newshape[0], (tuple, list)):
            newshape = tuple(newshape[0])
        if not all(isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in newshape):
            raise MetalTypeError(f"reshape() takes integers, not {newshape!r}")
        newshape = tuple(int(n) for n in newshape)
        if newshape == self.shape:
            return self._with(self.shape, self.strides)
        order = kws.pop("order", "C")
        if kws:
            raise TypeError(f"reshape() got unknown keyword arguments {sorted(kws)}")
        if order not in ("C", "F", "A"):
            raise MetalValueError("order not C|F|A")
        unknown = [k for k, n in enumerate(newshape) if n < 0]
        if len(unknown) > 1:
            raise MetalValueError("can only specify one unknown dimension")
        known = 1
        for n in newshape:
            known *= n if n >= 0 else 1
        if unknown:
            if known == 0 or self.size % known:
                raise MetalValueError("cannot infer valid shape for unknown dimension")
            k = unknown[0]
            newshape = newshape[:k] + (self.size // known,) + newshape[k + 1:]
        newsize = 1
        for n in newshape:
            newsize *= n
        if newsize != self.size:
            raise MetalValueError(f"reshape changes the size of the array: {self.shape} to {newshape}")
        flags = self.flags
        if order == "A":
            order = "F" if flags["F_CONTIGUOUS"] else "C"
        if flags["C_CONTIGUOUS"] or flags["F_CONTIGUOUS"]:
            return self._with(newshape, contiguous_strides(newshape, self.itemsize, order))
        try:
            sub = np.reshape(self._host_view(), newshape, order=order, copy=False)
        except ValueError:
            raise CopyRequiredError(f"reshape of this non-contiguous device array {self.shape} with strides "
                                    f"{self.strides} to {newshape} would require a copy; copy it to a "
                                    "contiguous array first") from None
        return _derived_from(self, sub)

    def ravel(self, order="C", stream=0):
        """A 1-d view of a contiguous array (numba.cuda's rules: ``'C'`` needs a C-contiguous array,
        ``'F'`` a Fortran-contiguous one, ``'A'`` either), else ``CopyRequiredError``."""
        if order not in ("C", "F", "A"):
            raise MetalValueError("order not C|F|A")
        flags = self.flags
        if (order in "CA" and flags["C_CONTIGUOUS"]) or (order in "FA" and flags["F_CONTIGUOUS"]):
            return self._with((self.size,), (self.itemsize,), self._stream(stream))
        raise CopyRequiredError(f"ravel of this non-contiguous device array (strides {self.strides}) would "
                                "require a copy")

    def squeeze(self, axis=None, stream=0):
        """A view without the given size-1 axes (all of them for ``axis=None``)."""
        if axis is None:
            keep = [k for k, n in enumerate(self.shape) if n != 1]
        else:
            axes = axis if isinstance(axis, tuple) else (axis,)
            axes = {a % self.ndim if -self.ndim <= a < self.ndim else a for a in axes}
            for a in axes:
                if not 0 <= a < self.ndim:
                    raise MetalValueError(f"axis {a} is out of bounds for a {self.ndim}-d array")
                if self.shape[a] != 1:
                    raise MetalValueError("cannot select an axis to squeeze out which has size not equal to one")
            keep = [k for k in range(self.ndim) if k not in axes]
        return self._with(tuple(self.shape[k] for k in keep), tuple(self.strides[k] for k in keep),
                          self._stream(stream))

    def view(self, dtype):
        """The same memory as another dtype (numba.cuda's rules: a dtype of another size needs a
        C-contiguous array, and the last axis is rescaled)."""
        dtype = as_dtype(dtype)
        shape, strides = list(self.shape), list(self.strides)
        if dtype.itemsize != self.itemsize:
            if not self.is_c_contiguous() or not shape:
                raise MetalValueError("To change to a dtype of a different size, the array must be C-contiguous")
            shape[-1], rem = divmod(shape[-1] * self.itemsize, dtype.itemsize)
            if rem:
                raise MetalValueError("When changing to a larger dtype, its size must be a divisor of the "
                                      "total size in bytes of the last axis of the array.")
            strides[-1] = dtype.itemsize
        return DeviceNDArray.on_buffer(self.buffer, self.offset, shape, strides, dtype, self.context, self.stream)

    @property
    def T(self):
        return self.transpose()

    def transpose(self, *axes):
        """A view with the axes permuted (reversed by default). numba.cuda copies (2-d only); on shared
        memory a view is free, as in NumPy."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        try:
            return _derived_from(self, self._host_view().transpose(*(axes or ())))
        except (ValueError, TypeError):
            raise MetalValueError(f"invalid axes list {tuple(axes)!r}") from None

    # -- numba.cuda's other attributes ----------------------------------------------------------

    @property
    def alloc_size(self) -> int:
        """Bytes of memory this array spans (numba.cuda: the size of its allocation or view)."""
        if not self.size:
            return 0
        return sum((n - 1) * abs(s) for n, s in zip(self.shape, self.strides)) + self.itemsize

    @property
    def device_ctypes_pointer(self):
        """The address of element [0, ..., 0] (``ctypes.c_void_p``): unified memory, so also a host
        address."""
        import ctypes
        return ctypes.c_void_p(self.buffer.address + self.offset)

    def get_ipc_handle(self):
        raise UnsupportedFeatureError(
            "get_ipc_handle(): CUDA IPC handles have no Metal equivalent; to share data between processes "
            "use multiprocessing.shared_memory (or a file) on the host and metal.to_device() in each process")

    def _stream(self, stream):
        """numba.cuda's rule: an explicit stream, else the one the array is bound to."""
        return stream if stream else self.stream

    def _with(self, shape, strides, stream=None) -> "DeviceNDArray":
        return DeviceNDArray.on_buffer(self.buffer, self.offset, shape, strides, self.dtype, self.context,
                                       self.stream if stream is None else stream)

    def get_numba_type(self):
        return self._numba_type()

    _numba_type_ = property(get_numba_type, doc="The Numba array type kernels see (numba.cuda's name).")

    # -- interoperability: NumPy's array protocol, DLPack, pickling ---------------------------

    @property
    def __cuda_array_interface__(self):
        """Absent, deliberately: the CUDA Array Interface describes CUDA device memory, and a Metal array
        has no CUDA pointer. Raising AttributeError keeps ``hasattr(d, "__cuda_array_interface__")``, the
        probe libraries use, False; the message says what to use instead."""
        raise AttributeError(
            "a numba-metal DeviceNDArray has no __cuda_array_interface__: that interface describes CUDA device "
            "memory, which a Mac does not have. Hand the array to other libraries with DLPack "
            "(np.from_dlpack(d), torch.from_dlpack(d), mx.array(d)) or as NumPy (np.asarray(d), a view of the "
            "unified memory)")

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
        if copy:   # a new buffer on this array's device (which need not be the current one), copied by the host
            strides = contiguous_strides(self.shape, self.itemsize, "F" if self.layout == "F" else "C")
            src = DeviceNDArray.on_buffer(new_buffer(self.context, self.nbytes), 0, self.shape, strides, self.dtype,
                                          self.context)
            np.copyto(src._host_view(), self._memory())
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
        return (from_host, (self.copy_to_host(),))

    def _numba_type(self):
        ty = self._nbtype
        if ty is None:
            ty = self._nbtype = array_type(self.dtype, self.ndim, self.layout)
        return ty


def _construct(shape, strides, dtype, gpu_data) -> tuple:
    """``DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None)``'s (buffer, offset, shape, strides,
    dtype, context): new zeroed memory on the current device spanning ``strides``, or ``gpu_data``'s (a
    device array's, from its first element). Raises MetalTypeError (``gpu_data`` not a device array, ``shape``
    not integers) or MetalValueError (``strides`` that do not fit ``shape``, or reach past ``gpu_data``)."""
    shape, dtype = normalize_shape(shape), as_dtype(dtype)
    strides = tuple(int(s) for s in ((strides,) if isinstance(strides, (int, np.integer)) else strides))
    if gpu_data is not None and not isinstance(gpu_data, DeviceNDArray):
        raise MetalTypeError(f"DeviceNDArray(gpu_data=...) takes a device array whose memory to view, not "
                             f"{type(gpu_data).__name__} (numba-metal has no raw device pointers)")
    span = sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize if all(shape) else 0
    room = MAX_ARRAY_BYTES if gpu_data is None else gpu_data.buffer.nbytes - gpu_data.offset
    if len(strides) != len(shape) or any(s < 0 for s in strides) or span > room:
        raise MetalValueError(f"DeviceNDArray: shape {shape} with strides {strides} does not fit "
                              f"{'gpu_data' if gpu_data is not None else 'an array'} ({room} bytes)")
    if gpu_data is None:
        ctx = _device.current()
        return new_buffer(ctx, span), 0, shape, strides, dtype, ctx
    return gpu_data.buffer, gpu_data.offset, shape, strides, dtype, gpu_data.context


def _check_compatible(dev, other, what) -> None:
    """numba.cuda's ``check_array_compatibility``: the same dtype, and the same shape once size-1 axes
    are dropped."""
    if dev.dtype != other.dtype:
        raise MetalTypeError(f"{what}: incompatible dtype: {dev.dtype} vs. {other.dtype}")
    if tuple(n for n in dev.shape if n != 1) != tuple(n for n in other.shape if n != 1):
        raise MetalValueError(f"{what}: incompatible shape: {dev.shape} vs. {tuple(other.shape)}")


def _is_scalar_index(index, ndim) -> bool:
    if isinstance(index, (int, np.integer)):
        return ndim == 1
    if isinstance(index, tuple):
        return len(index) == ndim and all(isinstance(i, (int, np.integer)) for i in index)
    return False


def _derived_from(dev, sub: np.ndarray, stream=None) -> DeviceNDArray:
    """The device array of ``sub``, a NumPy view of ``dev``'s host view."""
    offset = sub.ctypes.data - dev.buffer.address if sub.size else dev.offset
    return DeviceNDArray.on_buffer(dev.buffer, offset, sub.shape, sub.strides, sub.dtype, dev.context,
                                   dev.stream if stream is None else stream)


class _BufferMemory:
    """A buffer's memory as NumPy sees it: the base of every host view of the buffer, so that the buffer
    lives as long as any view of it (``mapped_array(...).base``, views of views), as NumPy's own memory does."""

    __slots__ = ("buffer", "__array_interface__")

    def __init__(self, buffer):
        self.buffer = buffer
        self.__array_interface__ = {"data": (buffer.address, False), "shape": (buffer.nbytes,), "typestr": "|u1",
                                    "version": 3}


def _view_of(buffer, offset, shape, strides, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if any(s == 0 for s in shape):
        return np.empty(shape, dtype)
    # (0-d views too are at their offset: ``d[3, ...]`` is element 3.)
    return np.ndarray(shape, dtype, buffer=np.asarray(_BufferMemory(buffer)), offset=offset, strides=strides)


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
    _shadow.release(dev.buffer)   # code numba-metal does not see may write it (the sanitizer's init check)
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
    return _derived_from(dev, np.broadcast_to(dev._host_view(), shape))


def with_unit_axis(dev: DeviceNDArray) -> DeviceNDArray:
    """``dev`` viewed with a trailing axis of length 1."""
    view = dev._host_view()
    return _derived_from(dev, view.reshape(view.shape + (1,)) if view.flags.c_contiguous else view[..., None])


def copy_into_host(dev: DeviceNDArray, host: np.ndarray) -> None:
    """Copy ``dev`` into the host array ``host`` now, without waiting (the caller has waited)."""
    np.copyto(host, dev._host_view())


#: The most bytes an array can span: kernels index with 64-bit signed integers, and NumPy's views and the
#: runtime's sizes are 64-bit. (A device refuses far smaller arrays than this: more than its memory.)
MAX_ARRAY_BYTES = 2**63 - 1


def new_buffer(ctx, nbytes):
    """A zero-filled buffer of ``nbytes`` (at least one byte) on the context's device; an ``alloc`` event."""
    if not profiling.listeners:
        return ctx.device.new_buffer(max(int(nbytes), 1))
    start = profiling.now_ns()
    buf = ctx.device.new_buffer(max(int(nbytes), 1))
    profiling.emit("alloc", nbytes=int(nbytes), start_ns=start, end_ns=profiling.now_ns())
    return buf


def from_host(ary: np.ndarray, stream=0, copy=True) -> DeviceNDArray:
    """A new device array on the current device holding a copy of the NumPy array ``ary`` (C-contiguous
    unless ``ary`` is F-contiguous; ``copy=False``: its shape and dtype only). What ``to_device`` does
    once it has checked its arguments, and how a pickled device array is rebuilt."""
    if not (ary.flags.c_contiguous or ary.flags.f_contiguous):
        ary = np.ascontiguousarray(ary)
    order = "F" if ary.flags.f_contiguous and not ary.flags.c_contiguous else "C"
    ctx = _device.current()
    dtype = as_dtype(ary.dtype)
    shape = normalize_shape(ary.shape)
    strides = contiguous_strides(shape, dtype.itemsize, order)
    dev = DeviceNDArray.on_buffer(new_buffer(ctx, ary.nbytes), 0, shape, strides, dtype, ctx, stream)
    if copy and ary.size:
        start = profiling.now_ns() if profiling.listeners else 0
        np.copyto(dev._host_view(), ary)
        if start:
            profiling.emit("copy", direction="h2d", nbytes=ary.nbytes, start_ns=start, end_ns=profiling.now_ns())
    return dev


def host_span(ary: np.ndarray) -> tuple:
    """(lowest address, bytes spanned) of a NumPy array's elements (negative strides reach below
    ``ary[0, ..., 0]``)."""
    lowest = ary.ctypes.data + sum((n - 1) * s for n, s in zip(ary.shape, ary.strides) if s < 0 and n)
    extent = sum((n - 1) * abs(s) for n, s in zip(ary.shape, ary.strides) if n) + ary.itemsize
    return lowest, extent


def is_device_array(obj) -> bool:
    """True if ``obj`` is a ``DeviceNDArray`` (a mapped array is a NumPy array, not a device array).

    Raises:
        nothing: it is an ``isinstance`` test.
    """
    return isinstance(obj, DeviceNDArray)


def check_same_device(ctx, arr, what: str) -> None:
    if arr.context is not ctx:
        raise KernelLaunchError(f"{what} lives on {arr.context.info.name!r}, but the kernel runs on "
                                f"{ctx.info.name!r}; copy it with copy_to_host()/to_device()")


def as_mapped(dev: DeviceNDArray) -> MappedNDArray:
    """The mapped array (a NumPy array kernels use in place) over a new device array's memory."""
    host = dev._host_view().view(MappedNDArray)
    host.device_buffer = dev.buffer
    host.device_context = dev.context
    return host
