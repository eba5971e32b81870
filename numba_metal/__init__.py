"""numba-metal: Numba-style GPU kernels in Python for Apple-silicon Macs.

    from numba_metal import metal

    @metal.jit
    def add(a, b, out):
        i = metal.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]
"""

from numba_metal import metal  # noqa: F401
from numba_metal._version import __version__  # noqa: F401
from numba_metal.errors import (KernelCompilationError, KernelLaunchError, MetalRuntimeError,  # noqa: F401
                                NumbaMetalError, UnsupportedFeatureError, UnsupportedPlatformError)

