"""numba.cuda's vector types (``float32x4``, ``int32x2``... and CUDA's aliases ``float4``, ``int2``):
the Numba types, and how each is spelt in MSL.

A vector of 2 to 4 elements of a type MSL has vectors of is MSL's own vector (``float4``, ``long2``);
the others (1 element, or float64 elements, which MSL vectors cannot hold) are a struct with members
``x``... of the element type. Either way a vector has exactly the members ``x``, ``y``, ``z``, ``w``
it has in numba.cuda.
"""

from __future__ import annotations

from numba.core import types

ATTRIBUTES = ("x", "y", "z", "w")

#: Element types of numba.cuda's vector types (numba-cuda's stubs.py).
ELEMENTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")

#: CUDA's alias base names (``char4``, ``double2``...) -> element type, for an LP64 host as numba.cuda's.
ALIASES = {"char": "int8", "short": "int16", "int": "int32", "long": "int64", "longlong": "int64",
           "uchar": "uint8", "ushort": "uint16", "uint": "uint32", "ulong": "uint64", "ulonglong": "uint64",
           "float": "float32", "double": "float64"}


class VectorType(types.Type):
    """``<element>x<count>``: ``count`` values of ``element`` named ``x``, ``y``, ``z``, ``w``."""

    def __init__(self, element, count: int):
        self.element = element
        self.count = count
        super().__init__(name=f"{element}x{count}")

    @property
    def attributes(self) -> tuple[str, ...]:
        return ATTRIBUTES[:self.count]

    @property
    def native(self) -> bool:
        """True if MSL has this vector type itself."""
        return self.count > 1 and self.element != types.float64


#: numba.cuda's vector type names -> types.
VECTOR_TYPES = {f"{e}x{n}": VectorType(getattr(types, e), n) for e in ELEMENTS for n in range(1, 5)}
