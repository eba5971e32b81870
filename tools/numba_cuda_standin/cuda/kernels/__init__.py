"""``numba.cuda.kernels``: numba-cuda's library kernels behind public names (``DeviceNDArray.transpose``,
``cuda.Reduce``); here numba-metal's counterparts."""
