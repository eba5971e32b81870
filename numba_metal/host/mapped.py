"""Mapped arrays: ``MappedNDArray``, a NumPy array in unified memory that kernels use in place, whose host
accesses wait for the device's work as a device array's do (``mapped_array`` and the other constructors
are :mod:`.allocation`'s)."""

from __future__ import annotations

import numpy as np

from . import streams as _streams


class MappedNDArray(np.ndarray):
    """A NumPy array in unified memory: kernels use it directly, with no copies (``mapped_array``).

    ``device_buffer`` is the runtime buffer holding it and ``device_context`` the device it is on (None for
    arrays NumPy derives from it by computing, which keep the class but not the memory).

    Launches that use it are asynchronous, yet the host never reads it before the work that writes it: its
    methods (item access, ``item``, ``tolist``, ``repr``, iteration, copies...), the ufuncs it is given
    (arithmetic, comparisons, reductions) and NumPy's functions wait for the device's work first, as a device
    array's host accesses do. What reads its memory without calling it (``np.asarray(m)``,
    ``m.view(np.ndarray)``, ``memoryview(m)``, C extensions) does not wait: synchronize before that.

    Raises:
        MetalRuntimeError, KernelBoundsError, KernelRaisedError: as ``synchronize``: the device's work a host
            access waited for failed (its other operations raise NumPy's errors; ``mapped_array`` lists the
            errors of making one).
    """

    @property
    def _metal_captured_by_reference_(self) -> bool:
        # Kernels capture a mapped array from their scope by reference (host/captures.py) while it is
        # unified memory; arrays NumPy computed from one are host arrays (compiled in as constants).
        return self.device_buffer is not None

    def __array_finalize__(self, obj):
        self.device_buffer = getattr(obj, "device_buffer", None)
        self.device_context = getattr(obj, "device_context", None)

    def _wait_for_device(self) -> None:
        ctx = self.device_context
        if ctx is not None:
            _streams.wait_for_host_access(ctx)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        # Operands and outputs as plain NumPy arrays after the wait; results computed from a mapped array
        # are host arrays, not unified memory.
        args = [_waited(x) for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(_waited(x) for x in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is None or method == "at":
            return result
        return out[0] if len(out) == 1 else out

    def __array_function__(self, func, types, args, kwargs):
        self._wait_for_device()
        return super().__array_function__(func, types, args, kwargs)


def _waited(x):
    if isinstance(x, MappedNDArray):
        x._wait_for_device()
        return x.view(np.ndarray)
    return x


#: The NumPy methods that read or write a mapped array's elements without going through a ufunc or a NumPy
#: function: each waits for the device's work first.
_ELEMENT_METHODS = ("__getitem__", "__setitem__", "__iter__", "__contains__", "__repr__", "__str__", "__format__",
                    "__bool__", "__int__", "__float__", "__complex__", "__index__", "__reduce__", "__reduce_ex__",
                    "__copy__", "__deepcopy__", "__dlpack__", "item", "tolist", "tobytes", "tofile", "dump", "dumps",
                    "copy", "astype", "flatten", "ravel", "fill", "sort", "argsort", "partition", "argpartition",
                    "take", "put", "repeat", "choose", "compress", "nonzero", "searchsorted", "argmax", "argmin",
                    "byteswap", "getfield", "setfield", "dot", "trace", "round", "clip", "cumsum", "cumprod")


class _Waiting:
    """A NumPy method of :class:`MappedNDArray` that waits for the device's work before it runs (a descriptor:
    the class's methods stay NumPy's)."""

    __slots__ = ("method",)

    def __init__(self, method):
        self.method = method

    def __get__(self, obj, objtype=None):
        method = self.method
        if obj is None:
            return method

        def waiting(*args, **kwargs):
            obj._wait_for_device()
            return method(obj, *args, **kwargs)
        return waiting


for _name in _ELEMENT_METHODS:
    setattr(MappedNDArray, _name, _Waiting(getattr(np.ndarray, _name)))
