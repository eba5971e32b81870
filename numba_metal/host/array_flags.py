"""The ``flags`` of a device array: numba.cuda's dict of contiguity flags, readable as NumPy's flags too."""

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
