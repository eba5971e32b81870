"""``numba.cuda.cudadrv.devicearray`` as numba-metal has it: numba.cuda's names mapped onto numba-metal's
(``NAMES``). A name numba-metal lacks raises AttributeError, so a test using it fails."""

from numba_metal import metal as _metal
from numba_metal.host import arrays as _arrays

#: numba.cuda's name → numba-metal's object of the same meaning
NAMES = {
    "DeviceNDArray": _metal.DeviceNDArray,
    "is_cuda_ndarray": _metal.is_device_array,
    "auto_device": getattr(_arrays, "auto_device", None),
    "is_contiguous": getattr(_arrays, "is_contiguous", None),
}


def __getattr__(name):
    value = NAMES.get(name)
    if value is None:
        raise AttributeError(f"numba.cuda.cudadrv.devicearray (numba_cuda_standin) has no {name!r}: "
                             "numba-metal has no counterpart")
    return value
