"""``numba.cuda.vector_types``: numba-cuda's internal table of its vector types, ``vector_types`` (name -> type
with ``base_type``, ``num_elements`` and ``user_facing_object``, the constructor ``cuda.<name>``), which its
tests use to go through every vector type. Here it describes numba-metal's vector types
(numba_metal/compiler/vectortypes.py): ``user_facing_object`` is numba-metal's constructor ``metal.<name>``
(with numba.cuda's ``aliases``), so the tests compile and run numba-metal's vector types."""

from numba_metal import metal as _metal
from numba_metal.compiler.vectortypes import VECTOR_TYPES as _VECTOR_TYPES


class VectorTypeEntry:
    """One row of numba.cuda's ``vector_types`` over numba-metal's vector type ``vtype``."""

    def __init__(self, vtype):
        self.vtype = vtype
        self.name = vtype.name
        self.base_type = vtype.element
        self.num_elements = vtype.count
        self.attr_names = vtype.attributes
        self.user_facing_object = getattr(_metal, vtype.name)

    def __repr__(self):
        return self.name


vector_types = {name: VectorTypeEntry(vtype) for name, vtype in _VECTOR_TYPES.items()}
