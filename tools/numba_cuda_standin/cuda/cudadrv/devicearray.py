"""``numba.cuda.cudadrv.devicearray`` as numba-metal has it: numba.cuda's names mapped onto numba-metal's
(``NAMES``). A name numba-metal lacks raises AttributeError, so a test using it fails."""

from numba_metal import metal as _metal

#: numba.cuda's name → numba-metal's object of the same meaning (``metal.devicearray``'s names)
NAMES = {name: getattr(_metal.devicearray, name) for name in _metal.devicearray.__all__}
NAMES["errmsg_contiguous_buffer"] = _metal.devicearray.errmsg_contiguous_buffer


def __getattr__(name):
    value = NAMES.get(name)
    if value is None:
        raise AttributeError(f"numba.cuda.cudadrv.devicearray (numba_cuda_standin) has no {name!r}: "
                             "numba-metal has no counterpart")
    return value
