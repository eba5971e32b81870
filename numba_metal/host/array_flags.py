"""The ``flags`` of a device array: numba.cuda's dict of contiguity flags (``contiguity_flags``), readable as
NumPy's flags too (``ArrayFlags``); and the geometry fact a launch specialises on (``index32``)."""

from __future__ import annotations


class ArrayFlags(dict):
    """``{'C_CONTIGUOUS': bool, 'F_CONTIGUOUS': bool}`` (numba.cuda's ``DeviceNDArray.flags``, a dict) that
    also answers NumPy's attribute names: ``.c_contiguous``, ``.f_contiguous`` and ``.contiguous`` (C), so
    code written for either kind of array reads a device array's flags.

    Raises:
        AttributeError: an attribute other than those three (a device array has no other flags).
    """

    __slots__ = ()

    _ATTRIBUTES = {"c_contiguous": "C_CONTIGUOUS", "f_contiguous": "F_CONTIGUOUS", "contiguous": "C_CONTIGUOUS"}

    def __getattr__(self, name):
        key = self._ATTRIBUTES.get(name)
        if key is None:
            raise AttributeError(f"a device array's flags have no {name!r}; they are "
                                 f"{', '.join(self._ATTRIBUTES)} (or the keys {', '.join(self)})")
        return self[key]


def contiguity_flags(shape, strides, itemsize) -> dict:
    """numba.cuda's contiguity flags of an array geometry (NumPy's ``_UpdateContiguousFlags``, except
    that any zero stride makes an array neither C- nor F-contiguous)."""
    flags = {"C_CONTIGUOUS": True, "F_CONTIGUOUS": True}
    if not shape:
        return flags
    if 0 in strides:
        return {"C_CONTIGUOUS": False, "F_CONTIGUOUS": False}
    if 0 in shape:
        return flags
    for name, dims in (("C_CONTIGUOUS", range(len(shape) - 1, -1, -1)), ("F_CONTIGUOUS", range(len(shape)))):
        expected = itemsize
        for k in dims:
            if shape[k] != 1:
                if strides[k] != expected:
                    flags[name] = False
                    break
                expected *= shape[k]
    return flags


#: An array whose axes and element offsets are all below this is indexed in 32 bits (issue 28 item 1).
INDEX32_LIMIT = 2 ** 31


def index32(shape, strides, itemsize) -> bool:
    """True if this geometry has fewer than ``2**31`` elements, each fewer than ``2**31`` elements from
    element ``[0, ..., 0]`` (whatever the strides' signs), and every axis (an empty array's too) is shorter
    than ``2**31``: an in-bounds index component and element offset then fit in a signed 32-bit ``int``,
    and the compiler may take the shape's values to be below ``2**31`` (compiler/ranges.py); the stride of
    an axis of length 1 (which NumPy leaves free) is in ``[0, 2**31)`` elements too. Part of a
    launch's argument key (``host.arrays.ArrayKey``), so that a launch with a larger array gets the 64-bit
    specialisation."""
    if any(n >= INDEX32_LIMIT for n in shape):
        return False          # an axis's length is read as a value below 2**31 (a range() bound, say)
    if any(n == 1 and not 0 <= s < INDEX32_LIMIT * itemsize for n, s in zip(shape, strides)):
        return False          # the stride of a length-1 axis is free (NumPy): compiler/arrays.py's row
                              # pointers take every stride of a C-contiguous array in [0, 2**31) elements
    if 0 in shape:
        return True
    size = 1
    for n in shape:
        size *= n
    span = sum((n - 1) * abs(s) for n, s in zip(shape, strides)) // itemsize
    return size < INDEX32_LIMIT and span < INDEX32_LIMIT
