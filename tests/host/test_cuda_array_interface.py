"""numba.cuda's CUDA Array Interface names under ``metal.``: ``as_cuda_array`` and ``is_cuda_array`` are
``as_metal_array`` and ``is_metal_array`` (Mac libraries exchange arrays through DLPack), while
``from_cuda_array_interface`` and ``DeviceNDArray.__cuda_array_interface__`` are refused: the interface's
pointer is CUDA device memory, which a Mac does not have (docs/porting-from-numba-cuda.md)."""

import numpy as np
import pytest

from numba_metal import metal
from numba_metal.errors import DLPackError, UnsupportedFeatureError


@metal.jit
def double(a):
    i = metal.grid(1)
    if i < a.size:
        a[i] *= 2


class CudaOnly:
    """What CuPy or a CUDA tensor offers: the CUDA Array Interface, no DLPack."""

    def __init__(self):
        self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0x7F0000000000, False),
                                         "version": 3, "strides": None}


def test_as_cuda_array_is_as_metal_array_sharing_memory_without_a_copy():
    assert metal.as_cuda_array is metal.as_metal_array
    host = metal.mapped_array(512, np.float32)     # page-aligned: usable in place
    host[:] = np.arange(512)
    d = metal.as_cuda_array(host)
    assert isinstance(d, metal.DeviceNDArray) and d.buffer.address == host.ctypes.data
    double[2, 256](d)
    metal.synchronize()
    np.testing.assert_array_equal(host, np.arange(512) * 2)
    assert metal.as_cuda_array(d) is d
    with pytest.raises(DLPackError, match="cannot be used without a copy"):
        metal.as_cuda_array(np.arange(513, dtype=np.float32)[1:])   # not page-aligned: as_cuda_array never copies


def test_is_cuda_array_is_is_metal_array():
    assert metal.is_cuda_array is metal.is_metal_array
    assert metal.is_cuda_array(metal.to_device(np.zeros(2, np.float32)))
    assert not metal.is_cuda_array(np.zeros(2))
    assert not metal.is_cuda_array(CudaOnly())       # CUDA memory is nothing a Metal kernel can use


def test_cuda_memory_is_refused_saying_what_to_use():
    with pytest.raises(DLPackError, match="CudaOnly describes CUDA device memory.*metal.from_dlpack"):
        metal.as_cuda_array(CudaOnly())
    with pytest.raises(UnsupportedFeatureError, match="CUDA device memory.*DLPack.*metal.from_dlpack"):
        metal.from_cuda_array_interface(CudaOnly().__cuda_array_interface__)
    with pytest.raises(DLPackError, match="CUDA device memory"):
        metal.from_dlpack(CudaOnly())
    with pytest.raises(metal.KernelLaunchError, match="argument 0 is a CudaOnly in CUDA device memory.*DLPack"):
        double[1, 4](CudaOnly())


def test_device_arrays_have_no_cuda_array_interface():
    d = metal.to_device(np.arange(4, dtype=np.float32))
    assert not hasattr(d, "__cuda_array_interface__")   # the probe other libraries use answers no
    with pytest.raises(AttributeError, match="no __cuda_array_interface__.*DLPack.*np.from_dlpack"):
        d.__cuda_array_interface__
    np.testing.assert_array_equal(np.from_dlpack(d), np.arange(4))
