"""``numba.cuda.kernels.reduction``: numba.cuda's ``Reduce`` (public as ``cuda.Reduce``) is numba-metal's."""

from numba_metal.metal import Reduce  # noqa: F401
