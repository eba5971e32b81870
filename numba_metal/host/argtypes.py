"""Numba types of kernel arguments, computed fast (the launch path runs this for every argument)."""

from __future__ import annotations

import numpy as np

from numba_metal.errors import KernelLaunchError

_array_types: dict = {}
_scalar_types: dict | None = None


def _scalars() -> dict:
    global _scalar_types
    if _scalar_types is None:
        from numba.core import types
        table = {
            bool: types.boolean, int: types.int64, float: types.float32,
            np.bool_: types.boolean, np.int8: types.int8, np.int16: types.int16, np.int32: types.int32,
            np.int64: types.int64, np.uint8: types.uint8, np.uint16: types.uint16,
            np.uint32: types.uint32, np.uint64: types.uint64, np.float16: types.float16,
            np.float32: types.float32, np.float64: types.float64,
        }
        _scalar_types = table
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


def typeof_arg(value, position: int):
    """The Numba type a kernel argument gets, or a KernelLaunchError naming it."""
    from .arrays import DeviceNDArray, layout_of
    if isinstance(value, DeviceNDArray):
        return value._numba_type()
    ty = _scalars().get(type(value))
    if ty is not None:
        return ty
    if isinstance(value, np.ndarray):
        layout = layout_of(value.shape, value.strides, value.itemsize)
        return array_type(value.dtype, value.ndim, layout)
    if isinstance(value, tuple):
        from numba.core import types
        items = tuple(typeof_arg(v, position) for v in value)
        if items and all(t == items[0] for t in items):
            return types.UniTuple(items[0], len(items))
        return types.Tuple(items)
    if isinstance(value, np.generic):
        return array_type(value.dtype, 1, "C").dtype
    if isinstance(value, complex):
        raise KernelLaunchError(f"argument {position} is complex, which Metal kernels do not support")
    raise KernelLaunchError(f"argument {position} has type {type(value).__name__}, which cannot be passed "
                            "to a Metal kernel; pass device arrays, NumPy arrays, numbers or tuples of numbers")
