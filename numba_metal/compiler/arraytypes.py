"""Array types that remember their Metal address space.

Numba's ``types.Array`` says nothing about where an array lives, but MSL pointers must: a shared
(threadgroup) array, a per-thread local array and a constant array are different MSL types. A
``MetalArray`` carries its address space in its Numba type, so device functions specialise on it and
views keep it.
"""

from __future__ import annotations

from numba.core import types
from numba.core.typeconv import Conversion


class MetalArray(types.Array):
    """An array in the ``threadgroup``, ``thread`` or ``constant`` address space."""

    def __init__(self, dtype, ndim, layout, address_space: str, readonly=False, aligned=True):
        self.address_space = address_space
        super().__init__(dtype, ndim, layout, readonly=readonly, aligned=aligned,
                         name=f"{address_space} array({dtype}, {ndim}d, {layout})")

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        aligned = self.aligned
        if ndim is not None and self.address_space == "threadgroup":
            # A view (sm[i], sm[1:]: Numba's indexing gives ndim) starts where its first element is: for
            # elements narrower than 32 bits that may be inside a 32-bit word, which fp16.atomicAdd must
            # know (kernel_api/atomics.py).
            element = self.dtype if dtype is None else dtype
            aligned = aligned and getattr(element, "bitwidth", 32) >= 32
        return MetalArray(self.dtype if dtype is None else dtype,
                          self.ndim if ndim is None else ndim,
                          self.layout if layout is None else layout,
                          self.address_space,
                          readonly=(not self.mutable) if readonly is None else readonly,
                          aligned=aligned)

    @property
    def key(self):
        return super().key + (self.address_space,)

    def can_convert_to(self, typingctx, other):
        if not isinstance(other, MetalArray) or other.address_space != self.address_space:
            return None
        return super().can_convert_to(typingctx, other)

    def unify(self, typingctx, other):
        if isinstance(other, MetalArray) and other.address_space == self.address_space:
            return super().unify(typingctx, other)
        return None

#: The word shared, local and constant arrays of records are declared in: 16 bytes, the largest alignment
#: a field needs (a complex128's ulong2), so that fields are as aligned as in device memory.
RECORD_WORD = "uint4"


class MetalRecord(types.Record):
    """A record (NumPy structured dtype) in the ``threadgroup``, ``thread`` or ``constant`` address space:
    an element of a shared, local or constant array of records. A record value is a pointer to its bytes
    (compiler/records.py), and MSL pointers name their address space, so the record type carries it as
    ``MetalArray`` does; its nested records and nested arrays are in the same space."""

    def __init__(self, record: types.Record, address_space: str):
        self.record = record
        self.address_space = address_space
        fields = [(name, {"type": f.type, "offset": f.offset, "alignment": f.alignment, "title": f.title})
                  for name, f in record.fields.items()]
        super().__init__(fields, record.size, record.aligned)
        self.name = " ".join((address_space, record.name))   # a Numba type name, not MSL

    @property
    def key(self):
        return self.name

    def typeof(self, key):
        return in_space(super().typeof(key), self.address_space)

    def same_record(self, other) -> bool:
        """True if ``other`` is this record in any address space."""
        return isinstance(other, types.Record) and plain_record(other) == self.record

    def can_convert_to(self, typingctx, other):
        # A whole record copied between address spaces (sm[i] = x[j], y[j] = sm[i]): never a safe
        # conversion, so that Numba does not unify a variable holding records of two spaces.
        if self.same_record(other):
            return Conversion.unsafe
        return None

    def can_convert_from(self, typingctx, other):
        if self.same_record(other):
            return Conversion.unsafe
        return None


def plain_record(rec: types.Record) -> types.Record:
    """The record type without its address space (the layout's and the MSL struct's)."""
    return rec.record if isinstance(rec, MetalRecord) else rec


def in_space(ty, address_space: str):
    """``ty`` (a record's field type or an array's dtype) as it is held in ``address_space``: records
    and nested arrays there are that space's (device memory's are Numba's own types)."""
    if address_space == "device":
        return ty
    if isinstance(ty, types.Record):
        return MetalRecord(plain_record(ty), address_space)
    if isinstance(ty, types.NestedArray):
        return MetalArray(in_space(ty.dtype, address_space), ty.ndim, "C", address_space,
                          readonly=address_space == "constant")
    return ty

class Index32Array(types.Array):
    """A device array a launch knows is *small*: each axis has fewer than ``2**31`` elements and every
    element is within ``2**31 - 1`` elements of ``a[0, ..., 0]`` (issue 28 item 1; the host decides, see
    ``host.arrays.index32``). An in-bounds index component and element offset of it, or of any view of it
    (a view's elements are the array's), fit in a signed 32-bit ``int``, so arrays.py computes them in
    32 bits. A plain ``types.Array`` (an explicit signature, a typed view Numba rebuilt) says nothing of
    its size and is indexed in 64 bits.

    ``strides_of`` (a kernel argument's position, or None): the launch's *stride group* (issue 28 item 4):
    every array argument of the launch whose type has the same ``strides_of`` has the same element strides
    on every axis but the last (a C-contiguous array's subscripts take that one to be 1):
    ``host.arguments.arg_keys`` decides, and the launch checks it again when its arrays change
    (``host.launch``). arrays.py shares one row offset among their subscripts. A view (``copy``) has other
    strides and drops it."""

    index32 = True

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True, strides_of=None):
        self.strides_of = strides_of
        group = "" if strides_of is None else ", strides of arg " + str(strides_of)
        super().__init__(dtype, ndim, layout, readonly=readonly, aligned=aligned,
                         name=f"array({dtype}, {ndim}d, {layout}{', readonly' if readonly else ''}, index32{group})")

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        if dtype is not None and dtype != self.dtype:     # a reinterpreting view counts other elements
            return super().copy(dtype, ndim, layout, readonly)
        return Index32Array(self.dtype, self.ndim if ndim is None else ndim,
                            self.layout if layout is None else layout,
                            readonly=(not self.mutable) if readonly is None else readonly, aligned=self.aligned)

    @property
    def key(self):
        return super().key + (("index32",) if self.strides_of is None else ("index32", self.strides_of))


def plain(ty):
    """``ty`` without the launch's size fact: an ``Index32Array`` as the ``types.Array`` it refines (what
    an explicit signature or numba.cuda code names), anything else as it is."""
    if isinstance(ty, Index32Array):
        return types.Array(ty.dtype, ty.ndim, ty.layout, readonly=not ty.mutable, aligned=ty.aligned)
    return ty


class Signatures(dict):
    """A kernel's specialisations by argument types (numba.cuda's ``overloads``): a signature of plain
    array types (numba.cuda's) also finds the specialisation compiled for small arrays of those types,
    when no 64-bit one was compiled."""

    def __missing__(self, key):
        if isinstance(key, tuple):
            for sig, value in self.items():
                if len(sig) == len(key) and tuple(plain(t) for t in sig) == key:
                    return value
        raise KeyError(key)

    def __contains__(self, key):
        try:
            self[key]
        except KeyError:
            return False
        return True

    def get(self, key, default=None):
        return self[key] if key in self else default
