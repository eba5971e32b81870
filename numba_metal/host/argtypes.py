"""Types of kernel arguments, computed fast (the launch path runs this for every argument).

A launch looks its specialisation up by an *argument key*: a small hashable value per argument built
without Numba (the NumPy dtype, dimensions and layout of an array; the Python type of a scalar).
The key determines the argument's Numba type (:func:`numba_type_of_key`), which is only computed when a
specialisation is compiled, so a process whose kernels all come from the disk cache never imports Numba.
:func:`canonical` spells a key, or a Numba type, as the text the disk cache's key is made of.
"""

from __future__ import annotations

import numpy as np

from numba_metal.errors import KernelLaunchError

from .arrays import DeviceNDArray, layout_of

_array_types: dict = {}
_scalar_types: dict | None = None

#: Scalar argument types a key can name directly (the key is the type object itself).
SCALAR_TYPES = (bool, int, float, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                np.uint32, np.uint64, np.float16, np.float32, np.float64)
_SCALAR_SET = frozenset(SCALAR_TYPES)
#: Canonical names of scalar keys: what Numba calls the type the value gets.
_SCALAR_NAMES = {bool: "bool", int: "int64", float: "float32", np.bool_: "bool", np.int8: "int8",
                 np.int16: "int16", np.int32: "int32", np.int64: "int64", np.uint8: "uint8", np.uint16: "uint16",
                 np.uint32: "uint32", np.uint64: "uint64", np.float16: "float16", np.float32: "float32",
                 np.float64: "float64"}
_DTYPE_NAMES = frozenset(["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "float32", "float64"])

TUPLE = "T"   # key of a tuple: (TUPLE, item keys...)


class ArrayKey:
    """The key of an array argument. Interned (:func:`array_key`), so it compares and hashes by identity:
    the launch path hashes keys on every launch, and hashing a NumPy dtype is slow."""

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


def _scalars() -> dict:
    global _scalar_types
    if _scalar_types is None:
        from numba.core import types
        _scalar_types = {t: getattr(types, "boolean" if n == "bool" else n) for t, n in _SCALAR_NAMES.items()}
    return _scalar_types


def array_type(dtype, ndim: int, layout: str, readonly: bool = False):
    """The Numba array type for a dtype, number of dimensions and layout (cached)."""
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


def array_key(dtype, ndim: int, layout: str, readonly: bool = False) -> ArrayKey:
    """The (interned) key of arrays of this dtype, number of dimensions and layout."""
    spec = (np.dtype(dtype), int(ndim), layout, bool(readonly))
    key = _array_keys.get(spec)
    if key is None:
        key = _array_keys.setdefault(spec, ArrayKey(*spec))
    return key


def arg_key(value, position: int):
    """The argument key of ``value`` (argument ``position``), or a KernelLaunchError naming it."""
    t = type(value)
    if t in _SCALAR_SET:
        return t
    if isinstance(value, DeviceNDArray):
        key = value._key
        if key is None:
            key = value._key = array_key(value.dtype, value.ndim, value._layout)
        return key
    if isinstance(value, np.ndarray):
        return array_key(value.dtype, value.ndim, layout_of(value.shape, value.strides, value.itemsize))
    if isinstance(value, tuple):
        return (TUPLE,) + tuple(arg_key(v, position) for v in value)
    if isinstance(value, np.generic):
        return np.dtype(t).type if np.dtype(t).type in _SCALAR_SET else array_key(np.dtype(t), 0, "C")
    if isinstance(value, complex):
        raise KernelLaunchError(f"argument {position} is complex, which Metal kernels do not support")
    raise KernelLaunchError(f"argument {position} has type {type(value).__name__}, which cannot be passed "
                            "to a Metal kernel; pass device arrays, NumPy arrays, numbers or tuples of numbers")


def arg_keys(args) -> tuple:
    """The argument keys of a launch's arguments (raises KernelLaunchError for one that cannot be passed)."""
    return tuple([arg_key(a, i) for i, a in enumerate(args)])


_raw_keyers: dict = {}


def raw_keyer(nargs: int):
    """A function giving the *raw* key of ``nargs`` arguments: each device array's cached key, else the
    argument's type. For arguments that are device arrays (seen before) and scalars it equals
    :func:`arg_keys`; for anything else it differs from every key a specialisation is registered under,
    so a lookup misses and the launch takes the checked path. Generated per arity, with no loop."""
    fn = _raw_keyers.get(nargs)
    if fn is None:
        names = [f"a{i}" for i in range(nargs)]
        items = "".join(f"{n}._key if type({n}) is _D else type({n}), " for n in names)
        src = (f"def raw_key(args):\n    {', '.join(names)}{',' if nargs == 1 else ''} = args\n"
               f"    return ({items})\n") if nargs else "def raw_key(args):\n    return ()\n"
        namespace = {"_D": DeviceNDArray}
        exec(compile(src, f"<numba_metal argument keys/{nargs}>", "exec"), namespace)
        fn = _raw_keyers.setdefault(nargs, namespace["raw_key"])
    return fn


def numba_type_of_key(key):
    """The Numba type an argument with this key gets (imports Numba)."""
    if type(key) is ArrayKey:
        if key.ndim == 0:  # a NumPy scalar of a dtype without a Python scalar type
            return array_type(key.dtype, 1, "C").dtype
        return array_type(key.dtype, key.ndim, key.layout, key.readonly)
    if type(key) is tuple:
        from numba.core import types
        items = tuple(numba_type_of_key(k) for k in key[1:])
        if items and all(t == items[0] for t in items):
            return types.UniTuple(items[0], len(items))
        return types.Tuple(items)
    return _scalars()[key]


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
        if key.ndim == 0 or name not in _DTYPE_NAMES:
            raise NotCanonical(str(dtype))
        return f"A({name},{key.ndim},{key.layout}{',ro' if key.readonly else ''})"
    if type(key) is tuple:
        return "T(" + ",".join(canonical(k) for k in key[1:]) + ")"
    return _SCALAR_NAMES[key]


def canonical_numba(ty) -> str:
    """The canonical text of a Numba argument type (raises NotCanonical for types a key never has)."""
    from numba.core import types
    if isinstance(ty, types.Array):
        if not ty.aligned or str(ty.dtype) not in _DTYPE_NAMES or type(ty) is not types.Array:
            raise NotCanonical(str(ty))
        return f"A({ty.dtype},{ty.ndim},{ty.layout}{'' if ty.mutable else ',ro'})"
    if isinstance(ty, (types.UniTuple, types.Tuple)) and type(ty) in (types.UniTuple, types.Tuple):
        return "T(" + ",".join(canonical_numba(t) for t in ty.types) + ")"
    if type(ty) in (types.Integer, types.Float, types.Boolean) and str(ty) in _DTYPE_NAMES:
        return str(ty)
    raise NotCanonical(str(ty))
