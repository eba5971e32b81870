"""DLPack capsules, made and read: the C structures of ``dlpack.h`` and the Python capsule protocol.

This module knows memory, not arrays: :func:`export` turns (data pointer, byte offset, shape, byte
strides, dtype, device, owner) into a capsule, and :func:`consume` turns a producer's capsule into a
:class:`Imported` record. The array classes above it decide what memory to export and what to wrap.

The layouts are those of DLPack's C header (``dlpack.h``, versions 0.8 and 1.x; data-apis/dlpack) and the
protocol that of the Python array API's ``__dlpack__`` (data-apis.org, array API 2023.12): a versioned
capsule (``DLManagedTensorVersioned``, named ``"dltensor_versioned"``) when the consumer passes
``max_version`` with major version 1, else the legacy ``DLManagedTensor`` (``"dltensor"``). A consumer
renames the capsule ``"used_..."`` and calls the tensor's deleter when it no longer needs the memory;
a capsule that is never consumed calls the deleter when it is destroyed. Strides are in elements.
"""

from __future__ import annotations

import ctypes
import enum
import math
import threading

import numpy as np

from numba_metal import runtime
from numba_metal.errors import DLPackError

from . import init_shadow

#: The DLPack version numba-metal produces and reads (the structures are the same across 1.x).
VERSION = (1, 1)

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1


class DeviceType(enum.IntEnum):
    """``DLDeviceType``: where a tensor's memory is (the values are DLPack's)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def device_name(device_type: int) -> str:
    try:
        return DeviceType(device_type).name
    except ValueError:
        return f"DLPack device type {device_type}"


# DLDataTypeCode
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6
_CODE_OF_KIND = {"i": _INT, "u": _UINT, "f": _FLOAT, "c": _COMPLEX, "b": _BOOL}
_KIND_OF_CODE = {v: k for k, v in _CODE_OF_KIND.items()}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    """``DLManagedTensor`` (DLPack < 1.0)."""

    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    """``DLManagedTensorVersioned`` (DLPack >= 1.0)."""

    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_VERSIONED = b"dltensor_versioned"
_USED_VERSIONED = b"used_dltensor_versioned"
_LEGACY = b"dltensor"
_USED_LEGACY = b"used_dltensor"

# The C-API of the running interpreter, with argument types of our own (ctypes.pythonapi's are shared).
_api = ctypes.PyDLL(None)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# Exports alive in a consumer's hands: address of the managed structure -> (the structure, its shape and
# strides arrays, the owner). The deleter drops the entry, which releases the owner (the array, hence its
# buffer). No lock: a single dict operation is atomic under the GIL, and the deleter can run inside a
# garbage collection triggered anywhere, also while this module is adding an entry.
_exports: dict = {}


@_Deleter
def _deleter(managed_address):
    # Called by the consumer, from any thread (ctypes takes the GIL).
    _exports.pop(managed_address, None)


_DELETER_ADDRESS = ctypes.cast(_deleter, ctypes.c_void_p).value


def dl_dtype(dtype: np.dtype) -> tuple[int, int, int]:
    """(code, bits, lanes) of a NumPy dtype, or DLPackError for one DLPack cannot describe."""
    dtype = np.dtype(dtype)
    code = _CODE_OF_KIND.get(dtype.kind)
    if code is None or not dtype.isnative or dtype.fields is not None:
        raise DLPackError(f"arrays of dtype {dtype} cannot be exported with DLPack (it describes booleans, "
                          "integers, floats and complex numbers in native byte order)")
    return code, dtype.itemsize * 8, 1


def np_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    """The NumPy dtype of a DLPack data type, or DLPackError for one numba-metal does not handle."""
    kind = _KIND_OF_CODE.get(code)
    if lanes != 1 or kind is None or bits % 8:
        what = "bfloat16" if code == _BFLOAT else f"code {code}, {bits} bits, {lanes} lanes"
        raise DLPackError(f"DLPack data type {what} has no NumPy dtype numba-metal can use; convert the "
                          "tensor to a NumPy dtype (bool, integers, float16/32/64, complex) first")
    try:
        return np.dtype(f"{kind}{bits // 8}" if kind != "b" else "?")
    except TypeError:
        raise DLPackError(f"DLPack data type {kind}{bits} has no NumPy dtype") from None


def export(data: int, byte_offset: int, shape, byte_strides, dtype, device: tuple[int, int], owner,
           *, versioned: bool, version=VERSION, read_only=False, copied=False):
    """A DLPack capsule of the memory at ``data`` + ``byte_offset`` (``data`` is the host pointer for
    kDLCPU, the MTLBuffer for kDLMetal); ``owner`` is kept alive until the consumer deletes the tensor."""
    if getattr(owner, "buffer", None) is not None:
        init_shadow.release(owner.buffer)   # the consumer may write it (the sanitizer's init check)
    itemsize = np.dtype(dtype).itemsize
    code, bits, lanes = dl_dtype(dtype)
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    for s in byte_strides:
        if s % itemsize:
            raise DLPackError(f"strides {tuple(byte_strides)} are not multiples of the item size {itemsize}: "
                              "DLPack strides count elements")
    strides_arr = (ctypes.c_int64 * max(ndim, 1))(*[s // itemsize for s in byte_strides])
    managed = _ManagedVersioned() if versioned else _Managed()
    t = managed.dl_tensor
    t.data = data
    t.device.device_type, t.device.device_id = device
    t.ndim = ndim
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, lanes
    t.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = byte_offset
    managed.deleter = _DELETER_ADDRESS
    if versioned:
        managed.version.major, managed.version.minor = version
        managed.flags = (FLAG_READ_ONLY if read_only else 0) | (FLAG_IS_COPIED if copied else 0)
    address = ctypes.addressof(managed)
    managed.manager_ctx = address
    _exports[address] = (managed, shape_arr, strides_arr, owner)
    # The capsule's destructor is the runtime's, in C: it runs while a refusing consumer's exception is
    # pending, which a Python (ctypes) destructor would clobber.
    return _api.PyCapsule_New(address, _VERSIONED if versioned else _LEGACY, runtime.dlpack_capsule_destructor())


def live_exports() -> int:
    """How many exported tensors their consumers have not deleted yet."""
    return len(_exports)


class Imported:
    """What a producer's capsule describes. ``address`` is the host address of element [0, ..., 0] for
    kDLCPU (``data`` + ``byte_offset``); for kDLMetal ``data`` is the MTLBuffer and ``byte_offset`` the
    offset in it. ``strides`` are in bytes. Calling :meth:`release` (or dropping the last reference)
    calls the producer's deleter once."""

    def __init__(self, managed_address: int, versioned: bool):
        cls = _ManagedVersioned if versioned else _Managed
        self._managed = cls.from_address(managed_address)
        self._address = managed_address
        self._lock = threading.Lock()
        t = self._managed.dl_tensor
        self.device = (int(t.device.device_type), int(t.device.device_id))
        self.version = (int(self._managed.version.major), int(self._managed.version.minor)) if versioned else (0, 0)
        self.flags = int(self._managed.flags) if versioned else 0
        self.read_only = bool(self.flags & FLAG_READ_ONLY)
        self.dtype = np_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes)
        ndim = int(t.ndim)
        if ndim < 0:
            raise DLPackError(f"the DLPack tensor has {ndim} dimensions")
        self.shape = tuple(int(t.shape[i]) for i in range(ndim))
        itemsize = self.dtype.itemsize
        if t.strides:
            self.strides = tuple(int(t.strides[i]) * itemsize for i in range(ndim))
        else:  # NULL strides: C-contiguous (DLPack)
            strides, acc = [], itemsize
            for n in reversed(self.shape):
                strides.append(acc)
                acc *= max(n, 1)
            self.strides = tuple(reversed(strides))
        self.data = int(t.data or 0)
        self.byte_offset = int(t.byte_offset)
        self.address = self.data + self.byte_offset

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def extent(self) -> tuple[int, int]:
        """(lowest byte offset from element 0, bytes spanned) of the elements, for a non-empty tensor."""
        low = sum((n - 1) * s for n, s in zip(self.shape, self.strides) if s < 0 and n)
        span = sum((n - 1) * abs(s) for n, s in zip(self.shape, self.strides) if n) + self.dtype.itemsize
        return low, span

    def release(self) -> None:
        with self._lock:
            managed, self._managed = self._managed, None
        if managed is not None and managed.deleter:
            _Deleter(managed.deleter)(self._address)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def consume(capsule) -> Imported:
    """Take the tensor out of a producer's capsule (renaming it ``used_...``), or DLPackError."""
    for name, used, versioned in ((_VERSIONED, _USED_VERSIONED, True), (_LEGACY, _USED_LEGACY, False)):
        if _api.PyCapsule_IsValid(capsule, name):
            address = _api.PyCapsule_GetPointer(capsule, name)
            if versioned:
                major = _ManagedVersioned.from_address(address).version.major
                if major != 1:
                    # Not ours to read or delete: leave the capsule as it is for its producer's destructor.
                    raise DLPackError(f"the producer gave a DLPack {major}.x capsule; numba-metal reads 1.x")
            if _api.PyCapsule_SetName(capsule, used):
                raise DLPackError("could not mark the DLPack capsule as consumed")
            return Imported(address, versioned)
    raise DLPackError("__dlpack__() did not return an unconsumed DLPack capsule (a PyCapsule named "
                      "'dltensor_versioned' or 'dltensor'); was it consumed already?")
