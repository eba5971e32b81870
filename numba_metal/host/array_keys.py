"""The key a launch looks an array argument's specialisation up by (:class:`ArrayKey`, interned by
:func:`array_key`) and the Numba type it stands for (:func:`array_type`)."""

from __future__ import annotations

import numpy as np

from numba_metal.errors import KernelLaunchError


class ArrayKey:
    """The key of arrays of one dtype, number of dimensions, layout and writability, and whether they are
    indexed in 32 bits (``array_flags.index32``): what a launch looks a specialisation up by. Interned
    (:func:`array_key`), so it compares and hashes by identity: the launch path hashes keys on every launch,
    and hashing a NumPy dtype is slow. ``strides_of`` (None unless set by ``arguments.arg_keys``): the
    launch knows this array's element strides (but the last) equal those of array argument ``strides_of``
    (issue 28 item 4: one row offset for the arrays of a stride group); an array's own key
    (``DeviceNDArray.key``) never has it."""

    __slots__ = ("dtype", "ndim", "layout", "readonly", "index32", "strides_of", "__weakref__")

    def __init__(self, dtype: np.dtype, ndim: int, layout: str, readonly: bool, index32: bool = False,
                 strides_of: int | None = None):
        self.dtype, self.ndim, self.layout, self.readonly, self.index32 = dtype, ndim, layout, readonly, index32
        self.strides_of = strides_of

    def __repr__(self) -> str:
        return (f"ArrayKey({self.dtype}, {self.ndim}, {self.layout!r}{', readonly' if self.readonly else ''}"
                f"{', index32' if self.index32 else ''}"
                f"{'' if self.strides_of is None else f', strides of argument {self.strides_of}'})")

    def __reduce__(self):
        return (array_key, (self.dtype, self.ndim, self.layout, self.readonly, self.index32, self.strides_of))


_array_keys: dict = {}


def array_key(dtype, ndim: int, layout: str, readonly: bool = False, index32: bool = False,
              strides_of: int | None = None) -> ArrayKey:
    """The (interned) key of arrays of this dtype, number of dimensions and layout (``strides_of``: the
    launch's stride-group fact, ``arguments.arg_keys``)."""
    spec = (np.dtype(dtype), int(ndim), layout, bool(readonly), bool(index32),
            None if strides_of is None else int(strides_of))
    key = _array_keys.get(spec)
    if key is None:
        key = _array_keys.setdefault(spec, ArrayKey(*spec))
    return key


_array_types: dict = {}


def array_type(dtype, ndim: int, layout: str, readonly: bool = False, index32: bool = False,
               strides_of: int | None = None):
    """The Numba array type for a dtype, number of dimensions and layout (cached; imports Numba);
    ``index32``: the compiler's ``Index32Array``, ``strides_of`` its stride-group fact."""
    key = (np.dtype(dtype), ndim, layout, readonly, index32, strides_of)
    ty = _array_types.get(key)
    if ty is None:
        from numba.core import types
        from numba.np.numpy_support import from_dtype
        try:
            nbdtype = from_dtype(key[0])
        except Exception:  # noqa: BLE001 - any dtype Numba cannot represent
            raise KernelLaunchError(f"arrays of dtype {key[0]} are not supported") from None
        if index32:
            from numba_metal.compiler.arraytypes import Index32Array
            ty = Index32Array(nbdtype, ndim, layout, readonly=readonly, strides_of=strides_of)
        else:
            ty = types.Array(nbdtype, ndim, layout, readonly=readonly)
        _array_types[key] = ty
    return ty
