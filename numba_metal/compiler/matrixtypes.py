"""The Numba type of a SIMD-group matrix (``metal.simdgroup``): an 8x8 matrix of float32 or float16 that the
32 threads of a SIMD group hold together (MSL's ``simdgroup_float8x8`` and ``simdgroup_half8x8``)."""

from __future__ import annotations

from numba.core import types

#: The side of a SIMD-group matrix: MSL has 8x8 only (specification section 2.4).
SIDE = 8

#: The element types MSL's SIMD-group matrices hold and numba-metal offers (bfloat is MSL 3.1's, and NumPy has none).
ELEMENT_TYPES = (types.float32, types.float16)


class SimdgroupMatrix(types.Type):
    """An 8x8 SIMD-group matrix of ``dtype`` (float32 or float16)."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"simdgroup_matrix({dtype}, {SIDE}x{SIDE})")


#: The matrix type of each element type.
MATRIX_OF = {dtype: SimdgroupMatrix(dtype) for dtype in ELEMENT_TYPES}
