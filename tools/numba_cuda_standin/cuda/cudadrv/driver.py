"""``numba.cuda.cudadrv.driver``: the driver names numba-cuda's tests import. ``Stream`` is numba-metal's;
``CudaAPIError`` is numba-metal's error for a failed device operation; ``driver`` is a plain object with no CUDA
driver functions (patching them, as some tests do, changes nothing here)."""

import types

from numba_metal import metal as _metal
from numba_metal.errors import MetalRuntimeError as CudaAPIError  # noqa: F401

Stream = _metal.Stream


def _have_nvjitlink():
    return False


driver = types.SimpleNamespace(_have_nvjitlink=_have_nvjitlink)
