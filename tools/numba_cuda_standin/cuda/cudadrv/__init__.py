"""``numba.cuda.cudadrv``: the host-array and driver names numba-cuda's tests import."""

from numba.cuda.cudadrv import devicearray, driver  # noqa: F401
