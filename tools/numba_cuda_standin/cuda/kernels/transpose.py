"""``numba.cuda.kernels.transpose``: numba-cuda's helper behind ``DeviceNDArray.transpose()``, which copies a 2-d
array transposed into another (numba.cuda's transpose is a copy). Here the copy is numba-metal's own: its
transposed view ``a.T`` copied into ``b`` by ``copy_to_device`` (numba-metal copies between strided arrays)."""

from numba_metal import metal as _metal


def transpose(a, b=None):
    """numba.cuda's: the transpose of the 2-d array ``a`` stored into ``b`` (allocated if not given), returned."""
    if b is None:
        b = _metal.device_array(a.shape[::-1], dtype=a.dtype, stream=getattr(a, "stream", 0))
    b.copy_to_device(a.T if _metal.is_device_array(a) else _metal.to_device(a).T)
    return b
