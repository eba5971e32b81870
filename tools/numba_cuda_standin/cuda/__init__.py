"""``numba.cuda`` as numba-metal has it: every name is ``numba_metal.metal``'s (``cuda.jit`` is ``metal.jit``,
``cuda.grid`` is ``metal.grid``...) but ``get_current_device``, whose device also has a ``compute_capability``
(``_Device``). A name numba-metal lacks raises AttributeError, so a test using it fails.

``config`` and ``types`` are Numba's (numba-cuda 0.30 carries copies of them); ``HAS_NUMBA`` is True, as in
numba-cuda with Numba installed (numba-metal extends Numba).
"""

import importlib

from numba.core import config, types  # noqa: F401

from numba_metal import metal as _metal

HAS_NUMBA = True

# numba-cuda's config has this switch (Numba's does not); numba-metal has no NRT and reads it nowhere
if not hasattr(config, "CUDA_ENABLE_NRT"):
    config.CUDA_ENABLE_NRT = False

#: the compute capability the stand-in's devices report: the H100's (numba-metal has no compute capability;
#: tests use it to decide what to run, and so every test runs and passes or fails on what numba-metal does)
COMPUTE_CAPABILITY = (9, 0)


class _Device:
    """numba-metal's device, with numba.cuda's ``compute_capability`` (``COMPUTE_CAPABILITY``)."""

    compute_capability = COMPUTE_CAPABILITY

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)


def get_current_device():
    return _Device(_metal.get_current_device())


#: the stand-in's own submodules, importable as attributes (``cuda.cudadrv.driver``...)
_SUBMODULES = ("cudadrv", "testing", "compiler", "launchconfig", "cudaimpl", "extending", "args", "cudadecl",
               "deviceufunc", "kernels", "vector_types", "libdevicefuncs", "errors")


def __getattr__(name):
    if name == "devicearray":
        return importlib.import_module(f"{__name__}.cudadrv.devicearray")
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if not name.startswith("__"):
        try:
            return getattr(_metal, name)
        except AttributeError:
            pass
    raise AttributeError(f"numba.cuda (numba_cuda_standin over numba_metal.metal) has no attribute {name!r}")
