"""Kernel arguments on the host: their keys and Numba types, and array arguments bound to buffers.

A launch looks its specialisation up by an *argument key*: a small hashable value per argument built
without Numba (the interned :class:`~numba_metal.host.arrays.ArrayKey` of an array; the Python type of a
scalar). The key determines the argument's Numba type (:func:`numba_type_of_key`), which is only computed
when a specialisation is compiled, so a process whose kernels all come from the disk cache never imports
Numba. :func:`canonical` spells a key, or a Numba type, as the text the disk cache's key is made of.

An array argument is bound to a buffer at a byte offset (:func:`bind_array`): a device array as it is; a
mapped array through the buffer it lives in; a plain NumPy array in place when unified memory allows it
(zero-copy), else through a device copy that is copied back after the kernel (as numba.cuda does).
"""

from __future__ import annotations

import enum

import numpy as np

from numba_metal.compiler.devicefn import DeviceFunctionBase
from numba_metal.errors import KernelLaunchError

from . import perf_warnings
from .allocation import to_device
from .arrays import (ArrayKey, DeviceNDArray, array_key, array_type, check_same_device, copy_into_host,
                     element_binding, host_span, layout_of)
from .array_flags import index32
from .wrapping import wrap_host_memory

_scalar_types: dict | None = None

#: Scalar argument types a key can name directly (the key is the type object itself).
SCALAR_TYPES = (bool, int, float, complex, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128)
_SCALAR_SET = frozenset(SCALAR_TYPES)
#: Canonical names of scalar keys: what Numba calls the type the value gets.
#: A Python float is float32 and a Python complex complex64 (weak, as NumPy 2's scalars: docs/limitations.md).
_SCALAR_NAMES = {bool: "bool", int: "int64", float: "float32", complex: "complex64", np.bool_: "bool", np.int8: "int8",
                 np.int16: "int16", np.int32: "int32", np.int64: "int64", np.uint8: "uint8", np.uint16: "uint16",
                 np.uint32: "uint32", np.uint64: "uint64", np.float16: "float16", np.float32: "float32",
                 np.float64: "float64", np.complex64: "complex64", np.complex128: "complex128"}
#: Scalar keys the disk cache does not spell (complex arrays are not cached either).
_UNCANONICAL = frozenset([complex, np.complex64, np.complex128])
_DTYPE_NAMES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "float32", "float64"])

TUPLE = "T"   # key of a tuple: (TUPLE, item keys...)


class ScalarKey:
    """The key of NumPy scalars of a dtype Python has no scalar type for (a record of a structured dtype),
    typed as numba.cuda types them. Interned (:func:`scalar_key`), so it compares and hashes by identity.
    (A 0-d NumPy array is an array: its key is an ``ArrayKey`` with ``ndim`` 0.)"""

    __slots__ = ("dtype", "__weakref__")

    def __init__(self, dtype: np.dtype):
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"ScalarKey({self.dtype})"

    def __reduce__(self):
        return (scalar_key, (self.dtype,))


_scalar_keys: dict = {}


def scalar_key(dtype) -> ScalarKey:
    """The (interned) key of NumPy scalars of this dtype."""
    dtype = np.dtype(dtype)
    key = _scalar_keys.get(dtype)
    if key is None:
        key = _scalar_keys.setdefault(dtype, ScalarKey(dtype))
    return key


class ArgHint:
    """numba.cuda's argument hints: how a NumPy array argument travels to the device and back. A device
    array (or mapped array) passed in a hint is used as it is."""

    __slots__ = ("value",)
    copy_in = True
    copy_out = True

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class In(ArgHint):
    """An input only: copied to the device before the kernel, never copied back (the launch does not
    wait for the kernel).

    Raises:
        nothing: wrapping cannot fail; the launch that takes it raises what ``Dispatcher`` lists for a NumPy
            array argument.
    """

    copy_out = False


class Out(ArgHint):
    """An output only: not copied to the device (the kernel sees zeros, or the array itself where
    unified memory lets the kernel use it in place), copied back after the kernel.

    Raises:
        nothing: wrapping cannot fail; the launch that takes it raises what ``Dispatcher`` lists for a NumPy
            array argument.
    """

    copy_in = False


class InOut(ArgHint):
    """Copied in and back: what a plain NumPy array argument gets anyway.

    Raises:
        nothing: wrapping cannot fail; the launch that takes it raises what ``Dispatcher`` lists for a NumPy
            array argument.
    """


def _scalars() -> dict:
    global _scalar_types
    if _scalar_types is None:
        from numba.core import types
        _scalar_types = {t: getattr(types, "boolean" if n == "bool" else n) for t, n in _SCALAR_NAMES.items()}
    return _scalar_types


def arg_key(value, position: int):
    """The argument key of ``value`` (argument ``position``), or a KernelLaunchError naming it."""
    t = type(value)
    if t in _SCALAR_SET:
        return t
    if isinstance(value, DeviceNDArray):
        return value.argument_key()
    if isinstance(value, np.ndarray):
        return array_key(value.dtype, value.ndim, layout_of(value.shape, value.strides, value.itemsize), False,
                         index32(value.shape, value.strides, value.itemsize))
    if isinstance(value, tuple):
        return (TUPLE,) + tuple(arg_key(v, position) for v in value)
    if isinstance(value, np.void) and value.dtype.names:
        return scalar_key(value.dtype)   # a record (structured dtype): typed as numba.cuda does
    if isinstance(value, ArgHint):
        if not isinstance(value.value, (np.ndarray, DeviceNDArray)):
            raise KernelLaunchError(f"argument {position} is {type(value).__name__}() of a "
                                    f"{type(value.value).__name__}: In, Out and InOut wrap arrays; pass other "
                                    "values as they are")
        return arg_key(value.value, position)
    if isinstance(value, np.generic):
        return np.dtype(t).type if np.dtype(t).type in _SCALAR_SET else scalar_key(np.dtype(t))
    if isinstance(value, DeviceFunctionBase):
        return value  # a device function argument specialises the kernel on the function; nothing is passed
    if isinstance(value, enum.Enum):
        return t  # an Enum member specialises the kernel on its class and is passed as its value
    if hasattr(value, "__cuda_array_interface__"):
        raise KernelLaunchError(f"argument {position} is a {type(value).__name__} in CUDA device memory (it "
                                "exports only the CUDA Array Interface), which a Mac does not have; pass "
                                "device arrays, NumPy arrays or arrays exporting DLPack (PyTorch, MLX, JAX)")
    raise KernelLaunchError(f"argument {position} has type {type(value).__name__}, which cannot be passed "
                            "to a Metal kernel; pass device arrays, NumPy arrays, numbers or tuples of numbers")


def arg_keys(args) -> tuple:
    """The argument keys of a launch's arguments (raises KernelLaunchError for one that cannot be passed),
    with the launch's stride groups (:func:`stride_groups`)."""
    keys = [arg_key(a, i) for i, a in enumerate(args)]
    groups = stride_groups(args, keys)
    for i, first in groups.items():
        k = keys[i]
        keys[i] = array_key(k.dtype, k.ndim, k.layout, k.readonly, k.index32, first)
    return tuple(keys)


def _grouped(key) -> bool:
    """An array argument with this key may join a stride group: its subscripts are those arrays.py shares
    row offsets between (C-contiguous, 2-d or more, indexed in 32 bits)."""
    return type(key) is ArrayKey and key.index32 and key.layout == "C" and key.ndim >= 2


def element_strides(value) -> tuple:
    """The element strides of an array argument (a device array, a NumPy array, or either in an ``In``/
    ``Out``/``InOut`` hint)."""
    if isinstance(value, ArgHint):
        value = value.value
    if isinstance(value, DeviceNDArray):
        return value.binding()[1]
    itemsize = value.itemsize
    return tuple(s // itemsize for s in value.strides)


def stride_groups(args, keys) -> dict:
    """{argument position: position of the group's first array} for the launch's *stride groups* (issue 28
    item 4): array arguments (``_grouped`` keys) with as many axes and the same element strides on every
    axis but the last (whose stride a C-contiguous array's subscripts take to be 1), two or more to a
    group.
    The compiler shares one row offset among a group's subscripts (the hand-written stencil's one row
    width for its input and output); a launch whose arrays have other strides gets its own specialisation.
    Computed on the checked path only; the launch path checks a grouped specialisation's fact when its
    arrays change (``host.launch``)."""
    found: dict = {}
    for i, k in enumerate(keys):
        if _grouped(k):
            found.setdefault((k.ndim, element_strides(args[i])[:-1]), []).append(i)
    return {i: members[0] for members in found.values() if len(members) > 1 for i in members}


def without_stride_groups(key: tuple) -> tuple:
    """``key`` (argument keys) without stride groups: what the launch path's raw key (``raw_keyer``) of the
    same arrays is (``key`` itself if it has none)."""
    if not any(type(k) is ArrayKey and k.strides_of is not None for k in key):
        return key
    return tuple(array_key(k.dtype, k.ndim, k.layout, k.readonly, k.index32)
                 if type(k) is ArrayKey and k.strides_of is not None else k for k in key)


_raw_keyers: dict = {}


def raw_keyer(nargs: int):
    """A function giving the *raw* key of ``nargs`` arguments: each device array's ``key``, else the
    argument's type. For arguments that are device arrays (seen before) and scalars it equals
    :func:`arg_keys`; for anything else it differs from every key a specialisation is registered under,
    so a lookup misses and the launch takes the checked path. Generated per arity, with no loop; it raises
    ValueError for another number of arguments."""
    fn = _raw_keyers.get(nargs)
    if fn is None:
        names = [f"a{i}" for i in range(nargs)]
        items = "".join(f"{n}.key if type({n}) is _D else type({n}), " for n in names)
        src = (f"def raw_key(args):\n    ({', '.join(names)}{',' if nargs == 1 else ''}) = args\n"
               f"    return ({items})\n")
        namespace = {"_D": DeviceNDArray}
        exec(compile(src, f"<numba_metal argument keys/{nargs}>", "exec"), namespace)
        fn = _raw_keyers.setdefault(nargs, namespace["raw_key"])
    return fn


def numba_type_of_key(key):
    """The Numba type an argument with this key gets (imports Numba)."""
    if type(key) is ArrayKey:
        return array_type(key.dtype, key.ndim, key.layout, key.readonly, key.index32, key.strides_of)
    if type(key) is ScalarKey:
        return array_type(key.dtype, 1, "C").dtype
    if isinstance(key, DeviceFunctionBase):
        from numba import typeof
        return typeof(key)
    if isinstance(key, type) and issubclass(key, enum.Enum):
        return _enum_member_type(key)
    if type(key) is tuple:
        from numba.core import types
        items = tuple(numba_type_of_key(k) for k in key[1:])
        if items and all(t == items[0] for t in items):
            return types.UniTuple(items[0], len(items))
        return types.Tuple(items)
    return _scalars()[key]


def _enum_member_type(cls):
    """Numba's type of the members of ``cls`` (as numba.cuda types them: the class and the type of the
    values, which must be one type of number)."""
    from numba import typeof
    from numba.core import types
    try:
        ty = typeof(next(iter(cls)))
    except (ValueError, StopIteration) as e:
        raise KernelLaunchError(f"members of the Enum {cls.__name__} cannot be passed to a kernel: "
                                f"{e or 'it has no members'}") from None
    if not isinstance(ty.dtype, (types.Integer, types.Float, types.Boolean)):
        raise KernelLaunchError(f"members of the Enum {cls.__name__} have values of type {ty.dtype}; a kernel takes "
                                "Enum members whose values are integers or floats")
    return ty


def typeof_arg(value, position: int):
    """The Numba type a kernel argument gets, or a KernelLaunchError naming it."""
    return numba_type_of_key(arg_key(value, position))


class NotCanonical(Exception):
    """A type the disk cache has no canonical spelling for (such kernels are not cached)."""


def canonical(key) -> str:
    """The canonical text of an argument key, equal to :func:`canonical_numba` of its Numba type."""
    if type(key) is ArrayKey:
        dtype = key.dtype
        name = dtype.name if dtype.isnative and dtype.fields is None else None
        if name not in _DTYPE_NAMES:
            raise NotCanonical(str(dtype))
        return (f"A({name},{key.ndim},{key.layout}{',ro' if key.readonly else ''}{',i32' if key.index32 else ''}"
                f"{'' if key.strides_of is None else f',s{key.strides_of}'})")
    if type(key) is tuple:
        return "T(" + ",".join(canonical(k) for k in key[1:]) + ")"
    if type(key) is ScalarKey:
        raise NotCanonical(str(key.dtype))
    if isinstance(key, DeviceFunctionBase) or isinstance(key, type) and issubclass(key, enum.Enum) \
            or key in _UNCANONICAL:
        raise NotCanonical(key.__name__)
    return _SCALAR_NAMES[key]


def canonical_numba(ty) -> str:
    """The canonical text of a Numba argument type (raises NotCanonical for types a key never has)."""
    from numba.core import types

    from numba_metal.compiler.arraytypes import Index32Array
    if isinstance(ty, types.Array):
        index32 = getattr(ty, "index32", False)
        if not ty.aligned or str(ty.dtype) not in _DTYPE_NAMES or type(ty) is not (Index32Array if index32 else
                                                                                   types.Array):
            raise NotCanonical(str(ty))
        group = getattr(ty, "strides_of", None)
        return (f"A({ty.dtype},{ty.ndim},{ty.layout}{'' if ty.mutable else ',ro'}{',i32' if index32 else ''}"
                f"{'' if group is None else f',s{group}'})")
    if isinstance(ty, (types.UniTuple, types.Tuple)) and type(ty) in (types.UniTuple, types.Tuple):
        return "T(" + ",".join(canonical_numba(t) for t in ty.types) + ")"
    if type(ty) in (types.Integer, types.Float, types.Boolean) and str(ty) in _DTYPE_NAMES:
        return str(ty)
    raise NotCanonical(str(ty))


# ---------------------------------------------------------------------------------------------
# Array arguments bound to buffers
# ---------------------------------------------------------------------------------------------


class BoundArray:
    """An array argument bound for one launch: the buffer and byte offset to bind, its shape, strides (in
    elements) and origin (the element offset of a[0, ..., 0] from the bound offset), and what the launch
    must do after the kernel: ``copy_back`` (a function copying a device copy back into the host array,
    or None) and ``sync`` (the launch waits for the kernel: a host NumPy array was passed)."""

    __slots__ = ("buffer", "bind_offset", "shape", "strides", "origin", "copy_back", "sync")

    def __init__(self, buffer, bind_offset, shape, strides, origin, copy_back=None, sync=False):
        self.buffer = buffer
        self.bind_offset = bind_offset
        self.shape = shape
        self.strides = strides
        self.origin = origin
        self.copy_back = copy_back
        self.sync = sync


def bind_array(ctx, value, argi, kernel_name, written_at="?") -> BoundArray:
    """Array argument ``argi`` of kernel ``kernel_name`` as a binding on device ``ctx`` (raises
    KernelLaunchError for an array that cannot be passed). ``written_at`` is where the kernel may write
    the argument ("" if it only reads it): a read-only NumPy array is refused then."""
    if isinstance(value, DeviceNDArray):
        check_same_device(ctx, value, f"argument {argi} of {kernel_name}()")
        bind, strides, origin = value.binding()
        return BoundArray(value.buffer, bind, value.shape, strides, origin)
    is_record = isinstance(value, np.void) and value.dtype.names
    if (is_record or isinstance(value, np.ndarray)) and written_at and not value.flags.writeable:
        raise KernelLaunchError(
            f"argument {argi} of {kernel_name}() is read-only NumPy memory (its flags.writeable is False) and "
            f"the kernel may write it ({written_at}), which would be lost; pass a writable array (e.g. a.copy()), "
            "or metal.to_device(a) and copy the results back yourself")
    if isinstance(value, np.ndarray):
        return _bind_host_array(ctx, value, argi, kernel_name)
    if is_record:
        return _bind_record(ctx, value, argi, kernel_name)
    if isinstance(value, ArgHint):
        return _bind_hinted(ctx, value, argi, kernel_name)
    raise KernelLaunchError(f"argument {argi} of {kernel_name}() must be an array")


def _bind_record(ctx, value: np.void, argi, kernel_name) -> BoundArray:
    """A record argument: passed by reference as numba.cuda passes it, through a copy of its bytes that
    is copied back into it (into the array it belongs to, when it is an element of one) after the kernel."""
    host = np.array([value])
    bound = _bind_host_array(ctx, host, argi, kernel_name)
    copy_host = bound.copy_back

    def copy_back():
        if copy_host is not None:
            copy_host()
        for name in value.dtype.names:
            value[name] = host[0][name]

    bound.shape = bound.strides = ()
    bound.copy_back = copy_back
    return bound


def _bind_hinted(ctx, hint: ArgHint, argi, kernel_name) -> BoundArray:
    value = hint.value
    if not isinstance(value, np.ndarray) or getattr(value, "device_buffer", None) is not None or (
            hint.copy_in and hint.copy_out):
        return bind_array(ctx, value, argi, kernel_name)
    if hint.copy_in:   # In: a device copy the kernel may use after the launch returns
        perf_warnings.implicit_copy()
        dev = to_device(value)
        bind, strides, origin = dev.binding()
        return BoundArray(dev.buffer, bind, dev.shape, strides, origin)
    return _bind_in_place(ctx, value) or _bind_through_copy(value, copy_in=False)


def _bind_in_place(ctx, value: np.ndarray):
    """A plain NumPy array bound in place (zero-copy), or None when the device cannot use its memory."""
    wrapped = wrap_host_memory(ctx, value)
    if wrapped is None:
        return None
    bind, strides, origin = element_binding(wrapped[1], value.shape, value.strides, value.itemsize)
    return BoundArray(wrapped[0], bind, value.shape, strides, origin, sync=True)


def _bind_through_copy(value: np.ndarray, copy_in: bool) -> BoundArray:
    """A plain NumPy array through a device copy (of its data when ``copy_in``), copied back after the
    kernel unless it is read-only; the launch waits for the kernel."""
    perf_warnings.implicit_copy()
    dev = to_device(value, copy=copy_in)
    copy_back = None
    if value.flags.writeable:
        def copy_back(dev=dev, value=value):
            copy_into_host(dev, value)
    bind, strides, origin = dev.binding()
    return BoundArray(dev.buffer, bind, dev.shape, strides, origin, copy_back=copy_back, sync=True)


def _bind_host_array(ctx, value: np.ndarray, argi, kernel_name) -> BoundArray:
    buf = getattr(value, "device_buffer", None)
    lowest, extent = host_span(value)
    if buf is not None and buf.address <= lowest and lowest + extent <= buf.address + buf.nbytes:
        # A mapped array (or a view of one): already device memory; the launch stays asynchronous.
        # (Arrays NumPy derives from a mapped array by computing, e.g. ``m + 1``, keep its class but not
        # its memory: those are plain arrays.)
        if getattr(value, "device_context", None) is not ctx:
            raise KernelLaunchError(f"argument {argi} of {kernel_name}() is a mapped array of another device")
        offset = value.ctypes.data - buf.address
        bind, strides, origin = element_binding(offset, value.shape, value.strides, value.itemsize)
        return BoundArray(buf, bind, value.shape, strides, origin)
    # A plain NumPy array. Unified memory lets the kernel use it in place when it is page-aligned and
    # writeable; otherwise it goes through a device copy and back, as numba.cuda does. Either way the
    # launch waits for the kernel, so the results are in the array when the call returns.
    return _bind_in_place(ctx, value) or _bind_through_copy(value, copy_in=True)
